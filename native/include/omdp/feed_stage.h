/* Staged records between the backtest's two stages (docs/analytics.md "Backtest").
 *
 * The day x line decode tasks write each underlying bucket's accepted records in a compact
 * form, omdp_fh_staged_t (64 bytes: what the engine, the replay's tables and the
 * reconciliation read of the 256-byte OPRA record, with the series - root, expiry, strike,
 * put/call and the underlying routing gave it - as an index into the line's series table,
 * and the rare best bid/offer appendage as an index into the line's appendage table). The
 * line's two tables are built while packing (omdp_fh_stage_tables_t) and written once at
 * the end of the line. The day x bucket engine tasks map every line's part and tables,
 * merge the parts in time order and expand them back to full records in one pass. Packing
 * takes an optional gather order, so splitting by bucket costs no extra pass. Python reads
 * them as ops.spark.backtest.backtest_stage.STAGE_DTYPE, SERIES_DTYPE and EXTRA_DTYPE, built
 * from these structs (omdp.c_layout). */
#ifndef OMDP_FEED_STAGE_H
#define OMDP_FEED_STAGE_H

#include <stdint.h>

#include "omdp/opra_msg.h"

/* cdef: begin */
#define OMDP_FH_STAGE_NO_EXTRA 0xFFFFFFFFu /* staged extra: the record has no appendage */
#define OMDP_FH_STAGE_NO_ROUTE 0xFFFFFFFFu /* a series' route: entered by omdp_fh_stage_pack, not routed */

typedef struct omdp_fh_staged {
    int64_t ts_ns;             /*  0 hdr.stamps.fh_in (= intended: the capture time) */
    uint64_t msg_seq;          /*  8 */
    uint64_t block_seq;        /* 16 */
    int64_t bid_px;            /* 24 */
    int64_t offer_px;          /* 32 */
    uint32_t series;           /* 40 index into the line's series table */
    uint32_t bid_size;         /* 44 */
    uint32_t offer_size;       /* 48 */
    uint32_t time;             /* 52 */
    uint32_t extra;            /* 56 index into the line's appendage table, or OMDP_FH_STAGE_NO_EXTRA */
    uint8_t category;          /* 60 */
    uint8_t participant;       /* 61 */
    uint8_t bbo_ind;           /* 62 */
    uint8_t flags;             /* 63 hdr.flags (the OMDP_RF_* bits, all below 0x100) */
} omdp_fh_staged_t;

/* One series of a line: every field of the record that depends on the series only. */
typedef struct omdp_fh_stage_series {
    int64_t strike_px;         /*  0 */
    uint32_t expiry;           /*  8 */
    uint32_t underlying_id;    /* 12 */
    char root[OMDP_OPRA_ROOT_MAX]; /* 16 */
    uint8_t root_len;          /* 22 */
    uint8_t put_call;          /* 23 */
} omdp_fh_stage_series_t;

/* A record's best bid / best offer appendage (any of the six fields non-zero). */
typedef struct omdp_fh_stage_extra {
    int64_t best_bid_px;       /*  0 */
    int64_t best_offer_px;     /*  8 */
    uint32_t best_bid_size;    /* 16 */
    uint32_t best_offer_size;  /* 20 */
    uint8_t best_bid_part;     /* 24 */
    uint8_t best_offer_part;   /* 25 */
    uint8_t reserved[6];       /* 26 zero */
} omdp_fh_stage_extra_t;

/* ---- the decode task's packing (feed_handler_stage.c, feed_handler_stage_tables.c) ---- */

/* A line's series table (a hash of the series seen so far) and appendage table. */
typedef struct omdp_fh_stage_tables omdp_fh_stage_tables_t;
/* cdef: end */

omdp_fh_stage_tables_t *omdp_fh_stage_tables_new(void); /* NULL: out of memory */
void omdp_fh_stage_tables_free(omdp_fh_stage_tables_t *t);
/* The tables so far (valid until the next pack or free); *n: entries. */
const omdp_fh_stage_series_t *omdp_fh_stage_tables_series(const omdp_fh_stage_tables_t *t, uint64_t *n);
const omdp_fh_stage_extra_t *omdp_fh_stage_tables_extras(const omdp_fh_stage_tables_t *t, uint64_t *n);
/* Per series (the series table's order, valid as it is): its route word as the offline feed
 * handler staged it, the engine (bucket) in the low 24 bits, or OMDP_FH_STAGE_NO_ROUTE for
 * a series entered by omdp_fh_stage_pack. The replay sizes each bucket's engine from it. */
const uint32_t *omdp_fh_stage_tables_routes(const omdp_fh_stage_tables_t *t, uint64_t *n);

/* out[i] = the staged form of in[order[i]] (order NULL: in[i]), i < n, its series and
 * appendage added to `t`. Returns n; -1 when an argument is NULL, an order entry is not
 * below n_in or a record's flags do not fit in a byte; -3 when the tables cannot grow (out
 * of memory). Nothing is written past the first bad entry. */
int64_t omdp_fh_stage_pack(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *in, uint64_t n_in,
                           const uint64_t *order, uint64_t n, omdp_fh_staged_t *out);

/* ---- the engine task's side ---- */

/* One line's part of a bucket, with the line's tables (all mapped read-only). */
/* cdef: begin */
typedef struct omdp_fh_stage_part {
    const omdp_fh_staged_t *recs;
    uint64_t n;
    const omdp_fh_stage_series_t *series;
    uint64_t n_series;
    const omdp_fh_stage_extra_t *extras;
    uint64_t n_extras;
    uint32_t line;
} omdp_fh_stage_part_t;
/* cdef: end */

/* *m = the full record of p->recs[i], as the offline feed handler wrote it: type
 * OMDP_RT_OPRA_MSG, length 256, fh_in = intended = ts_ns, line = p->line, every field not
 * staged zero. Returns 0, or -1 (nothing written) when i, its series or its appendage
 * index is out of range. */
int omdp_fh_stage_unpack_one(const omdp_fh_stage_part_t *p, uint64_t i, omdp_opra_msg_t *m);

/* ---- the merge (feed_handler_stage_merge.c) ---- */

/* Merges n_parts staged parts, each in time order (the decode stage writes them so), by
 * ts_ns, ties to the lower part (the parts come in line order), then within a part in its
 * order - the order a stable sort of the concatenated parts by ts_ns gives - and expands up
 * to max_out records into `out`. cursor[p] (n_parts entries, zero at the start) is how far
 * part p has been taken; the next call goes on from there. Returns the records written (0:
 * every part taken), -1 for a NULL argument or a cursor past its part, -2 when a part goes
 * back in time, -3 when a record's series or appendage index is out of its line's table
 * (for -2 and -3 the records before it are written and the cursors say where). */
int64_t omdp_fh_stage_merge(const omdp_fh_stage_part_t *parts, uint32_t n_parts, uint64_t *cursor,
                            omdp_opra_msg_t *out, uint64_t max_out);

/* Per-underlying counts (omdp_fh_stage_underlying_counts' table): messages, quotes
 * (category 'k'), first and last ts_ns in slot underlying_id, OMDP_NO_UNDERLYING in the
 * last slot (n_slots - 1); the caller starts the slots at 0, 0, INT64_MAX, INT64_MIN. */
/* cdef: begin */
typedef struct omdp_fh_stage_counts {
    uint64_t n_slots;
    int64_t *messages;
    int64_t *quotes;
    int64_t *first_ns;
    int64_t *last_ns;
} omdp_fh_stage_counts_t;
/* cdef: end */

/* omdp_fh_stage_merge, each record written also counted into `counts` (NULL: not counted),
 * so a bucket's per-underlying table costs no second pass over its records. Returns as the
 * merge does, and -4 when a record's underlying id is at or past the last slot (the records
 * before it written and counted, the cursors at it); -1 also for counts with n_slots 0 or a
 * NULL array. */
int64_t omdp_fh_stage_merge_counted(const omdp_fh_stage_part_t *parts, uint32_t n_parts, uint64_t *cursor,
                                    omdp_opra_msg_t *out, uint64_t max_out, const omdp_fh_stage_counts_t *counts);

/* ---- scans for the engine tasks (feed_handler_stage_scan.c) ---- */

/* The (line, series, exchange) key of a quote: ops.spark.backtest.backtest_score.quote_hash. */
uint64_t omdp_fh_stage_quote_hash(uint32_t line, const omdp_fh_stage_series_t *s, uint8_t participant);

/* Indices of the part's records whose strike_px is among `strikes` and whose quote hash is
 * among `keys` (both sorted ascending), in record order; the first max_out go to `out`.
 * Returns how many there are (more than max_out: call again with room), -1 for a NULL
 * argument, -3 for a series index out of the line's table. */
int64_t omdp_fh_stage_quote_hits(const omdp_fh_stage_part_t *p, const int64_t *strikes, uint64_t n_strikes,
                                 const uint64_t *keys, uint64_t n_keys, uint64_t *out, uint64_t max_out);

/* The largest underlying_id other than OMDP_NO_UNDERLYING in the part's series table; -1
 * when none (or p is NULL). */
int64_t omdp_fh_stage_max_underlying(const omdp_fh_stage_part_t *p);

/* Per underlying: messages, quotes (category 'k'), first and last ts_ns, added into slot
 * underlying_id (OMDP_NO_UNDERLYING: the last slot, n_slots - 1), so one table can take
 * several parts; the caller starts the slots at 0, 0, INT64_MAX, INT64_MIN. Returns n, -1
 * for a NULL argument, n_slots 0 or an id at or past the last slot, -3 for a series index
 * out of the line's table (the arrays then hold partial counts). */
int64_t omdp_fh_stage_underlying_counts(const omdp_fh_stage_part_t *p, uint64_t n_slots, int64_t *messages,
                                        int64_t *quotes, int64_t *first_ns, int64_t *last_ns);

#endif /* OMDP_FEED_STAGE_H */
