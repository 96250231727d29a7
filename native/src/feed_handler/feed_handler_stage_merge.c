/* The replay's engine task merge (feed_stage.h): a bucket's per-line staged parts, each in
 * time order, merged by capture time and expanded to full records in one pass, in place of
 * a copy of every part into one array, a stable argsort of its ~5 M times and a gather. */
#include <stddef.h>

#include "omdp/feed_stage.h"

#define MERGE_AHEAD 8 /* staged records (64 bytes each) requested ahead of the one merged */

/* The part whose next record comes first: the lowest (ts_ns, part) among unfinished parts;
 * *bound_ts / *bound_p: the lowest among the others (bound_p = n_parts: none). */
static uint32_t pick(const omdp_fh_stage_part_t *parts, uint32_t n_parts, const uint64_t *cursor, int64_t *bound_ts,
                     uint32_t *bound_p)
{
    uint32_t best = n_parts, second = n_parts;
    int64_t best_ts = 0, second_ts = 0;
    for (uint32_t p = 0; p < n_parts; p++) {
        if (cursor[p] >= parts[p].n)
            continue;
        int64_t ts = parts[p].recs[cursor[p]].ts_ns;     /* parts in increasing p: ties go to the earlier */
        if (best == n_parts || ts < best_ts) {
            second = best;
            second_ts = best_ts;
            best = p;
            best_ts = ts;
        } else if (second == n_parts || ts < second_ts) {
            second = p;
            second_ts = ts;
        }
    }
    *bound_ts = second_ts;
    *bound_p = second;
    return best;
}

/* The record just written at *m counted into c; -4 when its underlying has no slot. */
static inline int count(const omdp_fh_stage_counts_t *c, const omdp_opra_msg_t *m)
{
    uint32_t u = m->underlying_id;
    uint64_t s = u == OMDP_NO_UNDERLYING ? c->n_slots - 1 : u;
    if (s >= c->n_slots - 1 && u != OMDP_NO_UNDERLYING)
        return -4;
    int64_t ts = m->hdr.stamps.fh_in;
    c->messages[s]++;
    c->quotes[s] += m->category == 'k';
    if (ts < c->first_ns[s])
        c->first_ns[s] = ts;
    if (ts > c->last_ns[s])
        c->last_ns[s] = ts;
    return 0;
}

int64_t omdp_fh_stage_merge(const omdp_fh_stage_part_t *parts, uint32_t n_parts, uint64_t *cursor,
                            omdp_opra_msg_t *out, uint64_t max_out)
{
    return omdp_fh_stage_merge_counted(parts, n_parts, cursor, out, max_out, NULL);
}

int64_t omdp_fh_stage_merge_counted(const omdp_fh_stage_part_t *parts, uint32_t n_parts, uint64_t *cursor,
                                    omdp_opra_msg_t *out, uint64_t max_out, const omdp_fh_stage_counts_t *counts)
{
    if ((n_parts && (!parts || !cursor)) || (max_out && !out))
        return -1;
    if (counts && (!counts->n_slots || !counts->messages || !counts->quotes || !counts->first_ns || !counts->last_ns))
        return -1;
    for (uint32_t p = 0; p < n_parts; p++)
        if (cursor[p] > parts[p].n || (parts[p].n && !parts[p].recs) || (parts[p].n_series && !parts[p].series) ||
            (parts[p].n_extras && !parts[p].extras))
            return -1;
    uint64_t n = 0;
    while (n < max_out) {
        int64_t bound_ts;
        uint32_t bound_p;
        uint32_t p = pick(parts, n_parts, cursor, &bound_ts, &bound_p);
        if (p == n_parts)
            break;
        /* take p's run while it stays ahead of every other part's next record */
        const omdp_fh_stage_part_t *part = &parts[p];
        uint64_t i = cursor[p];
        do {
            /* the part's records a few lines ahead: with 24 parts taken in turns of a packet,
             * the hardware's stream prefetch does not keep up (half the merge's time waited
             * on this load) */
            if (i + MERGE_AHEAD < part->n)
                __builtin_prefetch(&part->recs[i + MERGE_AHEAD], 0, 3);
            if (i && part->recs[i].ts_ns < part->recs[i - 1].ts_ns) {
                cursor[p] = i;
                return -2;
            }
            if (omdp_fh_stage_unpack_one(part, i, &out[n])) {
                cursor[p] = i;
                return -3;
            }
            if (counts && count(counts, &out[n])) {
                cursor[p] = i;
                return -4;
            }
            n++;
            i++;
        } while (n < max_out && i < part->n &&
                 (bound_p == n_parts || part->recs[i].ts_ns < bound_ts ||
                  (part->recs[i].ts_ns == bound_ts && p < bound_p)));
        cursor[p] = i;
    }
    return (int64_t)n;
}
