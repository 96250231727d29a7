/* The replay's engine task merge (feed_stage.h): a bucket's per-line staged parts, each in
 * time order, merged by capture time and expanded to full records in one pass, in place of
 * a copy of every part into one array, a stable argsort of its ~5 M times and a gather. */
#include "omdp/feed_stage.h"

/* The part whose next record comes first: the lowest (ts_ns, part) among unfinished parts;
 * *bound_ts / *bound_p: the lowest among the others (bound_p = n_parts: none). */
static uint32_t pick(const omdp_fh_staged_t *const *parts, const uint64_t *lens, uint32_t n_parts,
                     const uint64_t *cursor, int64_t *bound_ts, uint32_t *bound_p)
{
    uint32_t best = n_parts, second = n_parts;
    int64_t best_ts = 0, second_ts = 0;
    for (uint32_t p = 0; p < n_parts; p++) {
        if (cursor[p] >= lens[p])
            continue;
        int64_t ts = parts[p][cursor[p]].ts_ns;          /* parts in increasing p: ties go to the earlier */
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

int64_t omdp_fh_stage_merge(const omdp_fh_staged_t *const *parts, const uint64_t *lens, uint32_t n_parts,
                            uint64_t *cursor, omdp_opra_msg_t *out, uint64_t max_out)
{
    if ((n_parts && (!parts || !lens || !cursor)) || (max_out && !out))
        return -1;
    for (uint32_t p = 0; p < n_parts; p++)
        if (cursor[p] > lens[p] || (lens[p] && !parts[p]))
            return -1;
    uint64_t n = 0;
    while (n < max_out) {
        int64_t bound_ts;
        uint32_t bound_p;
        uint32_t p = pick(parts, lens, n_parts, cursor, &bound_ts, &bound_p);
        if (p == n_parts)
            break;
        /* take p's run while it stays ahead of every other part's next record */
        const omdp_fh_staged_t *part = parts[p];
        uint64_t i = cursor[p];
        do {
            if (i && part[i].ts_ns < part[i - 1].ts_ns) {
                cursor[p] = i;
                return -2;
            }
            omdp_fh_stage_unpack_one(&part[i], &out[n++]);
            i++;
        } while (n < max_out && i < lens[p] &&
                 (bound_p == n_parts || part[i].ts_ns < bound_ts || (part[i].ts_ns == bound_ts && p < bound_p)));
        cursor[p] = i;
    }
    return (int64_t)n;
}
