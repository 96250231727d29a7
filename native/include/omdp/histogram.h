/* omdp latency histogram: log-linear buckets over int64 nanoseconds, mergeable.
 *
 * Why this shape: latencies span 10 ns (a fused call) to seconds (a stalled run), and a
 * percentile must be right to a fixed relative error at every scale, with O(1) recording
 * and a fixed size so histograms can live in shared memory and be merged by addition
 * (per-second snapshots merged into "the last 10 s").
 *
 * Buckets (HdrHistogram-like): values 0..127 have one bucket each (exact); above, every
 * power-of-two range [2^k, 2^(k+1)) for k = 7..35 is split into 128 equal sub-buckets of
 * width 2^(k-7). A bucket's width is at most 1/128 of its lower bound, and a quantile is
 * reported as the midpoint of the bucket holding the nearest-rank order statistic, clipped
 * to [min, max]: the reported value is within 1/256 (0.39%) of that order statistic.
 *
 * Range: 0 .. OMDP_HIST_MAX_VALUE (2^36 - 1 ns, 68.7 s). A negative value (clock skew
 * between hosts) is recorded as 0 and counted in `below_zero`; a larger one is recorded as
 * the maximum and counted in `above_max`, so nothing is silently lost.
 *
 * Layout (8-byte aligned, 30,784 bytes): the summary fields, then the bucket counts.
 * `sum` is exact while count * max value stays below 2^63 (2^27 samples at the range's top).
 */
#ifndef OMDP_HISTOGRAM_H
#define OMDP_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

/* cdef: begin */
#define OMDP_HIST_SUB_BITS 7
#define OMDP_HIST_SUB_COUNT 128
#define OMDP_HIST_MAX_BITS 36
#define OMDP_HIST_MAX_VALUE ((int64_t)((1ULL << 36) - 1))
/* (36 - 7 + 1) groups of 128 buckets: group 0 is exact 0..127, group g >= 1 covers [2^(g+6), 2^(g+7)). */
#define OMDP_HIST_BUCKETS 3840

/* Error codes shared by the metrics components (negative returns). */
#define OMDP_METRICS_EINVAL (-22) /* an argument out of range, a NULL pointer */

typedef struct omdp_hist {
    uint64_t count;        /* values recorded */
    int64_t sum;           /* sum of the recorded (clamped) values, ns */
    int64_t min;           /* smallest recorded value; OMDP_HIST_MAX_VALUE when empty */
    int64_t max;           /* largest recorded value; 0 when empty */
    uint64_t below_zero;   /* values < 0, recorded as 0 */
    uint64_t above_max;    /* values > OMDP_HIST_MAX_VALUE, recorded as that */
    uint64_t reserved[2];  /* zero */
    uint64_t buckets[OMDP_HIST_BUCKETS];
} omdp_hist_t;
/* cdef: end */

/* Bucket of a value already clamped to [0, OMDP_HIST_MAX_VALUE]. */
static inline uint32_t omdp_hist_index(int64_t v)
{
    uint64_t u = (uint64_t)v;
    if (u < OMDP_HIST_SUB_COUNT)
        return (uint32_t)u;
    uint32_t k = 63u - (uint32_t)__builtin_clzll(u); /* 7..35 */
    uint32_t shift = k - OMDP_HIST_SUB_BITS;
    return ((shift + 1u) << OMDP_HIST_SUB_BITS) + (uint32_t)((u >> shift) - OMDP_HIST_SUB_COUNT);
}

/* Record one value; the hot path of the latency collector. */
static inline void omdp_hist_add(omdp_hist_t *h, int64_t v)
{
    if (v < 0) {
        h->below_zero++;
        v = 0;
    } else if (v > OMDP_HIST_MAX_VALUE) {
        h->above_max++;
        v = OMDP_HIST_MAX_VALUE;
    }
    h->buckets[omdp_hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

/* The buckets [*lo, *hi] that can hold counts: those of min and max (lo > hi when empty).
 * Every recorded value lies in [min, max], so merging, copying and quantile walks touch
 * only this range. Safe on unverified bytes: min and max are clamped first. */
static inline void omdp_hist_range(const omdp_hist_t *h, uint32_t *lo, uint32_t *hi)
{
    if (h->count == 0) {
        *lo = 1;
        *hi = 0;
        return;
    }
    int64_t mn = h->min < 0 ? 0 : (h->min > OMDP_HIST_MAX_VALUE ? OMDP_HIST_MAX_VALUE : h->min);
    int64_t mx = h->max < 0 ? 0 : (h->max > OMDP_HIST_MAX_VALUE ? OMDP_HIST_MAX_VALUE : h->max);
    *lo = omdp_hist_index(mn);
    *hi = omdp_hist_index(mx);
}

/* Empty the histogram (min = OMDP_HIST_MAX_VALUE, everything else 0). */
void omdp_hist_init(omdp_hist_t *h);
/* Record one value (the exported twin of omdp_hist_add). */
void omdp_hist_record(omdp_hist_t *h, int64_t v);
/* Record n values; 0, or OMDP_METRICS_EINVAL for a NULL pointer with n > 0. */
int omdp_hist_record_array(omdp_hist_t *h, const int64_t *values, size_t n);
/* dst += src, over src's bucket range. 0, or OMDP_METRICS_EINVAL when a pointer is NULL or
 * src is inconsistent (its range does not hold its count, min > max, values out of range). */
int omdp_hist_merge(omdp_hist_t *dst, const omdp_hist_t *src);
/* 0 when the histogram is self-consistent (bucket counts sum to count, min <= max when not
 * empty, values in range); OMDP_METRICS_EINVAL otherwise. Used on copies read from shared
 * memory before they are trusted. */
int omdp_hist_check(const omdp_hist_t *h);
/* Nearest-rank quantile q in [0, 1]: the bucket midpoint of the ceil(q * count)-th smallest
 * value, clipped to [min, max]; q = 0 gives min and q = 1 gives max exactly.
 * -1 when empty or q is outside [0, 1] (NaN included). */
int64_t omdp_hist_quantile(const omdp_hist_t *h, double q);
/* n quantiles at once; out[i] as omdp_hist_quantile(h, qs[i]).
 * 0, or OMDP_METRICS_EINVAL for NULL pointers. */
int omdp_hist_quantiles(const omdp_hist_t *h, const double *qs, size_t n, int64_t *out);
/* Mean of the recorded values in ns; 0.0 when empty. */
double omdp_hist_mean(const omdp_hist_t *h);
/* Inclusive bounds of bucket idx; -1 for an index out of range. */
int64_t omdp_hist_bucket_lower(uint32_t idx);
int64_t omdp_hist_bucket_upper(uint32_t idx);

#endif /* OMDP_HISTOGRAM_H */
