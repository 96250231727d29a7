/* omdp stats segment: one run's live figures in POSIX shared memory.
 *
 * Why: the dashboard, `omdp` commands and tests watch a running pipeline from other
 * processes without touching its data path. Writers (the collectors, every partition)
 * publish copies of their private figures here once per batch or poll; readers take
 * consistent snapshots without ever blocking a writer (Aeron's counters file, with a
 * seqlock per block so multi-word figures are never read torn).
 *
 * Name and lifetime: POSIX shm "/omdp-<run_id>-stats" (/dev/shm/omdp-<run_id>-stats on
 * Linux), mode 0600, created with O_EXCL by the run's owner, unlinked when the owner closes
 * it; after a crash the name is found by `omdp shm clean` through the header's pid.
 * run_id: 1..63 characters of [A-Za-z0-9._-], not starting with '.'.
 *
 * Layout (version 1; all little-endian, offsets fixed by the structs below):
 *   omdp_stats_header_t          magic (written last at creation), geometry, run id, pid,
 *                                start, heartbeat, closed time
 *   omdp_stats_run_block_t       run info: rate target/achieved, topology, config, knobs JSON
 *   omdp_stats_latency_block_t   cumulative per-hop histograms since the run started
 *   omdp_stats_latency_slot_t    [OMDP_STATS_RING_SECONDS]: per-second per-hop histograms;
 *                                slot = second % ring; `second` says which second it holds
 *   omdp_stats_line_entry_t      [OMDP_STATS_MAX_LINES]: per feed line ingest counters
 *   omdp_stats_operator_entry_t  [OMDP_STATS_MAX_OPERATORS]: operator / channel counters
 *   signal_head + omdp_stats_signal_entry_t [OMDP_STATS_SIGNALS]: ring of latest signals
 *
 * Consistency protocol (every block with a `seq`): a writer takes the block by CAS of seq
 * from even s to s + 1 (so two writers of one block serialize instead of tearing), issues a
 * release fence, writes the body, then stores s + 2 with release. A reader loads seq with
 * acquire (retrying while odd), copies the body, issues an acquire fence, and keeps the copy
 * only if seq is unchanged. A waiting reader or writer spins briefly, then yields its CPU
 * (a writer preempted mid-update needs it), and gives up after OMDP_STATS_WAIT_NS with
 * OMDP_STATS_EAGAIN (writers kept changing it) or OMDP_STATS_EBUSY (seq stayed odd: a
 * writer stalled or died mid-update).
 * Table entries are claimed by CAS of `state` FREE -> CLAIMED, filled, then made LIVE with a
 * release store, so any process attached for writing can register entries.
 * Signals: a writer claims position p with fetch_add on signal_head; entry p % ring is
 * written with seq 2p + 1 then 2p + 2; a reader accepts entry p only if seq == 2p + 2 before
 * and after its copy.
 */
#ifndef OMDP_STATS_H
#define OMDP_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "omdp/histogram.h"

/* cdef: begin */
#define OMDP_STATS_MAGIC 0x5441545350444D4FULL /* "OMDPSTAT" little-endian */
#define OMDP_STATS_VERSION 2
#define OMDP_STATS_HOPS 6
#define OMDP_STATS_RING_SECONDS 64
#define OMDP_STATS_MAX_LINES 128 /* above OBI's 96 lines */
#define OMDP_STATS_MAX_OPERATORS 128
#define OMDP_STATS_OP_COUNTERS 8
#define OMDP_STATS_SIGNALS 256
#define OMDP_STATS_RUN_ID_LEN 64
#define OMDP_STATS_NAME_LEN 48
#define OMDP_STATS_KIND_LEN 16
#define OMDP_STATS_COUNTER_NAME_LEN 24
#define OMDP_STATS_SERIES_LEN 40
#define OMDP_STATS_TEXT_LEN 64
#define OMDP_STATS_PATH_LEN 256
#define OMDP_STATS_KNOBS_LEN 4096
#define OMDP_STATS_SHM_NAME_LEN 96
/* cdef: end */
#define OMDP_STATS_WAIT_NS 200000000LL /* how long a reader or writer waits on one block */

/* Entry states of the line and operator tables. */
/* cdef: begin */
#define OMDP_STATS_FREE 0
#define OMDP_STATS_CLAIMED 1
#define OMDP_STATS_LIVE 2
#define OMDP_STATS_CLOSED 3

/* Run states (omdp_stats_run_info_t.state). */
#define OMDP_RUN_UNSET 0
#define OMDP_RUN_STARTING 1
#define OMDP_RUN_RUNNING 2
#define OMDP_RUN_STOPPING 3
#define OMDP_RUN_DONE 4
#define OMDP_RUN_FAILED 5

/* Errors (negative returns); system call failures return -errno. */
#define OMDP_STATS_ENOENT (-2)    /* no such segment, line or entry */
#define OMDP_STATS_EAGAIN (-11)   /* a reader kept meeting concurrent writes */
#define OMDP_STATS_EBUSY (-16)    /* a seq stayed odd: a writer is stuck or died mid-update */
#define OMDP_STATS_EEXIST (-17)   /* segment or entry name already exists */
#define OMDP_STATS_EINVAL (-22)   /* bad argument: run id, name too long, index out of range */
#define OMDP_STATS_EROFS (-30)    /* write through a read-only attachment */
#define OMDP_STATS_EFULL (-28)    /* table full */
#define OMDP_STATS_ELAYOUT (-71)  /* magic, version, size or geometry differ from this build */

/* ---- plain snapshot types: what writers hand in and readers get back ---- */

typedef struct omdp_stats_info {
    uint64_t magic;
    uint32_t version;
    uint32_t hops;
    uint32_t ring_seconds;
    uint32_t max_lines;
    uint32_t max_operators;
    uint32_t op_counters;
    uint32_t signals;
    uint32_t hist_buckets;
    uint64_t total_size;     /* bytes of the whole segment */
    int64_t pid;             /* creator's process id */
    int64_t start_ns;        /* creation time */
    int64_t heartbeat_ns;    /* last sign of life of any writer */
    int64_t closed_ns;       /* 0 while the run is live; when the owner closed it */
    char run_id[OMDP_STATS_RUN_ID_LEN];
} omdp_stats_info_t;

typedef struct omdp_stats_run_info {
    double target_pps;       /* packets/s asked of the replayer, all lines */
    double achieved_pps;     /* packets/s it achieves */
    int64_t sample_every;    /* 1 in N messages sampled for latency */
    int64_t updated_ns;
    uint32_t state;          /* OMDP_RUN_* */
    uint32_t knobs_len;      /* bytes of knobs_json used */
    char topology[OMDP_STATS_TEXT_LEN];
    char config[OMDP_STATS_TEXT_LEN];
    char run_dir[OMDP_STATS_PATH_LEN];
    char knobs_json[OMDP_STATS_KNOBS_LEN];
} omdp_stats_run_info_t;

typedef struct omdp_line_counts {
    int64_t packets_received;   /* cumulative since the run started */
    int64_t messages_received;
    int64_t messages_missed;    /* gaps in message sequence numbers */
    int64_t packets_duplicate;  /* the losing copy of A/B arbitration */
    int64_t decode_errors;
} omdp_line_counts_t;

typedef struct omdp_stats_line {
    uint32_t line;
    uint32_t state;          /* OMDP_STATS_* */
    int64_t pid;             /* writer's process id */
    int64_t updated_ns;
    omdp_line_counts_t counts;
} omdp_stats_line_t;

typedef struct omdp_stats_operator {
    char name[OMDP_STATS_NAME_LEN];       /* unique among live entries */
    char kind[OMDP_STATS_KIND_LEN];       /* e.g. "operator", "channel", "collector" */
    char counter_names[OMDP_STATS_OP_COUNTERS][OMDP_STATS_COUNTER_NAME_LEN];
    int64_t pid;
    int64_t updated_ns;
    int32_t cpu;             /* -1 when not pinned */
    uint32_t state;          /* OMDP_STATS_* */
    uint32_t n_counters;
    uint32_t reserved;
    int64_t counters[OMDP_STATS_OP_COUNTERS];
} omdp_stats_operator_t;

typedef struct omdp_stats_signal {
    int64_t ts_ns;
    double value;
    uint16_t engine;
    uint16_t reserved[3];
    char kind[OMDP_STATS_KIND_LEN];
    char series[OMDP_STATS_SERIES_LEN];
} omdp_stats_signal_t;
/* cdef: end */

/* ---- the shared layout (C only; Python reaches it through the functions below) ---- */

typedef struct omdp_stats_header {
    _Atomic uint64_t magic;         /* OMDP_STATS_MAGIC, stored last (release) at creation */
    uint32_t version;
    uint32_t hops;                  /* the geometry this segment was built with */
    uint32_t ring_seconds;
    uint32_t max_lines;
    uint32_t max_operators;
    uint32_t op_counters;
    uint32_t signals;
    uint32_t hist_buckets;
    uint64_t total_size;
    int64_t pid;
    int64_t start_ns;
    _Atomic int64_t heartbeat_ns;
    _Atomic int64_t closed_ns;
    char run_id[OMDP_STATS_RUN_ID_LEN];
    uint8_t pad[48];
} omdp_stats_header_t;

typedef struct omdp_stats_run_block {
    _Atomic uint64_t seq;
    uint8_t pad[56];
    omdp_stats_run_info_t info;
} omdp_stats_run_block_t;

typedef struct omdp_stats_latency_block {
    _Atomic uint64_t seq;
    int64_t updated_ns;
    uint64_t missing[OMDP_STATS_HOPS]; /* samples lacking a stamp that hop needs */
    omdp_hist_t hist[OMDP_STATS_HOPS];
} omdp_stats_latency_block_t;

typedef struct omdp_stats_latency_slot {
    _Atomic uint64_t seq;
    int64_t second;                    /* epoch second this slot holds */
    int64_t updated_ns;
    uint8_t pad[40];
    omdp_hist_t hist[OMDP_STATS_HOPS];
} omdp_stats_latency_slot_t;

typedef struct omdp_stats_line_entry {
    _Atomic uint64_t seq;
    _Atomic uint32_t state;
    uint32_t reserved;
    omdp_stats_line_t body;
    uint8_t pad[56];
} omdp_stats_line_entry_t;

typedef struct omdp_stats_operator_entry {
    _Atomic uint64_t seq;
    _Atomic uint32_t state;
    uint32_t reserved;
    omdp_stats_operator_t body;
} omdp_stats_operator_entry_t;

typedef struct omdp_stats_signal_entry {
    _Atomic uint64_t seq;
    omdp_stats_signal_t body;
} omdp_stats_signal_entry_t;

typedef struct omdp_stats_segment {
    omdp_stats_header_t header;
    omdp_stats_run_block_t run;
    omdp_stats_latency_block_t latency;
    omdp_stats_latency_slot_t ring[OMDP_STATS_RING_SECONDS];
    omdp_stats_line_entry_t lines[OMDP_STATS_MAX_LINES];
    omdp_stats_operator_entry_t operators[OMDP_STATS_MAX_OPERATORS];
    _Atomic uint64_t signal_head;      /* signals ever pushed */
    uint8_t pad[56];
    omdp_stats_signal_entry_t signals[OMDP_STATS_SIGNALS];
} omdp_stats_segment_t;

/* An open segment: the mapping and how it was opened. */
/* cdef: begin */
typedef struct omdp_stats omdp_stats_t;
/* cdef: end */

/* ---- lifecycle ---- */

/* Writes "omdp-<run_id>-stats" (the /dev/shm file name) into out; 0 or OMDP_STATS_EINVAL. */
int omdp_stats_name(const char *run_id, char *out, size_t cap);
/* Create the segment of run_id (O_EXCL, 0600) and become its owner; the caller's pid is recorded. */
int omdp_stats_create(const char *run_id, int64_t now_ns, omdp_stats_t **out);
/* Open an existing segment, for writing (partitions registering counters) or read-only. */
int omdp_stats_open(const char *run_id, int writable, omdp_stats_t **out);
/* Unmap; an owner first records closed_ns = now_ns and unlinks the name. NULL is a no-op. */
void omdp_stats_close(omdp_stats_t *s, int64_t now_ns);
/* Remove the name of run_id's segment (the crash clean-up path); 0 or -errno. */
int omdp_stats_unlink(const char *run_id);
/* Total bytes of the layout this build writes. */
size_t omdp_stats_layout_size(void);
int omdp_stats_read_info(const omdp_stats_t *s, omdp_stats_info_t *out);
int omdp_stats_heartbeat(omdp_stats_t *s, int64_t now_ns);

/* ---- run info ---- */

/* Fields of omdp_stats_run_info_update's mask. */
/* cdef: begin */
#define OMDP_RUN_TARGET_PPS 0x01u
#define OMDP_RUN_ACHIEVED_PPS 0x02u
#define OMDP_RUN_SAMPLE_EVERY 0x04u
#define OMDP_RUN_STATE 0x08u
#define OMDP_RUN_TOPOLOGY 0x10u
#define OMDP_RUN_CONFIG 0x20u
#define OMDP_RUN_DIR 0x40u
#define OMDP_RUN_KNOBS 0x80u
#define OMDP_RUN_ALL 0xFFu
/* cdef: end */

/* Copy the fields of info that mask names into the run block, as one update (several
 * processes may each own some fields: the supervisor its topology, the replayer its rate);
 * updated_ns is set from info. */
int omdp_stats_run_info_update(omdp_stats_t *s, const omdp_stats_run_info_t *info, uint32_t mask);
int omdp_stats_run_info_read(const omdp_stats_t *s, omdp_stats_run_info_t *out);

/* ---- latency ---- */

/* Publish the cumulative per-hop histograms (hist[OMDP_STATS_HOPS]) and missing counts
 * (missing[OMDP_STATS_HOPS], may be NULL for zeros). */
int omdp_stats_latency_publish_total(omdp_stats_t *s, const omdp_hist_t *hist, const uint64_t *missing, int64_t now_ns);
/* Publish the histograms of one epoch second into its ring slot. */
int omdp_stats_latency_publish_second(omdp_stats_t *s, int64_t second, const omdp_hist_t *hist, int64_t now_ns);
int omdp_stats_latency_read_total(const omdp_stats_t *s, omdp_hist_t *hist, uint64_t *missing, int64_t *updated_ns);
/* hist[] = the slot of `second`; returns 1 when the slot holds that second, 0 when not (hist
 * left empty), or an error. */
int omdp_stats_latency_read_second(const omdp_stats_t *s, int64_t second, omdp_hist_t *hist);
/* hist[] = merge of the seconds (now_s - seconds, now_s], seconds in 1..OMDP_STATS_RING_SECONDS;
 * returns how many of those seconds held data, or an error. */
int omdp_stats_latency_read_window(const omdp_stats_t *s, int64_t now_ns, uint32_t seconds, omdp_hist_t *hist);
/* Per-second summaries of the last `seconds` seconds, oldest first: for second i and hop h,
 * out[(i * OMDP_STATS_HOPS + h) * (4 + nq) + ...] = second, count, sum_ns, max_ns, then the
 * nq quantiles in ns (-1 when empty). Returns the seconds written (always `seconds`). */
int omdp_stats_latency_history(const omdp_stats_t *s, int64_t now_ns, uint32_t seconds, const double *qs,
                               uint32_t nq, int64_t *out);

/* ---- ingest lines ---- */

/* The entry index of feed line `line`, claiming a new entry when the line has none. */
int omdp_stats_line_register(omdp_stats_t *s, uint32_t line);
int omdp_stats_line_publish(omdp_stats_t *s, int index, const omdp_line_counts_t *counts, int64_t now_ns);
/* Copy every LIVE or CLOSED line into out (cap entries); returns how many. */
int omdp_stats_lines_read(const omdp_stats_t *s, omdp_stats_line_t *out, uint32_t cap);

/* ---- operators and channels ---- */

/* Register an entry; counter_names is a comma-separated list of 1..OMDP_STATS_OP_COUNTERS
 * names (each shorter than OMDP_STATS_COUNTER_NAME_LEN). Returns the entry index, or
 * OMDP_STATS_EEXIST when a LIVE entry has that name, OMDP_STATS_EFULL, OMDP_STATS_EINVAL. */
int omdp_stats_op_register(omdp_stats_t *s, const char *name, const char *kind, int32_t cpu, const char *counter_names);
/* Publish n values (n <= the entry's counter count) as one consistent update. */
int omdp_stats_op_publish(omdp_stats_t *s, int index, const int64_t *values, uint32_t n, int64_t now_ns);
/* Mark the entry CLOSED (its last figures stay readable; its name may be registered again). */
int omdp_stats_op_close(omdp_stats_t *s, int index);
/* Copy every LIVE or CLOSED entry into out (cap entries); returns how many. */
int omdp_stats_ops_read(const omdp_stats_t *s, omdp_stats_operator_t *out, uint32_t cap);

/* ---- signals ---- */

int omdp_stats_signals_push(omdp_stats_t *s, const omdp_stats_signal_t *sig, uint32_t n);
/* The latest signals, newest first, at most cap; returns how many were copied. */
int omdp_stats_signals_read(const omdp_stats_t *s, omdp_stats_signal_t *out, uint32_t cap);
/* Signals pushed since the segment was created. */
int64_t omdp_stats_signals_total(const omdp_stats_t *s);

#endif /* OMDP_STATS_H */
