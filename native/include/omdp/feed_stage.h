/* Staged records between the offline replay's two stages (docs/analytics.md "Replay").
 *
 * The day x line decode tasks write each underlying bucket's accepted records in a compact
 * form, omdp_fh_staged_t (128 bytes: the fields of the 256-byte OPRA record that the
 * engine, the replay's tables and the reconciliation read); the day x bucket engine tasks
 * map every line's part, merge them in time order and expand them back to full records in
 * one pass. Packing takes an optional gather order, so splitting by bucket costs no extra
 * pass. Its numpy twin is ops.spark.replay_stage.STAGE_DTYPE (a layout test
 * pins the two). */
#ifndef OMDP_FEED_STAGE_H
#define OMDP_FEED_STAGE_H

#include <stdint.h>

#include "omdp/opra_msg.h"

typedef struct omdp_fh_staged {
    int64_t ts_ns;             /*   0 hdr.stamps.fh_in (= intended: the capture time) */
    uint64_t block_seq;        /*   8 */
    uint64_t msg_seq;          /*  16 */
    int64_t strike_px;         /*  24 */
    int64_t bid_px;            /*  32 */
    int64_t offer_px;          /*  40 */
    int64_t premium_px;        /*  48 */
    int64_t best_bid_px;       /*  56 */
    int64_t best_offer_px;     /*  64 */
    uint32_t flags;            /*  72 hdr.flags */
    uint32_t time;             /*  76 */
    uint32_t expiry;           /*  80 */
    uint32_t underlying_id;    /*  84 */
    uint32_t volume;           /*  88 */
    uint32_t bid_size;         /*  92 */
    uint32_t offer_size;       /*  96 */
    uint32_t best_bid_size;    /* 100 */
    uint32_t best_offer_size;  /* 104 */
    uint16_t line;             /* 108 */
    uint16_t index;            /* 110 */
    uint8_t category;          /* 112 */
    uint8_t msg_type;          /* 113 */
    uint8_t participant;       /* 114 */
    uint8_t put_call;          /* 115 */
    uint8_t bbo_ind;           /* 116 */
    uint8_t best_bid_part;     /* 117 */
    uint8_t best_offer_part;   /* 118 */
    uint8_t session;           /* 119 */
    uint8_t root_len;          /* 120 */
    char root[OMDP_OPRA_ROOT_MAX]; /* 121 */
    uint8_t reserved;          /* 127 zero */
} omdp_fh_staged_t;

/* out[i] = the staged form of in[order[i]] (order NULL: in[i]), i < n. Returns n, or -1
 * when an argument is NULL or an order entry is not below n_in (nothing written past the
 * first bad entry). */
int64_t omdp_fh_stage_pack(const omdp_opra_msg_t *in, uint64_t n_in, const uint64_t *order, uint64_t n,
                           omdp_fh_staged_t *out);

/* *m = the full record of *s, as the offline feed handler wrote it: type OMDP_RT_OPRA_MSG,
 * length 256, fh_in = intended = ts_ns, every field not staged zero. */
void omdp_fh_stage_unpack_one(const omdp_fh_staged_t *s, omdp_opra_msg_t *m);

/* ---- the engine task's merge (feed_handler_stage_merge.c) ---- */

/* Merges n_parts staged parts, each in time order (the decode stage writes them so), by
 * ts_ns, ties to the lower part (the parts come in line order), then within a part in its
 * order - the order a stable sort of the concatenated parts by ts_ns gives - and expands up
 * to max_out records into `out`. cursor[p] (n_parts entries, zero at the start) is how far
 * part p has been taken; the next call goes on from there. Returns the records written (0:
 * every part taken), -1 for a NULL argument or a cursor past its part, -2 when a part goes
 * back in time (the records before it are written and the cursors say where). */
int64_t omdp_fh_stage_merge(const omdp_fh_staged_t *const *parts, const uint64_t *lens, uint32_t n_parts,
                            uint64_t *cursor, omdp_opra_msg_t *out, uint64_t max_out);

/* ---- scans for the engine tasks (feed_handler_stage_scan.c) ---- */

/* The (line, series, exchange) key of a staged record: ops.spark.replay_score.quote_hash. */
uint64_t omdp_fh_stage_quote_hash(const omdp_fh_staged_t *s);

/* Indices of the records whose strike_px is among `strikes` and whose quote hash is among
 * `keys` (both sorted ascending), in record order; the first max_out go to `out`. Returns
 * how many there are (more than max_out: call again with room), or -1 for a NULL argument. */
int64_t omdp_fh_stage_quote_hits(const omdp_fh_staged_t *in, uint64_t n, const int64_t *strikes, uint64_t n_strikes,
                                 const uint64_t *keys, uint64_t n_keys, uint64_t *out, uint64_t max_out);

/* The largest underlying_id other than OMDP_NO_UNDERLYING; -1 when none (or in is NULL). */
int64_t omdp_fh_stage_max_underlying(const omdp_fh_staged_t *in, uint64_t n);

/* Per underlying: messages, quotes (category 'k'), first and last ts_ns, added into slot
 * underlying_id (OMDP_NO_UNDERLYING: the last slot, n_slots - 1), so one table can take
 * several parts; the caller starts the slots at 0, 0, INT64_MAX, INT64_MIN. Returns n, or -1 for a NULL argument, n_slots 0 or an id at or
 * past the last slot (the arrays then hold partial counts). */
int64_t omdp_fh_stage_underlying_counts(const omdp_fh_staged_t *in, uint64_t n, uint64_t n_slots, int64_t *messages,
                                        int64_t *quotes, int64_t *first_ns, int64_t *last_ns);

#endif /* OMDP_FEED_STAGE_H */
