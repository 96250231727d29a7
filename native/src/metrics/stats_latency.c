/* Stats segment, latency part: cumulative per-hop histograms and the per-second ring. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "stats_seqlock.h"

#define HOPS_BYTES (sizeof(omdp_hist_t) * OMDP_STATS_HOPS)

static uint32_t slot_of(int64_t second)
{
    return (uint32_t)(second % OMDP_STATS_RING_SECONDS);
}

int omdp_stats_latency_publish_total(omdp_stats_t *s, const omdp_hist_t *hist, const uint64_t *missing, int64_t now_ns)
{
    if (!s || !hist)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_latency_block_t *b = &s->seg->latency;
    uint64_t seq;
    int rc = omdp_seq_write_begin(&b->seq, &seq);
    if (rc != 0)
        return rc;
    b->updated_ns = now_ns;
    for (int h = 0; h < OMDP_STATS_HOPS; h++)
        b->missing[h] = missing ? missing[h] : 0;
    memcpy(b->hist, hist, HOPS_BYTES);
    omdp_seq_write_end(&b->seq, seq);
    atomic_store_explicit(&s->seg->header.heartbeat_ns, now_ns, memory_order_relaxed);
    return 0;
}

int omdp_stats_latency_publish_second(omdp_stats_t *s, int64_t second, const omdp_hist_t *hist, int64_t now_ns)
{
    if (!s || !hist || second <= 0)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_latency_slot_t *slot = &s->seg->ring[slot_of(second)];
    uint64_t seq;
    int rc = omdp_seq_write_begin(&slot->seq, &seq);
    if (rc != 0)
        return rc;
    slot->second = second;
    slot->updated_ns = now_ns;
    memcpy(slot->hist, hist, HOPS_BYTES);
    omdp_seq_write_end(&slot->seq, seq);
    return 0;
}

int omdp_stats_latency_read_total(const omdp_stats_t *s, omdp_hist_t *hist, uint64_t *missing, int64_t *updated_ns)
{
    if (!s || !hist)
        return OMDP_STATS_EINVAL;
    const omdp_stats_latency_block_t *b = &s->seg->latency;
    _Atomic uint64_t *q = (_Atomic uint64_t *)&b->seq;
    int64_t start = 0;
    int saw_even = 0;
    for (uint32_t i = 0;; i++) {
        uint64_t s1 = atomic_load_explicit(q, memory_order_acquire);
        if (!(s1 & 1u)) {
            saw_even = 1;
            memcpy(hist, b->hist, HOPS_BYTES);
            if (missing)
                memcpy(missing, b->missing, sizeof(b->missing));
            int64_t updated = b->updated_ns;
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(q, memory_order_relaxed) == s1) {
                if (updated_ns)
                    *updated_ns = updated;
                return 0;
            }
        }
        if (omdp_stats_backoff(i, &start) != 0)
            return saw_even ? OMDP_STATS_EAGAIN : OMDP_STATS_EBUSY;
    }
}

/* Copies of the six histograms of a slot, of which only the header and the bucket range
 * are written (a slot's counts sit in a few hundred of its 3,840 buckets): `dirty` marks
 * the buckets that may be non-zero, zeroed again before the next copy. */
typedef struct hop_scratch {
    omdp_hist_t h[OMDP_STATS_HOPS];
    uint32_t dirty_lo[OMDP_STATS_HOPS];
    uint32_t dirty_hi[OMDP_STATS_HOPS];
} hop_scratch_t;

static hop_scratch_t *scratch_new(void)
{
    hop_scratch_t *t = calloc(1, sizeof *t);
    if (t)
        for (int h = 0; h < OMDP_STATS_HOPS; h++)
            t->dirty_lo[h] = 1;
    return t;
}

/* An empty histogram in t->h[h], whose buckets scratch_clear already zeroed. */
static void scratch_empty(hop_scratch_t *t)
{
    for (int h = 0; h < OMDP_STATS_HOPS; h++) {
        memset(&t->h[h], 0, offsetof(omdp_hist_t, buckets));
        t->h[h].min = OMDP_HIST_MAX_VALUE;
    }
}

static void scratch_clear(hop_scratch_t *t)
{
    for (int h = 0; h < OMDP_STATS_HOPS; h++) {
        if (t->dirty_lo[h] <= t->dirty_hi[h])
            memset(&t->h[h].buckets[t->dirty_lo[h]], 0,
                   (size_t)(t->dirty_hi[h] - t->dirty_lo[h] + 1) * sizeof(uint64_t));
        t->dirty_lo[h] = 1;
        t->dirty_hi[h] = 0;
    }
}

/* Inside a seqlock read: header and bucket range of each hop. The range comes from the
 * copied header, clamped, so even a torn header cannot take the copy out of bounds. */
static void scratch_copy(hop_scratch_t *t, const omdp_hist_t *src)
{
    for (int h = 0; h < OMDP_STATS_HOPS; h++) {
        memcpy(&t->h[h], &src[h], offsetof(omdp_hist_t, buckets));
        uint32_t lo, hi;
        omdp_hist_range(&t->h[h], &lo, &hi);
        if (lo > hi)
            continue;
        memcpy(&t->h[h].buckets[lo], &src[h].buckets[lo], (size_t)(hi - lo + 1) * sizeof(uint64_t));
        t->dirty_lo[h] = lo;
        t->dirty_hi[h] = hi;
    }
}

/* One consistent copy of the slot holding `second` into t; 1 when the slot holds it, 0 when
 * it holds another second (t left empty), or an error. */
static int read_slot(const omdp_stats_t *s, int64_t second, hop_scratch_t *t)
{
    const omdp_stats_latency_slot_t *slot = &s->seg->ring[slot_of(second)];
    _Atomic uint64_t *q = (_Atomic uint64_t *)&slot->seq;
    int64_t start = 0;
    int saw_even = 0;
    for (uint32_t i = 0;; i++) {
        uint64_t s1 = atomic_load_explicit(q, memory_order_acquire);
        if (!(s1 & 1u)) {
            saw_even = 1;
            scratch_clear(t);
            int64_t held = slot->second;
            if (held == second)
                scratch_copy(t, slot->hist);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(q, memory_order_relaxed) == s1) {
                if (held != second) {
                    scratch_empty(t);
                    return 0;
                }
                return 1;
            }
        }
        if (omdp_stats_backoff(i, &start) != 0)
            return saw_even ? OMDP_STATS_EAGAIN : OMDP_STATS_EBUSY;
    }
}

static void empty_hops(omdp_hist_t *hist)
{
    for (int h = 0; h < OMDP_STATS_HOPS; h++)
        omdp_hist_init(&hist[h]);
}

int omdp_stats_latency_read_second(const omdp_stats_t *s, int64_t second, omdp_hist_t *hist)
{
    if (!s || !hist || second <= 0)
        return OMDP_STATS_EINVAL;
    hop_scratch_t *t = scratch_new();
    if (!t)
        return -ENOMEM;
    int rc = read_slot(s, second, t);
    empty_hops(hist);
    for (int h = 0; h < OMDP_STATS_HOPS && rc == 1; h++)
        if (omdp_hist_merge(&hist[h], &t->h[h]) != 0)
            rc = OMDP_STATS_ELAYOUT;
    free(t);
    return rc;
}

int omdp_stats_latency_read_window(const omdp_stats_t *s, int64_t now_ns, uint32_t seconds, omdp_hist_t *hist)
{
    if (!s || !hist || now_ns <= 0 || seconds == 0 || seconds > OMDP_STATS_RING_SECONDS)
        return OMDP_STATS_EINVAL;
    hop_scratch_t *t = scratch_new();
    if (!t)
        return -ENOMEM;
    empty_hops(hist);
    int64_t now_s = now_ns / 1000000000LL;
    int found = 0, rc = 0;
    for (int64_t sec = now_s - (int64_t)seconds + 1; sec <= now_s && rc >= 0; sec++) {
        if (sec <= 0)
            continue;
        rc = read_slot(s, sec, t);
        if (rc != 1)
            continue;
        for (int h = 0; h < OMDP_STATS_HOPS; h++)
            if (omdp_hist_merge(&hist[h], &t->h[h]) != 0)
                rc = OMDP_STATS_ELAYOUT;
        found++;
    }
    free(t);
    return rc < 0 ? rc : found;
}

int omdp_stats_latency_history(const omdp_stats_t *s, int64_t now_ns, uint32_t seconds, const double *qs,
                               uint32_t nq, int64_t *out)
{
    if (!s || !out || (nq > 0 && !qs) || now_ns <= 0 || seconds == 0 || seconds > OMDP_STATS_RING_SECONDS)
        return OMDP_STATS_EINVAL;
    hop_scratch_t *t = scratch_new();
    if (!t)
        return -ENOMEM;
    int64_t now_s = now_ns / 1000000000LL;
    size_t stride = 4 + (size_t)nq;
    int rc = 0;
    for (uint32_t i = 0; i < seconds && rc >= 0; i++) {
        int64_t sec = now_s - (int64_t)seconds + 1 + (int64_t)i;
        if (sec > 0) {
            rc = read_slot(s, sec, t);
        } else {
            scratch_clear(t);
            scratch_empty(t);
            rc = 0;
        }
        for (int h = 0; h < OMDP_STATS_HOPS && rc >= 0; h++) {
            int64_t *row = out + ((size_t)i * OMDP_STATS_HOPS + (size_t)h) * stride;
            const omdp_hist_t *hh = &t->h[h];
            row[0] = sec;
            row[1] = (int64_t)hh->count;
            row[2] = hh->sum;
            row[3] = hh->count ? hh->max : -1;
            omdp_hist_quantiles(hh, qs, nq, row + 4);
        }
    }
    free(t);
    return rc < 0 ? rc : (int)seconds;
}
