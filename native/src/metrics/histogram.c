/* Latency histogram: recording, merging, checking and quantile queries (histogram.h). */
#include "omdp/histogram.h"

#include <math.h>
#include <string.h>

void omdp_hist_init(omdp_hist_t *h)
{
    if (!h)
        return;
    memset(h, 0, sizeof(*h));
    h->min = OMDP_HIST_MAX_VALUE;
}

void omdp_hist_record(omdp_hist_t *h, int64_t v)
{
    if (h)
        omdp_hist_add(h, v);
}

int omdp_hist_record_array(omdp_hist_t *h, const int64_t *values, size_t n)
{
    if (!h || (n > 0 && !values))
        return OMDP_METRICS_EINVAL;
    for (size_t i = 0; i < n; i++)
        omdp_hist_add(h, values[i]);
    return 0;
}

int64_t omdp_hist_bucket_lower(uint32_t idx)
{
    if (idx >= OMDP_HIST_BUCKETS)
        return -1;
    uint32_t group = idx >> OMDP_HIST_SUB_BITS;
    if (group == 0)
        return (int64_t)idx;
    uint32_t sub = idx & (OMDP_HIST_SUB_COUNT - 1);
    return (int64_t)((uint64_t)(OMDP_HIST_SUB_COUNT + sub) << (group - 1));
}

int64_t omdp_hist_bucket_upper(uint32_t idx)
{
    if (idx >= OMDP_HIST_BUCKETS)
        return -1;
    uint32_t group = idx >> OMDP_HIST_SUB_BITS;
    int64_t width = group == 0 ? 1 : (int64_t)1 << (group - 1);
    return omdp_hist_bucket_lower(idx) + width - 1;
}

int omdp_hist_check(const omdp_hist_t *h)
{
    if (!h)
        return OMDP_METRICS_EINVAL;
    uint64_t total = 0;
    for (uint32_t i = 0; i < OMDP_HIST_BUCKETS; i++) {
        if (total + h->buckets[i] < total)
            return OMDP_METRICS_EINVAL;
        total += h->buckets[i];
    }
    if (total != h->count || h->below_zero > h->count || h->above_max > h->count)
        return OMDP_METRICS_EINVAL;
    if (h->count == 0)
        return h->sum == 0 ? 0 : OMDP_METRICS_EINVAL;
    if (h->min < 0 || h->max > OMDP_HIST_MAX_VALUE || h->min > h->max || h->sum < 0)
        return OMDP_METRICS_EINVAL;
    return 0;
}

/* The summary fields are sane and the bucket range holds exactly `count`. */
static int check_in_range(const omdp_hist_t *h, uint32_t *lo, uint32_t *hi)
{
    if (h->below_zero > h->count || h->above_max > h->count)
        return OMDP_METRICS_EINVAL;
    if (h->count == 0) {
        *lo = 1;
        *hi = 0;
        return h->sum == 0 ? 0 : OMDP_METRICS_EINVAL;
    }
    if (h->min < 0 || h->max > OMDP_HIST_MAX_VALUE || h->min > h->max || h->sum < 0)
        return OMDP_METRICS_EINVAL;
    omdp_hist_range(h, lo, hi);
    uint64_t total = 0;
    for (uint32_t i = *lo; i <= *hi; i++) {
        if (total + h->buckets[i] < total)
            return OMDP_METRICS_EINVAL;
        total += h->buckets[i];
    }
    return total == h->count ? 0 : OMDP_METRICS_EINVAL;
}

int omdp_hist_merge(omdp_hist_t *dst, const omdp_hist_t *src)
{
    uint32_t lo, hi;
    if (!dst || !src || check_in_range(src, &lo, &hi) != 0)
        return OMDP_METRICS_EINVAL;
    if (src->count == 0)
        return 0;
    for (uint32_t i = lo; i <= hi; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    dst->below_zero += src->below_zero;
    dst->above_max += src->above_max;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    return 0;
}

static int64_t bucket_value(const omdp_hist_t *h, uint32_t idx)
{
    int64_t lo = omdp_hist_bucket_lower(idx);
    int64_t mid = lo + (omdp_hist_bucket_upper(idx) - lo) / 2;
    if (mid < h->min)
        return h->min;
    if (mid > h->max)
        return h->max;
    return mid;
}

static uint64_t rank_of(const omdp_hist_t *h, double q)
{
    double r = ceil(q * (double)h->count);
    if (r < 1.0)
        return 1;
    if (r >= (double)h->count)
        return h->count;
    return (uint64_t)r;
}

int64_t omdp_hist_quantile(const omdp_hist_t *h, double q)
{
    if (!h || h->count == 0 || !(q >= 0.0 && q <= 1.0))
        return -1;
    if (q == 0.0)
        return h->min;
    if (q == 1.0)
        return h->max;
    uint64_t rank = rank_of(h, q), seen = 0;
    uint32_t lo, hi;
    omdp_hist_range(h, &lo, &hi);
    for (uint32_t i = lo; i <= hi; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            return bucket_value(h, i);
    }
    return h->max;
}

int omdp_hist_quantiles(const omdp_hist_t *h, const double *qs, size_t n, int64_t *out)
{
    if (!h || (n > 0 && (!qs || !out)))
        return OMDP_METRICS_EINVAL;
    for (size_t i = 0; i < n; i++)
        out[i] = omdp_hist_quantile(h, qs[i]);
    return 0;
}

double omdp_hist_mean(const omdp_hist_t *h)
{
    if (!h || h->count == 0)
        return 0.0;
    return (double)h->sum / (double)h->count;
}
