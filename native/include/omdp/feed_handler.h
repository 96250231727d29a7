/* omdp feed handler: OPRA lines in, routed OPRA message records out (docs/architecture.md "feedhandlers").
 *
 * One operator instance serves one or more OPRA lines. It is a source (operator.h): the
 * partition loop polls it, and each poll takes what arrived and pushes it downstream.
 *
 * Input (one of):
 *   multicast  the A and B UDP sockets of every line (opened and joined by Python, which
 *              owns them); an epoll set tells which are readable, recvmmsg takes up to
 *              `batch_packets` datagrams from each in one call.
 *   ring       a Vega ring (vega.h) the handler created as receiver and the replayer writes
 *              as sender: one message = one omdp_replay_frame_t (line, copy, intended time)
 *              and the packet's bytes (replay.h). A ring whose sender closed and that is
 *              drained ends the source.
 *
 * Per packet, in C:
 *   1. arbitration (omdp_fh_arb_*): A/B copies of a line are merged by message sequence,
 *      first copy wins. A packet whose block sequence shows it holds only messages already
 *      seen is dropped before decoding (once the line has shown that its block sequences
 *      are the first message's sequence, and only for packets of two or more messages: a
 *      lone message may be a sequence reset that lies behind). Every message then passes
 *      the per-message check: behind the expected sequence = duplicate (skipped, counted),
 *      ahead = a gap (the skipped sequence numbers counted as missed), and a control
 *      message 'H' type 'K' (reset block sequence) restarts the line's sequence at its own
 *      sequence + 1. Resets are counted per copy, so the later copy of a reset (and that
 *      copy's packets from before it) is recognized as a duplicate.
 *   2. decode with the OPRA FAST codec (opra_fast.h); a bad packet is counted as a decode
 *      error and skipped (its messages show up as a gap unless the other copy has them).
 *   3. stamps: `intended` from the frame (ring) or the replayer's intended-time table
 *      (multicast, same host; 0 when not found), `fh_in` the packet's arrival at the handler
 *      (the time recvmmsg returned it, or the ring handed it over: every message of a
 *      packet shares it, as in the paper) and
 *      `fh_out` just before each batch leaves.
 *   4. routing: the root of each message gives its underlying (routes table: root ->
 *      underlying id, engine), written into the record; messages without a root (control,
 *      administrative, index values) go to `default_engine`, roots missing from the table
 *      to a hash of the root (counted). The messages of a packet bound for one engine leave
 *      as one batch on output port `engine` (ports 0 .. n_engines-1), packet order kept.
 *      Batching across packets (`coalesce_packets` > 1): the packets one poll finds
 *      already waiting (up to `batch_packets` per receive call) are decoded and routed
 *      together, and each engine gets one batch of all of them, in arrival order, at the
 *      end of the poll or once `coalesce_packets` packets are held (or
 *      OMDP_FH_COALESCE_MSGS messages), whichever comes first. The handler never waits
 *      for a batch to fill: a packet that arrives alone leaves alone. Counters
 *      coalesce_* give the batch sizes seen (packets and messages per flush).
 *      Variable parts stay in the handler's side buffer: var_off and var_len are 0
 *      downstream. The last message of a packet carries OMDP_RF_LAST_IN_PACKET.
 *
 * Re-sharding (reshard.h), when `reshard` is given: between two polls the handler takes the
 * moves requested since the last look (one atomic load per poll while there are none),
 * and for each emits a marker on the old engine's port, then on the new one's, and routes
 * the bucket (underlying_id % buckets) to the new engine from then on. The routing table
 * must then be by bucket (every root of a bucket on the bucket's home engine).
 *
 * Counters: operator counters (totals, see feed_handler_op.c) and, when `stats` is given,
 * per line counters published to the run's stats segment (stats.h) every
 * `stats_interval_ns` and at the end.
 *
 * Threads: one thread (the partition loop) runs everything here.
 */
#ifndef OMDP_FEED_HANDLER_H
#define OMDP_FEED_HANDLER_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/operator.h"
#include "omdp/opra_msg.h"
#include "omdp/reshard.h"
#include "omdp/stats.h"
#include "omdp/vega.h"

/* cdef: begin */
#define OMDP_FH_MAX_ENGINES 64   /* output ports of the operator */
#define OMDP_FH_MAX_LINE 99      /* OPRA lines 1..99 */
#define OMDP_FH_MAX_BATCH 64     /* packets per receive call */
/* cdef: end */
#define OMDP_FH_COALESCE_MSGS 2048 /* messages held before a batch across packets leaves */
/* cdef: begin */
#define OMDP_FH_COPIES 2         /* copy 0 = A, 1 = B */
#define OMDP_FH_TABLE_NAME 128   /* bytes of an intended table's shm name, NUL included */
#define OMDP_FH_ROOT_KEY 8       /* root bytes in a route entry (6 used, NUL padded) */

/* The feed's wire format (omdp_fh_params_t.format, omdp_fh_offline_set_format): which
 * decoder and which arbitration. */
#define OMDP_FH_FORMAT_FAST 0    /* OPRA FAST V2 (opra_fast.h), arbitration by omdp_fh_arb_* */
#define OMDP_FH_FORMAT_OBI 1     /* OPRA binary v6 (opra_obi.h), arbitration by omdp_fh_obi_arb_* */

#define OMDP_FH_INPUT_RING 0
#define OMDP_FH_INPUT_MULTICAST 1

/* How the multicast input receives (omdp_fh_params_t.receive): */
#define OMDP_FH_RECEIVE_SOCKETS 0     /* epoll + recvmmsg over each line's (joined) UDP socket */
#define OMDP_FH_RECEIVE_PACKET_RING 1 /* one AF_PACKET socket's mapped RX ring (TPACKET_V2) for all lines,
                                         a classic BPF filter on the lines' UDP ports, frames taken by
                                         polling their status words (no syscall per datagram); the
                                         lines' UDP sockets only hold the IGMP joins (a drop-all
                                         filter discards their own copies). Needs CAP_NET_RAW. */
#define OMDP_FH_RECEIVE_XDP 2         /* one AF_XDP socket on an interface queue for all lines (docs/xdp.md):
                                         an XDP program redirects the lines' UDP ports to it, frames taken
                                         from its RX ring in UMEM; built only with libxdp and libbpf */
#define OMDP_FH_XDP_IFNAME 16         /* bytes of omdp_fh_params_t.xdp_ifname (IF_NAMESIZE) */
/* cdef: end */

/* ---- arbitration and gaps (one line) ------------------------------------------------ */

/* omdp_fh_arb_message() results */
/* cdef: begin */
#define OMDP_FH_ACCEPT 0     /* new message: process it */
#define OMDP_FH_DUPLICATE 1  /* already seen (the other copy won, or a stale copy): skip */
#define OMDP_FH_RESET 2      /* a sequence reset, honoured: process it (a control message) */

/* Block sequences of a line: unknown until a decoded packet shows, then either tracking
 * the first message's sequence (the pre-decode duplicate check is allowed) or not. */
#define OMDP_FH_BLOCKS_UNKNOWN 0
#define OMDP_FH_BLOCKS_TRACK 1
#define OMDP_FH_BLOCKS_OTHER 2

typedef struct omdp_fh_arb {
    uint64_t next;                        /* next message sequence expected */
    uint32_t started;                     /* 0 until the first message */
    uint32_t epoch;                       /* sequence resets honoured */
    uint32_t copy_epoch[OMDP_FH_COPIES];  /* sequence resets seen on each copy */
    uint32_t blocks;                      /* OMDP_FH_BLOCKS_* */
    uint32_t reserved;
    uint64_t accepted;                    /* messages accepted (resets included) */
    uint64_t duplicates;                  /* messages skipped as already seen */
    uint64_t missed;                      /* sequence numbers skipped over (gaps) */
    uint64_t resets;                      /* resets honoured */
    uint64_t lap_end;                     /* set before a reset: the intended end of the lap it
                                             closes (the replayer's, 0: unknown); a tail short
                                             of it is counted in missed */
} omdp_fh_arb_t;
/* cdef: end */

void omdp_fh_arb_init(omdp_fh_arb_t *a);
/* 1 when a packet of `count` messages with block sequence `block_seq` on `copy` holds only
 * messages already seen, so it need not be decoded; 0 when it must be decoded. */
int omdp_fh_arb_packet_is_duplicate(const omdp_fh_arb_t *a, uint32_t copy, uint64_t block_seq, uint32_t count);
/* After decoding a packet: learn whether the line's block sequence is its first message's. */
void omdp_fh_arb_observe_block(omdp_fh_arb_t *a, uint64_t block_seq, uint64_t first_msg_seq);
/* One decoded message on `copy` (0 or 1; others are treated as 1): OMDP_FH_ACCEPT,
 * OMDP_FH_DUPLICATE or OMDP_FH_RESET. `is_reset`: the message is 'H' type 'K'. */
int omdp_fh_arb_message(omdp_fh_arb_t *a, uint32_t copy, uint64_t msg_seq, int is_reset);

/* ---- OBI v6: arbitration and gaps of one line (spec opra-binary.md 9.2) --------------
 *
 * The spec's recommended receiver, per line on message sequence numbers (MSNs): each MSN
 * delivered once, from whichever stream brings it first; a data block whose MSNs are all
 * behind `next` is the other stream's copy and dropped; control blocks (category 'H',
 * always alone) are deduplicated on their content (type, block_seq, time) because H C and
 * H K move `next` backwards; H N (line integrity) carries the last MSN sent and reports the
 * loss of [next, s]. A gap opened on one stream is only a loss once the other stream has
 * passed it too: until then it is pending, and the other stream's messages inside it are
 * still delivered (after later ones). A pending gap is declared lost (counted in `missed`)
 * when the other stream moves past it, when the spec's short timeout passes without it
 * (`gap_timeout_ns` after it opened, on the clock the caller hands omdp_fh_obi_arb_expire
 * before each block: the packets' arrival stamps; counted in `timed_out` too), when
 * OMDP_FH_OBI_GAPS newer gaps are pending, when H C or H K restarts the line, or at the end
 * of the stream (omdp_fh_obi_arb_finish). A copy of a timed-out gap's messages that comes
 * later is a duplicate, as the spec has it: a declared loss is for retransmission to fill.
 * Retransmitted ('V') blocks are not arbitrated here (the spec: a receiver ignores those it
 * did not request). */

/* cdef: begin */
#define OMDP_FH_OBI_CTL_KEYS 8   /* control blocks remembered per line for the content check */
#define OMDP_FH_OBI_GAPS 8       /* pending gaps per line; a ninth declares the oldest lost */
#define OMDP_FH_OBI_RANGES 4     /* ranges one data block may deliver (gaps filled, then the new part) */
#define OMDP_FH_INTEGRITY 3      /* omdp_fh_obi_arb_control(): H N, nothing to deliver */
#define OMDP_FH_OBI_GAP_TIMEOUT_NS 10000000LL /* default: a pending gap waits 10 ms for the other stream */

typedef struct omdp_fh_obi_ctl_key {
    uint32_t block_seq, ts_sec, ts_nsec;
    uint8_t type, seen, pad[2]; /* seen: the streams that brought it (bit per copy), 0: free */
} omdp_fh_obi_ctl_key_t; /* 16 bytes */

typedef struct omdp_fh_obi_gap {
    uint64_t lo, hi;                      /* MSNs [lo, hi) */
    uint32_t copy;                        /* the stream that jumped over them */
    uint32_t reserved;
    int64_t opened_ns;                    /* the arbitration's clock when it opened (now_ns) */
} omdp_fh_obi_gap_t;

typedef struct omdp_fh_obi_arb {
    uint64_t next;                        /* next MSN expected (valid when known) */
    uint32_t known;                       /* 0 until the first block sets `next` */
    uint32_t n_gaps;                      /* pending gaps in gaps[], oldest (lowest) first */
    uint32_t ctl_next;                    /* next slot of ctl[] to overwrite */
    uint32_t reserved;
    omdp_fh_obi_gap_t gaps[OMDP_FH_OBI_GAPS];
    omdp_fh_obi_ctl_key_t ctl[OMDP_FH_OBI_CTL_KEYS];
    uint64_t accepted;                    /* messages delivered (control messages included) */
    uint64_t duplicates;                  /* messages dropped as the other stream's copies */
    uint64_t missed;                      /* MSNs declared lost (on both streams) */
    uint64_t resets;                      /* H C and H K honoured */
    uint64_t filled;                      /* messages of a pending gap delivered from the other stream */
    int64_t gap_timeout_ns;               /* a pending gap is lost this long after it opened; <= 0: no
                                             timeout (init: OMDP_FH_OBI_GAP_TIMEOUT_NS) */
    int64_t now_ns;                       /* the clock, as the last omdp_fh_obi_arb_expire gave it */
    uint64_t timed_out;                   /* MSNs declared lost by the timeout (also in missed) */
} omdp_fh_obi_arb_t;
/* cdef: end */

void omdp_fh_obi_arb_init(omdp_fh_obi_arb_t *a);
/* A control block (type = the 'H' message's type) on `copy`: OMDP_FH_DUPLICATE (the other
 * stream's copy: drop), OMDP_FH_RESET (H C or H K: deliver), OMDP_FH_INTEGRITY (H N:
 * nothing to deliver) or OMDP_FH_ACCEPT (E F J L M P and others: deliver). */
int omdp_fh_obi_arb_control(omdp_fh_obi_arb_t *a, uint32_t copy, uint8_t type, uint64_t block_seq, uint32_t ts_sec,
                            uint32_t ts_nsec);
/* A data block of `count` messages from MSN `block_seq` on `copy`: the messages to deliver,
 * as up to OMDP_FH_OBI_RANGES ranges of message indices [range[2k], range[2k+1]) in the
 * block, in MSN order (pending gaps filled, then what is new). Returns the number of ranges
 * (0: drop the block). */
uint32_t omdp_fh_obi_arb_data(omdp_fh_obi_arb_t *a, uint32_t copy, uint64_t block_seq, uint32_t count,
                              uint32_t range[2 * OMDP_FH_OBI_RANGES]);
/* A decoded block of n records with its header's sequence and time: a control block ('H'
 * alone) through omdp_fh_obi_arb_control, *result its answer, and one range [0, 1) unless
 * it is a duplicate or H N; else a data block through omdp_fh_obi_arb_data, *result
 * OMDP_FH_ACCEPT. Returns the ranges to deliver. */
uint32_t omdp_fh_obi_arb_block(omdp_fh_obi_arb_t *a, uint32_t copy, const omdp_opra_msg_t *recs, uint32_t n,
                               uint64_t block_seq, uint32_t ts_sec, uint32_t ts_nsec,
                               uint32_t range[2 * OMDP_FH_OBI_RANGES], int *result);
/* End of stream: a gap still pending is lost. */
void omdp_fh_obi_arb_finish(omdp_fh_obi_arb_t *a);
/* The clock is now `now_ns` (a packet's arrival; never moved back): every pending gap opened
 * gap_timeout_ns or longer before it is declared lost. Called before each block. */
void omdp_fh_obi_arb_expire(omdp_fh_obi_arb_t *a, int64_t now_ns);
/* 1 when the block (len bytes) is a data block whose messages all lie behind `next`, none
 * in a pending gap: the other stream's copy, to drop unread (its checksum unchecked). A
 * control block is never one (it is checked on its content), nor a short datagram. */
int omdp_fh_obi_arb_is_behind(const omdp_fh_obi_arb_t *a, const uint8_t *blk, size_t len);

/* ---- routing by root ---------------------------------------------------------------- */

/* One route: an option root (NUL padded) -> its underlying and the engine that owns it. */
/* cdef: begin */
typedef struct omdp_fh_route {
    char root[OMDP_FH_ROOT_KEY];
    uint32_t underlying_id;
    uint16_t engine;
    uint16_t reserved;
} omdp_fh_route_t; /* 16 bytes */

typedef struct omdp_fh_routes omdp_fh_routes_t;
/* cdef: end */

/* Build the lookup table. NULL with `err` set when an entry is bad (empty root, root longer
 * than OMDP_OPRA_ROOT_MAX, engine >= n_engines, a root given twice) or memory is short. */
omdp_fh_routes_t *omdp_fh_routes_new(const omdp_fh_route_t *routes, uint32_t n, uint32_t n_engines, char *err,
                                     size_t errlen);
void omdp_fh_routes_free(omdp_fh_routes_t *t);
/* Route a root of `root_len` bytes (root as in the record; trailing spaces and NULs are
 * padding). 1: found (*underlying_id and
 * *engine set); 0: unknown root (*underlying_id = OMDP_NO_UNDERLYING, *engine = a hash of
 * the root modulo n_engines, so one engine still sees all of it); -1: no root. */
int omdp_fh_routes_lookup(const omdp_fh_routes_t *t, const char *root, uint32_t root_len, uint32_t *underlying_id,
                          uint32_t *engine);
/* The same by key: the root's bytes with the padding taken off, in a uint64_t's low bytes
 * (0: no root); the feed handler's per-message path computes it from the record without a
 * loop (omdp_fh_record_root_key, feed_handler_internal.h). */
int omdp_fh_routes_lookup_key(const omdp_fh_routes_t *t, uint64_t key, uint32_t *underlying_id, uint32_t *engine);

/* ---- the operator -------------------------------------------------------------------- */

/* cdef: begin */
typedef struct omdp_fh_line_params {
    uint32_t line;                        /* 1..OMDP_FH_MAX_LINE */
    int32_t fd[OMDP_FH_COPIES];           /* multicast: non-blocking sockets of A and B, -1 = none */
    char intended[OMDP_FH_TABLE_NAME];    /* shm name of the replayer's intended table, "" = none */
} omdp_fh_line_params_t;

typedef struct omdp_fh_params {
    uint32_t input;                       /* OMDP_FH_INPUT_* */
    uint32_t n_lines;
    const omdp_fh_line_params_t *lines;   /* copied at init */
    const omdp_fh_route_t *routes;        /* copied at init */
    uint32_t n_routes;
    uint32_t n_engines;                   /* 1..OMDP_FH_MAX_ENGINES */
    uint32_t default_engine;              /* < n_engines */
    uint32_t batch_packets;               /* 1..OMDP_FH_MAX_BATCH */
    omdp_vega_receiver_t *ring;           /* ring input: borrowed, outlives the operator */
    omdp_stats_t *stats;                  /* borrowed; NULL: no live counters */
    int64_t stats_interval_ns;            /* > 0 */
    uint32_t coalesce_packets;            /* 1..OMDP_FH_MAX_BATCH packets per output batch; 0 or 1: off */
    uint32_t receive;                     /* multicast: OMDP_FH_RECEIVE_* */
    omdp_reshard_seg_t *reshard;          /* borrowed; NULL: the routes never change. This handler is
                                             feed handler `replica` of the segment's n_fh */
    uint32_t rx_iface_addr;               /* packet ring: IPv4 address of the interface (network order) */
    uint32_t rx_ring_bytes;               /* packet ring: bytes of the RX ring (a multiple of 4 MiB) */
    uint32_t format;                      /* OMDP_FH_FORMAT_*: the capture's (its manifest's feed_format) */
    char xdp_ifname[OMDP_FH_XDP_IFNAME];  /* xdp: the interface, NUL-terminated */
    uint32_t xdp_queue;                   /* xdp: its receive queue */
    uint32_t reserved;
    int64_t obi_gap_timeout_ns;           /* OBI: omdp_fh_obi_arb_t.gap_timeout_ns of every line; 0: the
                                             default OMDP_FH_OBI_GAP_TIMEOUT_NS; < 0: no timeout */
} omdp_fh_params_t;
/* cdef: end */

#ifdef OMDP_HAVE_XDP
#define OMDP_FH_XDP_BUILT 1 /* this build has the AF_XDP receive and sender (docs/xdp.md) */
#endif

/* kind "feed_handler": 0 inputs, OMDP_FH_MAX_ENGINES outputs. */
const omdp_operator_vtable_t *omdp_feed_handler_vtable(void);

#endif /* OMDP_FEED_HANDLER_H */
