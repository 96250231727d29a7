/* omdp replay: recorded OPRA packets back onto the wire, paced against an absolute schedule.
 *
 * The contract between the replay service (ops/replay, Python control plane), its sender
 * processes (this C loop) and the consumers on the same host that read what the replayer
 * published (feed handlers, latency collectors, the dashboard).
 *
 * Schedule. A sender holds one lap of packets merged in time order (omdp_replay_pkt_t, built
 * with numpy). Packet k of lap L is due at
 *     intended = anchor_ns + (L * lap_span + off[k] - anchor_off) * scale
 * where the time map (anchor_ns, anchor_off, scale) lives in the shared control block and is
 * only ever replaced as a whole (a rate change re-anchors it at the moment of the change).
 * Every intended time is computed from the map, never from the previous send, so the loop
 * cannot drift however long it runs. The loop sleeps while the next deadline is far, spins
 * the last `spin_ns`, and when it is behind sends every due packet in one sendmmsg batch.
 *
 * Shared memory (all segments 0600, names carry the run id, the service unlinks them on exit
 * and reaps those of dead creators at start-up):
 *   /omdp-replay-<run_id>-ctl       control block, sender status blocks, line counters and
 *                                    one sent log per sender (layout: omdp_replay_ctl_*()).
 *   /omdp-replay-<run_id>-intended  the intended-time table below, for same-host consumers.
 *
 * Intended-time table. A header (omdp_replay_intended_header_t) followed by `max_line` arrays
 * of `capacity` entries (a power of two), the array of OPRA line L (1-based) first at index
 * L - 1. The entry of block sequence s is entries[L - 1][s & (capacity - 1)]; its `tag` is
 * s + 1 once written (0: never written), so a consumer detects an entry overwritten by a
 * later packet (tag != s + 1). Writers follow a seqlock: tag = 0, release fence, intended,
 * tag = s + 1 with release; readers use omdp_replay_intended_lookup(), which re-checks the
 * tag after reading. The table keeps the last `capacity` block sequences of each line (block
 * sequences advance by the messages of a packet, about 14), ample for a consumer looking a
 * packet up when it arrives. With --loop the block sequences restart every lap and a lap's
 * entries replace the previous lap's.
 * After the entries, one omdp_replay_line_end_t per line 0..max_line: the intended end of
 * the line (the sequence after the last data message the replayer handled, sent or dropped
 * on purpose), so a consumer counts a tail it never received as missed: lap_end (the
 * largest, the end of a whole lap) at a sequence reset, last_end when the stream ends.
 *
 * Ring frames. Into a Vega ring (target ring:NAME) every message is one packet: an
 * omdp_replay_frame_t (line, copy, intended and sent times) followed by the packet's bytes.
 *
 * Shared fields are plain integers so that cffi and numpy can map the same structs; every
 * access that another process may race with is a C11 atomic (<stdatomic.h>) on an _Atomic
 * view of the field (OMDP_REPLAY_ATOMIC), with an explicit memory order.
 */
#ifndef OMDP_REPLAY_H
#define OMDP_REPLAY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The _Atomic view of a plain shared field, for atomic_load_explicit & co.: same size,
 * alignment and representation (every field so used is a naturally aligned integer or
 * double, lock-free), so the struct's layout stays what cffi and numpy see. */
#define OMDP_REPLAY_ATOMIC(p) ((_Atomic __typeof__(*(p)) *)(p))

/* cdef: begin */
#define OMDP_REPLAY_MAX_LINE 99        /* OPRA lines 1..99 */
#define OMDP_REPLAY_COPIES 2           /* copy 0 = A, copy 1 = B */
#define OMDP_REPLAY_BATCH_MAX 64       /* datagrams per sendmmsg */
#define OMDP_REPLAY_ERROR_LEN 256
#define OMDP_REPLAY_RUN_ID_LEN 48

/* Pacing error histogram: log-linear, 32 sub-buckets per power of two (each <= 3.2% wide).
 * Values below 32 ns have a bucket each; from 2^41 - 2^35 ns (about 36 minutes) on, all share
 * the last bucket. */
#define OMDP_REPLAY_HIST_SUB_BITS 5
#define OMDP_REPLAY_HIST_BUCKETS 1184

#define OMDP_REPLAY_CTL_MAGIC 0x6c7463796c706572ULL      /* "replyctl" */
#define OMDP_REPLAY_INTENDED_MAGIC 0x646e74696c706572ULL /* "repltind" */
#define OMDP_REPLAY_VERSION 1

/* omdp_replay_pkt_t.flags */
#define OMDP_REPLAY_PKT_CONTROL 0x1u   /* a sequence-reset control packet: never dropped */
#define OMDP_REPLAY_PKT_ONLY_A 0x2u    /* the capture's B copy lacks this block: sent on A only */
#define OMDP_REPLAY_PKT_ONLY_B 0x4u    /* the capture's A copy lacks it (src holds the B copy's
                                          bytes): sent on B only */

/* omdp_replay_control_t.command */
#define OMDP_REPLAY_CMD_RUN 0
#define OMDP_REPLAY_CMD_STOP 1

/* omdp_replay_sender_status_t.state */
#define OMDP_REPLAY_SENDER_LOADING 0
#define OMDP_REPLAY_SENDER_READY 1     /* schedule and sink ready, waiting for start_ns */
#define OMDP_REPLAY_SENDER_RUNNING 2
#define OMDP_REPLAY_SENDER_DONE 3      /* finished the schedule, reached end_ns, or stopped */
#define OMDP_REPLAY_SENDER_FAILED 4    /* see error */

/* omdp_replay_run() results */
#define OMDP_REPLAY_DONE 0             /* the whole schedule was sent (no --loop) */
#define OMDP_REPLAY_STOPPED 1          /* the service asked to stop */
#define OMDP_REPLAY_ENDED 2            /* end_ns reached */
#define OMDP_REPLAY_EINVAL (-1)        /* bad arguments; status->error says which */
#define OMDP_REPLAY_ESINK (-2)         /* the sink failed for good; status->error says why */
#define OMDP_REPLAY_ORPHANED (-3)      /* the service died: a sender never runs on alone */

/* Sink kinds */
#define OMDP_REPLAY_SINK_UDP 1
#define OMDP_REPLAY_SINK_RING 2

/* One packet of a sender's lap (numpy twin: ops.replay.native_layout.PKT_DTYPE). A capture
 * whose B copy is replayed from its own files pairs each block of A with B's block of the same
 * sequence: one entry per block, B's bytes in b_* (they may differ: a bad checksum on one
 * copy), and a block that one copy lacks flagged OMDP_REPLAY_PKT_ONLY_A / _ONLY_B. */
typedef struct omdp_replay_pkt {
    int64_t off;            /* schedule offset inside the lap, in schedule units */
    uint64_t src_off;       /* first byte of the packet in its source buffer */
    uint32_t line_index;    /* position among its line's packets (drop decisions) */
    uint16_t src;           /* index in the source table */
    uint16_t len;           /* packet bytes */
    uint16_t line;          /* OPRA line, 1..OMDP_REPLAY_MAX_LINE */
    uint16_t flags;         /* OMDP_REPLAY_PKT_* */
    uint32_t reserved;
    uint64_t b_off;         /* the B copy's own bytes: first byte in source b_src ... */
    uint16_t b_src;
    uint16_t b_len;         /* ... and their length; 0: copy B sends src's bytes */
    uint32_t reserved2;
} omdp_replay_pkt_t;        /* 48 bytes */

/* A buffer holding packets (a mapped pcap file, or the control packets). */
typedef struct omdp_replay_source {
    const uint8_t *base;
    uint64_t size;
} omdp_replay_source_t;

/* Written by the service, read by every sender. The time map is guarded by map_seq (odd while
 * it is being replaced). */
typedef struct omdp_replay_control {
    uint64_t magic;
    uint32_t version;
    uint32_t n_senders;
    uint32_t command;       /* OMDP_REPLAY_CMD_* */
    uint32_t reserved;
    int64_t start_ns;       /* 0 until the service sets the common start */
    int64_t end_ns;         /* nothing is sent at or after it; INT64_MAX: no limit */
    uint64_t map_seq;
    int64_t anchor_ns;
    int64_t anchor_off;
    double scale;           /* nanoseconds per schedule unit */
    int64_t creator_pid;
    uint64_t creator_start_time; /* /proc/<pid>/stat starttime + 1 (omdp_vega_pid_start_time); 0: not recorded */
    uint8_t pad[40];
} omdp_replay_control_t;    /* 128 bytes */

/* One per sender process, written by it only. */
typedef struct omdp_replay_sender_status {
    int64_t pid;
    uint32_t state;             /* OMDP_REPLAY_SENDER_* */
    int32_t cpu;                /* pinned CPU, -1 when not pinned */
    uint64_t lap;               /* current lap, from 0 */
    uint64_t position;          /* index in the lap of the next packet */
    uint64_t packets_done;      /* scheduled packets handled (sent or dropped on purpose) */
    uint64_t control_done;      /* control packets handled */
    int64_t next_intended_ns;   /* intended time of the next packet (lag = now - this) */
    int64_t last_sent_ns;       /* hand-off time of the last batch */
    int64_t last_intended_ns;   /* intended time of the last packet of that batch */
    int64_t heartbeat_ns;
    uint64_t batches;           /* sendmmsg calls or ring bursts */
    uint64_t behind_batches;    /* batches of more than one packet: the loop was behind */
    uint64_t source_errors;     /* packets skipped: out of their source, or malformed header */
    uint64_t pacing_count;
    int64_t pacing_max_ns;
    uint64_t pacing_sum_ns;
    uint64_t log_overruns;      /* sent-log entries lost because the service did not drain */
    int64_t cpu_ns;             /* CPU time of the loop so far (thread CPU clock, every 10 ms) */
    uint64_t preemptions;       /* involuntary context switches of the loop so far: another task
                                   took this sender's CPU (the cause of millisecond pacing errors) */
    int32_t policy;             /* the loop's scheduling policy: SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2 */
    int32_t rt_priority;        /* its real-time priority; 0 when it is not real-time */
    uint32_t rt_requested;      /* omdp_replay_realtime_enter() was called (--realtime) */
    uint32_t memory_locked;     /* mlockall(MCL_CURRENT | MCL_FUTURE) took effect */
    int32_t rt_errno;           /* why SCHED_FIFO was refused (EPERM: no CAP_SYS_NICE and RLIMIT_RTPRIO 0); 0: not refused */
    int32_t mlock_errno;        /* why mlockall was refused (EPERM, ENOMEM: RLIMIT_MEMLOCK); 0: not refused */
    uint64_t rests;             /* sleeps the real-time rest budget forced on the loop (see below) */
    int64_t rest_ns;            /* time spent in them */
    uint64_t sink_waits;        /* waits for room in a full ring: its consumer fell behind */
    int64_t sink_wait_ns;       /* time spent in them (back-pressure, seen as pacing error) */
    int64_t sink_wait_rest_ns;  /* of that time, slept between a real-time loop's wait slices: rest the
                                   budget counts (see "real time" below) */
    uint8_t pad[40];
    char error[OMDP_REPLAY_ERROR_LEN];
    uint64_t pacing_hist[OMDP_REPLAY_HIST_BUCKETS];  /* sent - intended, first copy sent */
} omdp_replay_sender_status_t;

/* Counters of one line, written by the one sender that owns the line. 128 bytes. */
typedef struct omdp_replay_line_stats {
    uint64_t packets[OMDP_REPLAY_COPIES];
    uint64_t messages[OMDP_REPLAY_COPIES];
    uint64_t bytes[OMDP_REPLAY_COPIES];
    uint64_t dropped[OMDP_REPLAY_COPIES];      /* dropped on purpose (--drop) */
    uint64_t send_errors[OMDP_REPLAY_COPIES];  /* the kernel or the ring refused it */
    uint64_t control_packets;
    /* What the line was meant to carry (the accounting's "sent" side, control packets aside):
     * data messages handled (sent on some copy or dropped on purpose), the sequence after the
     * last one (block_seq + messages of the last data packet handled: a receiver whose next
     * expected sequence is below it missed the tail), and the data packets / messages
     * deliberately sent on no copy (--drop hit every copy). */
    uint64_t intended_messages;
    uint64_t intended_end_seq;
    uint64_t lost_packets;
    uint64_t lost_messages;
    uint8_t pad[8];
} omdp_replay_line_stats_t;

/* One packet as sent (numpy twin: ops.replay.native_layout.SENT_DTYPE). 40 bytes. */
typedef struct omdp_replay_sent {
    int64_t intended_ns;
    int64_t sent_ns[OMDP_REPLAY_COPIES];   /* 0: that copy was not sent */
    uint64_t block_seq;
    uint16_t line;
    uint16_t messages;
    uint32_t reserved;
} omdp_replay_sent_t;

/* Single-producer single-consumer log of sent packets, from a sender to the service (which
 * writes intended.parquet). head and tail each own a 128-byte span. A full log counts an
 * overrun and drops the entry: the sender never waits for the service. */
typedef struct omdp_replay_log {
    uint64_t capacity;          /* entries, a power of two */
    uint8_t pad0[120];
    uint64_t head;              /* next entry the sender writes (release) */
    uint8_t pad1[120];
    uint64_t tail;              /* next entry the service reads (release) */
    uint8_t pad2[120];
    /* omdp_replay_sent_t entries[capacity] follow */
} omdp_replay_log_t;

/* Intended-time table (see the top of this file). */
typedef struct omdp_replay_intended_header {
    uint64_t magic;
    uint32_t version;
    uint32_t max_line;
    uint64_t capacity;
    int64_t creator_pid;
    char run_id[OMDP_REPLAY_RUN_ID_LEN];
    uint64_t creator_start_time; /* as in the control block; 0: not recorded (older segment) */
    uint8_t pad[40];
} omdp_replay_intended_header_t;   /* 128 bytes */

typedef struct omdp_replay_intended_entry {
    uint64_t tag;               /* block_seq + 1; 0 while never written or being rewritten */
    int64_t intended_ns;
} omdp_replay_intended_entry_t;

/* A packet in a Vega ring: this header, then `length` bytes of the OPRA packet. */
typedef struct omdp_replay_frame {
    int64_t intended_ns;
    int64_t sent_ns;
    uint16_t line;
    uint8_t copy;               /* 0 = A, 1 = B */
    uint8_t flags;              /* OMDP_REPLAY_PKT_CONTROL for a sequence reset */
    uint16_t length;
    uint16_t reserved;
} omdp_replay_frame_t;          /* 24 bytes */

/* UDP multicast sink: one socket, a destination per line and copy. With a packet socket
 * (omdp_replay_udp_use_packet_socket) the datagrams are built here (Ethernet, IPv4, UDP
 * headers) and handed to the interface's driver past the qdisc, skipping the UDP and IP
 * send path (socket lookup, route, IP id, qdisc); the UDP socket then only names the
 * source port. */
typedef struct omdp_replay_udp_sink {
    int fd;
    uint32_t n_dest;
    uint32_t dest_ip[OMDP_REPLAY_MAX_LINE + 1][OMDP_REPLAY_COPIES];    /* network order; 0: none */
    uint16_t dest_port[OMDP_REPLAY_MAX_LINE + 1][OMDP_REPLAY_COPIES];  /* host order */
    int pkt_fd;               /* packet socket, -1: plain UDP sendmmsg */
    uint32_t pkt_src_ip;      /* network order */
    uint16_t pkt_src_port;    /* network order */
    uint16_t pkt_ip_id;
    uint8_t pkt_ttl;
    uint8_t pkt_src_mac[6];
    uint8_t pkt_reserved;
    uint8_t *pkt_buf;         /* OMDP_REPLAY_BATCH_MAX frames of OMDP_REPLAY_PKT_FRAME bytes */
    uint8_t *pkt_ring;        /* the packet socket's mapped TX ring (TPACKET_V2), NULL: sendmmsg */
    uint64_t pkt_ring_bytes;
    uint32_t pkt_ring_frames; /* of OMDP_REPLAY_TX_FRAME bytes */
    uint32_t pkt_ring_next;   /* the next frame to fill */
    void *xdp;                /* AF_XDP sender (replay_xdp.c, docs/xdp.md), NULL: none */
} omdp_replay_udp_sink_t;
/* cdef: end */

#define OMDP_REPLAY_PKT_FRAME 1536 /* Ethernet + IPv4 + UDP headers (42 bytes) + an OPRA packet */
#define OMDP_REPLAY_TX_FRAME 2048  /* a TX ring frame: its 32-byte header + OMDP_REPLAY_PKT_FRAME */
#define OMDP_REPLAY_TX_FRAMES 4096 /* frames of the TX ring (8 MiB) */

/* Ring sink: frames go into a Vega ring (vega.h) the replay attached to as its sender. A full
 * ring waits (on_full=block: back-pressure, seen as pacing error) or counts a send error
 * (on_full=drop); a receiver that is gone ends the run. */
/* cdef: begin */
typedef struct omdp_replay_ring_sink {
    void *tx;                   /* omdp_vega_sender_t * */
    const uint32_t *command;    /* the control block's command: a stop ends a wait for room */
    int64_t service_pid;        /* as in omdp_replay_run_args_t: a dead service ends it too */
    uint32_t realtime;          /* set by omdp_replay_run: a real-time loop waits for room in short
                                   slices with sleeps between them, never in one long spin */
    uint32_t reserved;
    uint64_t full_waits;        /* written by the sink: waits for room, and their time */
    int64_t full_wait_ns;
    int64_t full_wait_rest_ns;  /* ... and of that time, slept between a real-time loop's slices */
} omdp_replay_ring_sink_t;

/* Everything one call of omdp_replay_run() needs. */
typedef struct omdp_replay_run_args {
    omdp_replay_control_t *control;
    omdp_replay_sender_status_t *status;
    omdp_replay_line_stats_t *lines;              /* indexed by line number, 0..MAX_LINE */
    omdp_replay_log_t *log;                       /* NULL: no sent log */
    omdp_replay_intended_header_t *intended;      /* NULL: no intended table */
    const omdp_replay_pkt_t *pkts;
    uint64_t n_pkts;
    const omdp_replay_source_t *sources;
    uint32_t n_sources;
    uint32_t copies_mask;       /* bit 0: send A, bit 1: send B */
    int64_t lap_span;           /* schedule units from one lap's start to the next */
    uint32_t loop;              /* 0: one lap */
    uint32_t sink_kind;         /* OMDP_REPLAY_SINK_* */
    void *sink;
    uint64_t drop_threshold[OMDP_REPLAY_COPIES];  /* drop when the hash < this; 0: never */
    uint64_t drop_seed;
    int64_t spin_ns;            /* spin (rather than sleep) this close to a deadline */
    int64_t service_pid;        /* stop when this process is no longer our parent; 0: never */
} omdp_replay_run_args_t;
/* cdef: end */

/* ---- the pacing loop ---------------------------------------------------------------- */

/* Waits for the common start, then sends the schedule (every lap of it with `loop`) until it
 * is done, end_ns passes or the service says stop. Returns an OMDP_REPLAY_* result. Every
 * packet is checked against its source's bounds and its OPRA header; a bad one is counted in
 * status->source_errors and skipped. */
int omdp_replay_run(const omdp_replay_run_args_t *args);

/* ---- real time ----------------------------------------------------------------------
 *
 * With --realtime a sender locks its memory (mlockall: no page fault in the loop) and runs
 * SCHED_FIFO at OMDP_REPLAY_RT_PRIORITY: above every ordinary task, so nothing but interrupts
 * and the kernel's own real-time threads (threaded interrupt handlers at 50, per-CPU
 * housekeeping at 99) takes its CPU. Where that is not allowed (EPERM: neither CAP_SYS_NICE
 * nor an RLIMIT_RTPRIO; ENOMEM: RLIMIT_MEMLOCK too small) it says why in its status and runs
 * on as an ordinary task. An RLIMIT_RTPRIO below the priority is used as the priority.
 *
 * The kernel throttles real-time tasks that use more than sched_rt_runtime_us of every
 * sched_rt_period_us (950 ms of 1 s by default) and then stops them for the rest of the
 * period: 50 ms without a send. A real-time loop (whatever made it one: --realtime or chrt)
 * therefore keeps a rest budget: it must sleep at least 1/OMDP_REPLAY_RT_REST_DIV of the time
 * it is awake (at most 8/9 of a CPU), may bank OMDP_REPLAY_RT_CREDIT_NS of sleep ahead, sleeps
 * in every gap longer than OMDP_REPLAY_RT_OWING_SPIN_NS while it owes rest, and sleeps at once
 * (a forced rest, counted in rests/rest_ns) when it owes more than OMDP_REPLAY_RT_FORCE_NS. A
 * wait for room in a full ring sleeps between its slices, and those sleeps count as rest
 * (sink_wait_rest_ns): the consumer's backlog is not followed by a forced rest just when the
 * ring has room again and the schedule is behind. So
 * it never runs longer than (CREDIT + FORCE) * DIV = 16.4 ms without sleeping, and a forced
 * rest is short (what is owed, plus the wake-up): on a schedule without gaps to sleep in (one
 * evenly spaced tighter than the spin window, a flat-out run), about 1/9 of the time goes
 * to rests of some 50-100 us each, and the packets due in them are that late. */
/* cdef: begin */
#define OMDP_REPLAY_RT_PRIORITY 40
#define OMDP_REPLAY_RT_REST_DIV 8
#define OMDP_REPLAY_RT_CREDIT_NS 2000000LL
#define OMDP_REPLAY_RT_FORCE_NS 50000LL
#define OMDP_REPLAY_RT_OWING_SPIN_NS 50000LL
/* cdef: end */

/* Locks the process's memory and makes the calling thread SCHED_FIFO at `priority` (1-99),
 * recording in `status` what took effect and why anything was refused. Returns 1 when the
 * thread is real-time now, 0 when it runs on as an ordinary task. */
int omdp_replay_realtime_enter(omdp_replay_sender_status_t *status, int priority);

/* ---- sinks ---------------------------------------------------------------------------- */

/* Opens the multicast socket: interface address (dotted quad), TTL, IP_MULTICAST_LOOP on.
 * Returns 0, or -errno with `err` (errlen bytes) saying which call failed. */
int omdp_replay_udp_open(omdp_replay_udp_sink_t *sink, const char *iface, int ttl, char *err, size_t errlen);
/* Destination of `line`'s copy: group (dotted quad) and port. 0 or -EINVAL. */
int omdp_replay_udp_set_dest(omdp_replay_udp_sink_t *sink, uint32_t line, uint32_t copy, const char *group, uint32_t port);
void omdp_replay_udp_close(omdp_replay_udp_sink_t *sink);
/* Send through a packet socket on the interface whose address is `iface` (needs
 * CAP_NET_RAW): 0, or a negative errno with the reason in err (the sink stays on UDP). On a
 * loopback interface the source address is 192.0.2.1 (TEST-NET-1): the kernel drops a
 * received datagram from a loopback or local source as a martian. */
int omdp_replay_udp_use_packet_socket(omdp_replay_udp_sink_t *sink, const char *iface, char *err, size_t errlen);
/* The same packet socket with a mapped TX ring (PACKET_TX_RING, TPACKET_V2; replay_packet_ring.c):
 * each batch's frames are written straight into the ring and handed to the kernel by one
 * send() with no message headers, no per-datagram copy from a user buffer. 0, or a negative
 * errno with the reason in err (the sink is then closed to the packet socket: stays on UDP). */
int omdp_replay_udp_use_packet_ring(omdp_replay_udp_sink_t *sink, const char *iface, char *err, size_t errlen);
#ifdef OMDP_HAVE_XDP
/* Send through an AF_XDP socket's TX ring on interface `ifname` queue `queue` (replay_xdp.c,
 * docs/xdp.md): headers built once per line and copy, zero copy where the driver allows, copy
 * mode otherwise. Call after the destinations are set; the TTL must be >= 1. Only in a build
 * with libxdp and libbpf. 0, or a negative errno with err saying why. */
int omdp_replay_udp_use_xdp(omdp_replay_udp_sink_t *sink, const char *iface, const char *ifname, uint32_t queue,
                            char *err, size_t errlen);
/* 1: the sink's XDP socket is bound zero copy, 0: copy mode, -1: it has none. */
int omdp_replay_udp_xdp_zerocopy(const omdp_replay_udp_sink_t *sink);
#endif

/* ---- shared memory -------------------------------------------------------------------- */

/* Creates (exclusively, mode 0600) and maps a segment of `size` bytes, zero-filled. NULL on
 * failure with `err` set. */
void *omdp_replay_shm_create(const char *name, uint64_t size, char *err, size_t errlen);
/* Maps an existing segment; its size is returned in *size. */
void *omdp_replay_shm_open(const char *name, uint64_t *size, int writable, char *err, size_t errlen);
void omdp_replay_shm_unmap(void *base, uint64_t size);
int omdp_replay_shm_unlink(const char *name);

/* Layout of the ctl segment for n senders and logs of log_capacity entries each. */
uint64_t omdp_replay_ctl_size(uint32_t n_senders, uint64_t log_capacity);
uint64_t omdp_replay_ctl_sender_offset(uint32_t i);
uint64_t omdp_replay_ctl_lines_offset(uint32_t n_senders);
uint64_t omdp_replay_ctl_log_offset(uint32_t n_senders, uint64_t log_capacity, uint32_t i);
/* Writes the control block's header, time map and the empty logs of a fresh ctl segment. */
void omdp_replay_ctl_init(void *base, uint32_t n_senders, uint64_t log_capacity, int64_t creator_pid);

/* Replaces the time map (seqlock writer; one writer: the service). */
void omdp_replay_control_set_map(omdp_replay_control_t *c, int64_t anchor_ns, int64_t anchor_off, double scale);
/* Reads a consistent time map. */
void omdp_replay_control_get_map(const omdp_replay_control_t *c, int64_t *anchor_ns, int64_t *anchor_off, double *scale);
void omdp_replay_control_start(omdp_replay_control_t *c, int64_t start_ns, int64_t end_ns);
void omdp_replay_control_stop(omdp_replay_control_t *c);

/* Marks a sender failed with `msg` (the message is visible before the state). */
void omdp_replay_status_fail(omdp_replay_sender_status_t *status, const char *msg);

/* Copies up to `max` entries of a sender's log into `out` and frees them. Returns the count. */
uint64_t omdp_replay_log_drain(omdp_replay_log_t *log, omdp_replay_sent_t *out, uint64_t max);

/* Intended table: bytes for max_line lines of `capacity` entries, and its header. */
uint64_t omdp_replay_intended_size(uint32_t max_line, uint64_t capacity);
void omdp_replay_intended_init(omdp_replay_intended_header_t *t, uint32_t max_line, uint64_t capacity,
                               int64_t creator_pid, const char *run_id);
/* Looks up n (line, block_seq) pairs; out[i] = intended ns, or 0 where the table no longer
 * (or never) held that packet. Returns how many were found. Bounds-checked. */
uint64_t omdp_replay_intended_lookup_many(const omdp_replay_intended_header_t *t, const uint16_t *lines,
                                          const uint64_t *block_seqs, int64_t *out, uint64_t n);

/* ---- header-only helpers, for consumers written in C ------------------------------- */

static inline omdp_replay_intended_entry_t *omdp_replay_intended_entries(const omdp_replay_intended_header_t *t)
{
    return (omdp_replay_intended_entry_t *)((uint8_t *)t + sizeof(omdp_replay_intended_header_t));
}

/* The entry of (line, block_seq); line in 1..max_line (callers check). */
static inline omdp_replay_intended_entry_t *omdp_replay_intended_entry(const omdp_replay_intended_header_t *t,
                                                                      uint32_t line, uint64_t block_seq)
{
    return &omdp_replay_intended_entries(t)[(uint64_t)(line - 1) * t->capacity + (block_seq & (t->capacity - 1))];
}

typedef struct omdp_replay_line_end {
    uint64_t lap_end;   /* largest intended end so far (with --loop: the end of a lap) */
    uint64_t last_end;  /* intended end of the last data packet handled */
} omdp_replay_line_end_t;

static inline omdp_replay_line_end_t *omdp_replay_intended_ends(const omdp_replay_intended_header_t *t)
{
    return (omdp_replay_line_end_t *)(omdp_replay_intended_entries(t) + (uint64_t)t->max_line * t->capacity);
}

/* The line's intended end after a data packet ending at `end`; one writer per line. */
static inline void omdp_replay_intended_publish_end(omdp_replay_intended_header_t *t, uint32_t line, uint64_t end)
{
    if (line == 0 || line > t->max_line)
        return;
    omdp_replay_line_end_t *e = &omdp_replay_intended_ends(t)[line];
    if (end > atomic_load_explicit(OMDP_REPLAY_ATOMIC(&e->lap_end), memory_order_relaxed))
        atomic_store_explicit(OMDP_REPLAY_ATOMIC(&e->lap_end), end, memory_order_release);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&e->last_end), end, memory_order_release);
}

/* Seqlock writer of one entry; one writer per line. */
static inline void omdp_replay_intended_publish(omdp_replay_intended_header_t *t, uint32_t line,
                                                uint64_t block_seq, int64_t intended_ns)
{
    if (line == 0 || line > t->max_line)
        return;
    omdp_replay_intended_entry_t *e = omdp_replay_intended_entry(t, line, block_seq);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&e->tag), 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&e->intended_ns), intended_ns, memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&e->tag), block_seq + 1, memory_order_release);
}

/* Seqlock reader: 1 and *out set when the table holds (line, block_seq), else 0. */
static inline int omdp_replay_intended_lookup(const omdp_replay_intended_header_t *t, uint32_t line,
                                              uint64_t block_seq, int64_t *out)
{
    if (line == 0 || line > t->max_line)
        return 0;
    const omdp_replay_intended_entry_t *e = omdp_replay_intended_entry(t, line, block_seq);
    uint64_t tag = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&e->tag), memory_order_acquire);
    if (tag != block_seq + 1)
        return 0;
    int64_t v = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&e->intended_ns), memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(OMDP_REPLAY_ATOMIC(&e->tag), memory_order_relaxed) != tag)
        return 0;
    *out = v;
    return 1;
}

/* splitmix64 finalizer: the mixing step of the drop decision. */
static inline uint64_t omdp_replay_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The drop decision of --drop: packet `index` (its position among its line's packets) of
 * `line` in `lap`, on `copy`, is dropped when this hash is below floor(p * 2^64). The same
 * seed gives the same drops whatever the split of lines among senders. */
static inline uint64_t omdp_replay_drop_hash(uint64_t seed, uint32_t line, uint32_t copy, uint64_t lap, uint64_t index)
{
    uint64_t h = omdp_replay_mix64(seed);
    h = omdp_replay_mix64(h ^ line);
    h = omdp_replay_mix64(h ^ copy);
    h = omdp_replay_mix64(h ^ lap);
    return omdp_replay_mix64(h ^ index);
}

/* Bucket of a pacing error in ns (negative values count as 0). */
static inline uint32_t omdp_replay_hist_index(int64_t v)
{
    if (v < (1 << OMDP_REPLAY_HIST_SUB_BITS))
        return v < 0 ? 0 : (uint32_t)v;
    uint32_t e = 63u - (uint32_t)__builtin_clzll((uint64_t)v);           /* floor(log2 v) >= 5 */
    uint32_t m = (uint32_t)((uint64_t)v >> (e - OMDP_REPLAY_HIST_SUB_BITS)) & ((1u << OMDP_REPLAY_HIST_SUB_BITS) - 1);
    uint32_t idx = (1u << OMDP_REPLAY_HIST_SUB_BITS) + ((e - OMDP_REPLAY_HIST_SUB_BITS) << OMDP_REPLAY_HIST_SUB_BITS) + m;
    return idx < OMDP_REPLAY_HIST_BUCKETS ? idx : OMDP_REPLAY_HIST_BUCKETS - 1;
}

#endif /* OMDP_REPLAY_H */
