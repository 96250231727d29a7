/* Market-wide statistics without re-partitioning (docs/market_stats.md).
 *
 * Every feed-handler partition keeps its own partial state (Slash's shared state): per
 * tumbling window of event time (the message's OPRA time, HHMMSSmmm; 1 s by default) an
 * open-addressing hash table of aggregates keyed by underlying, by series and by exchange.
 * When a window closes the partition sends, to the leader owning each key, its delta for
 * that key, then a MARK to every leader: its watermark (every window up to this one is
 * sent) and how many deltas it sent that leader for the window. A leader merges deltas
 * (sums and max: order does not matter) and emits a window only when every source's
 * watermark has passed it, or - when a source is gone - marked incomplete with the missing
 * sources named. In route mode (the re-partitioning baseline) the same operator keeps no
 * table: every message's three updates travel to the leaders as deltas of one.
 *
 * All records are omdp_market_rec_t (128 bytes). Memory is bounded: a full table drops the
 * update and counts it (overflow), carried to the window's END record.
 */
#ifndef OMDP_MARKET_STATS_H
#define OMDP_MARKET_STATS_H

#include <stdint.h>

#include "omdp/operator.h"
#include "omdp/record.h"

/* cdef: begin */
#define OMDP_RT_MARKET 8           /* a market statistics record (market_stats.h) */
#define OMDP_MARKET_REC_SIZE 128
#define OMDP_MKT_MAX_LEADERS 8     /* output ports d0 .. d7 of market_stats */
#define OMDP_MKT_MAX_SOURCES 64    /* partitions a leader merges (a bitmap names the missing) */
#define OMDP_MKT_MAX_INPUTS 64     /* market_stats's optional inputs in0 .. in63 (the handler's de<k>) */

/* omdp_market_rec_t.kind */
#define OMDP_MKT_AGG 1   /* one key's aggregate for a window (a delta, or a merged total) */
#define OMDP_MKT_MARK 2  /* a source passed `window`: `key` deltas of it were sent to this leader */
#define OMDP_MKT_DONE 3  /* a source ended cleanly: every window it saw is marked */
#define OMDP_MKT_END 4   /* a leader's window is complete (dim 0) or incomplete (dim 1) */

/* omdp_market_rec_t.dim for AGG */
#define OMDP_MKT_DIM_UNDERLYING 0
#define OMDP_MKT_DIM_SERIES 1
#define OMDP_MKT_DIM_EXCHANGE 2
#define OMDP_MKT_DIMS 3

/* market_stats modes */
#define OMDP_MKT_MODE_SHARED 0 /* partial state, deltas at window ends */
#define OMDP_MKT_MODE_ROUTE 1  /* the baseline: every update routed to its leader */

typedef struct omdp_market_rec {
    omdp_record_header_t hdr; /*   0 type OMDP_RT_MARKET, length 128 */
    uint64_t window;          /*  56 window index: [window * window_ms, +window_ms) ms of the day */
    uint64_t key;             /*  64 AGG: the key; MARK: deltas sent this leader; END: missing sources */
    uint32_t source;          /*  72 the sending partition (AGG, MARK, DONE) or the leader (END) */
    uint16_t kind;            /*  76 OMDP_MKT_* */
    uint16_t dim;             /*  78 AGG: OMDP_MKT_DIM_*; END: 1 when incomplete */
    uint64_t quotes;          /*  80 AGG: quotes; MARK, END: messages counted in the window */
    uint64_t trades;          /*  88 AGG: trades; MARK, END: updates lost to a full table */
    uint64_t contracts;       /*  96 AGG: contracts traded; MARK, END: late messages (before the window) */
    int64_t notional;         /* 104 AGG: premium x contracts x multiplier, 1e-4 currency units */
    uint64_t nbbo;            /* 112 AGG: quotes whose best bid/offer appendage says the NBBO changed */
    uint64_t max_trade;       /* 120 AGG: largest trade (contracts) */
} omdp_market_rec_t;

typedef struct omdp_market_stats_params {
    uint32_t window_ms;  /* tumbling window length (ms of event time), >= 1 */
    uint32_t capacity;   /* series slots per open window, a power of two >= 64 (3/4 may fill; 40 bytes each) */
    uint32_t leaders;    /* 1 .. OMDP_MKT_MAX_LEADERS: output port d<l> goes to leader l */
    uint32_t lateness;   /* windows kept open behind the newest (0 .. 3): a message older is late */
    uint32_t mode;       /* OMDP_MKT_MODE_* */
    uint32_t source;     /* this partition's number at the leaders (< OMDP_MKT_MAX_SOURCES) */
    uint32_t multiplier; /* contract multiplier for notional (100) */
    uint32_t out_records;/* records per emitted batch (size it to the channel's max_message) */
} omdp_market_stats_params_t;

typedef struct omdp_market_merge_params {
    uint32_t sources;     /* partitions whose deltas arrive, 1 .. OMDP_MKT_MAX_SOURCES */
    uint32_t capacity;    /* table slots per pending window, a power of two >= 64 */
    uint32_t pending;     /* windows held waiting for watermarks (2 .. 64); more forces the oldest out incomplete */
    uint32_t leader;      /* this leader's number */
    uint32_t out_records; /* records per emitted batch */
    uint32_t reserved;
} omdp_market_merge_params_t;

/* Where the core functions hand records: the operators pass omdp_emit, tests a callback. */
typedef int (*omdp_market_out_fn)(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes);

/* What omdp_market_bench_run measured (thread CPU time, ns). */
typedef struct omdp_market_bench_result {
    uint64_t partition_ns; /* market_stats over every partition's records, leaders' time excluded */
    uint64_t leader_ns;    /* market_merge over every delta batch */
    uint64_t messages;     /* records fed */
    uint64_t delta_batches;
    uint64_t window_records; /* AGG and END records the leaders emitted */
    uint64_t ends;           /* END records */
} omdp_market_bench_result_t;

/* One END a leader emitted in omdp_market_bench_run: how long after its window's end. */
typedef struct omdp_market_emit {
    uint64_t window;
    int64_t wall_ns;  /* from the start of the partition batch whose message closed it, to the END */
    int64_t cpu_ns;   /* the thread's CPU time over the same span (the work, without the waits) */
    int64_t event_ms; /* event time of that batch's last message - the window's end */
} omdp_market_emit_t;
/* cdef: end */

/* Hash of one key in one dimension (splitmix64's finalizer; the leader is it mod leaders). */
static inline uint64_t omdp_market_mix(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ULL;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return z;
}

static inline uint64_t omdp_market_key_hash(uint32_t dim, uint64_t key)
{
    return omdp_market_mix(key + (uint64_t)(dim + 1) * 0x9e3779b97f4a7c15ULL);
}

/* The core of both operators, callable without a partition (tests, benchmarks). */
int omdp_market_stats_feed(void *state, const uint8_t *records, uint32_t nbytes, omdp_market_out_fn out, void *ctx);
int omdp_market_stats_finish(void *state, omdp_market_out_fn out, void *ctx);
int omdp_market_merge_feed(void *state, const uint8_t *records, uint32_t nbytes, omdp_market_out_fn out, void *ctx);
int omdp_market_merge_finish(void *state, omdp_market_out_fn out, void *ctx);
/* Sources (a bitmap) whose partitions died, everything they sent merged: they hold no window
 * back any more; each window they had not passed is emitted incomplete, naming them, once
 * the other sources pass it. The second form is the partition loop's peer-gone hook. */
int omdp_market_merge_gone(void *state, uint64_t sources, omdp_market_out_fn out, void *ctx);
int omdp_market_merge_peer_gone(void *state, uint64_t sources, const omdp_emitter_t *em);
const omdp_operator_vtable_t *omdp_market_stats_vtable(void);
const omdp_operator_vtable_t *omdp_market_merge_vtable(void);

/* The benchmark's loop (ops/market/bench.py): partition k's records (parts[k], sizes[k]
 * bytes) fed in batches of `batch` records, round robin over the partitions, each delta
 * batch handed straight to its leader's merge; then every partition finishes and every
 * leader. No transport: it measures the operators' own CPU. The first `emits_cap` ENDs
 * emitted while records were fed go to `emits` (window_ms: the operators' window). */
int omdp_market_bench_run(void *const *stats, uint32_t n_parts, void *const *merges, uint32_t n_leaders,
                          const uint8_t *const *parts, const uint64_t *sizes, uint32_t batch, uint32_t window_ms,
                          omdp_market_emit_t *emits, uint32_t emits_cap, uint32_t *n_emits,
                          omdp_market_bench_result_t *out);

#endif /* OMDP_MARKET_STATS_H */
