/* One-pass scans of a bucket's staged records for the replay's engine tasks (feed_stage.h):
 * the ground-truth quotes they hold and the per-underlying counters, each record's series
 * read from its line's table (every index checked). */
#include <stddef.h>
#include <stdlib.h>

#include "omdp/feed_stage.h"

static const uint64_t QUOTE_HASH_M[6] = {0x9E3779B97F4A7C15ULL, 0xBF58476D1CE4E5B9ULL, 0x94D049BB133111EBULL,
                                         0xD6E8FEB86659FD93ULL, 0xA0761D6478BD642FULL, 0xE7037ED1A0B428DBULL};

static inline uint64_t root_bits(const char root[OMDP_OPRA_ROOT_MAX])
{
    uint64_t v = 0;
    for (int i = 0; i < OMDP_OPRA_ROOT_MAX; i++) {
        uint8_t c = (uint8_t)root[i];
        v |= (uint64_t)(c == ' ' ? 0 : c) << (8 * i);
    }
    return v;
}

uint64_t omdp_fh_stage_quote_hash(uint32_t line, const omdp_fh_stage_series_t *s, uint8_t participant)
{
    if (!s)
        return 0;
    const uint64_t v[5] = {root_bits(s->root), s->expiry, (uint64_t)s->strike_px, s->put_call, participant};
    uint64_t h = (uint64_t)line * QUOTE_HASH_M[0];
    for (int k = 0; k < 5; k++)
        h = (h ^ (h >> 29)) + v[k] * QUOTE_HASH_M[k + 1];
    return h;
}

/* has_i64 / has_u64: whether x is in sorted[0 .. n) (binary search). */
#define OMDP_SORTED_HAS(name, type)                                                                                 \
    static int name(const type *sorted, uint64_t n, type x)                                                        \
    {                                                                                                               \
        uint64_t lo = 0, hi = n;                                                                                    \
        while (lo < hi) {                                                                                           \
            uint64_t mid = lo + (hi - lo) / 2;                                                                      \
            if (sorted[mid] < x)                                                                                    \
                lo = mid + 1;                                                                                       \
            else                                                                                                    \
                hi = mid;                                                                                           \
        }                                                                                                           \
        return lo < n && sorted[lo] == x;                                                                           \
    }
OMDP_SORTED_HAS(has_i64, int64_t)
OMDP_SORTED_HAS(has_u64, uint64_t)

static int part_ok(const omdp_fh_stage_part_t *p)
{
    return p && (!p->n || p->recs) && (!p->n_series || p->series);
}

/* Per series of the line: which participants' keys have been looked up (known) and which
 * are among the keys (hit), one bit per participant code. */
typedef struct memo {
    uint64_t known[4], hit[4];
} memo_t;

int64_t omdp_fh_stage_quote_hits(const omdp_fh_stage_part_t *p, const int64_t *strikes, uint64_t n_strikes,
                                 const uint64_t *keys, uint64_t n_keys, uint64_t *out, uint64_t max_out)
{
    if (!part_ok(p) || (n_strikes && !strikes) || (n_keys && !keys) || (max_out && !out))
        return -1;
    /* the strike filter once per series of the line, and each (series, participant) key
     * looked up once, not once per record */
    uint8_t *listed = calloc(p->n_series ? p->n_series : 1, 1);
    memo_t *memo = calloc(p->n_series ? p->n_series : 1, sizeof *memo);
    if (!listed || !memo) {
        free(listed);
        free(memo);
        return -1;
    }
    for (uint64_t s = 0; s < p->n_series; s++)
        listed[s] = (uint8_t)has_i64(strikes, n_strikes, p->series[s].strike_px);
    uint64_t hits = 0;
    int64_t rc = 0;
    for (uint64_t i = 0; i < p->n; i++) {
        uint32_t s = p->recs[i].series;
        if (s >= p->n_series) {
            rc = -3;
            break;
        }
        if (!listed[s])
            continue;
        uint8_t part = p->recs[i].participant;
        uint64_t bit = 1ull << (part & 63);
        memo_t *mm = &memo[s];
        if (!(mm->known[part >> 6] & bit)) {
            mm->known[part >> 6] |= bit;
            if (has_u64(keys, n_keys, omdp_fh_stage_quote_hash(p->line, &p->series[s], part)))
                mm->hit[part >> 6] |= bit;
        }
        if (!(mm->hit[part >> 6] & bit))
            continue;
        if (hits < max_out)
            out[hits] = i;
        hits++;
    }
    free(listed);
    free(memo);
    return rc ? rc : (int64_t)hits;
}

int64_t omdp_fh_stage_max_underlying(const omdp_fh_stage_part_t *p)
{
    int64_t top = -1;
    if (!part_ok(p))
        return top;
    for (uint64_t s = 0; s < p->n_series; s++)
        if (p->series[s].underlying_id != OMDP_NO_UNDERLYING && (int64_t)p->series[s].underlying_id > top)
            top = p->series[s].underlying_id;
    return top;
}

int64_t omdp_fh_stage_underlying_counts(const omdp_fh_stage_part_t *p, uint64_t n_slots, int64_t *messages,
                                        int64_t *quotes, int64_t *first_ns, int64_t *last_ns)
{
    if (!part_ok(p) || !n_slots || !messages || !quotes || !first_ns || !last_ns)
        return -1;
    for (uint64_t i = 0; i < p->n; i++) {
        uint32_t ser = p->recs[i].series;
        if (ser >= p->n_series)
            return -3;
        uint32_t u = p->series[ser].underlying_id;
        uint64_t s = u == OMDP_NO_UNDERLYING ? n_slots - 1 : u;
        if (s >= n_slots - 1 && u != OMDP_NO_UNDERLYING)
            return -1;
        int64_t ts = p->recs[i].ts_ns;
        messages[s]++;
        quotes[s] += p->recs[i].category == 'k';
        if (ts < first_ns[s])
            first_ns[s] = ts;
        if (ts > last_ns[s])
            last_ns[s] = ts;
    }
    return (int64_t)p->n;
}
