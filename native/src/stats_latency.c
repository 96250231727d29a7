/* Stats segment, latency part: cumulative per-hop histograms and the per-second ring. */
#include <errno.h>
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

/* One consistent copy of a slot into out (second + histograms). */
static int read_slot(const omdp_stats_latency_slot_t *slot, int64_t *second, omdp_hist_t *out)
{
    _Atomic uint64_t *q = (_Atomic uint64_t *)&slot->seq;
    int64_t start = 0;
    int saw_even = 0;
    for (uint32_t i = 0;; i++) {
        uint64_t s1 = atomic_load_explicit(q, memory_order_acquire);
        if (!(s1 & 1u)) {
            saw_even = 1;
            int64_t sec = slot->second;
            memcpy(out, slot->hist, HOPS_BYTES);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(q, memory_order_relaxed) == s1) {
                *second = sec;
                return 0;
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
    int64_t held;
    int rc = read_slot(&s->seg->ring[slot_of(second)], &held, hist);
    if (rc != 0)
        return rc;
    if (held != second) {
        empty_hops(hist);
        return 0;
    }
    for (int h = 0; h < OMDP_STATS_HOPS; h++)
        if (omdp_hist_check(&hist[h]) != 0)
            return OMDP_STATS_ELAYOUT;
    return 1;
}

int omdp_stats_latency_read_window(const omdp_stats_t *s, int64_t now_ns, uint32_t seconds, omdp_hist_t *hist)
{
    if (!s || !hist || now_ns <= 0 || seconds == 0 || seconds > OMDP_STATS_RING_SECONDS)
        return OMDP_STATS_EINVAL;
    omdp_hist_t *tmp = malloc(HOPS_BYTES);
    if (!tmp)
        return -ENOMEM;
    empty_hops(hist);
    int64_t now_s = now_ns / 1000000000LL;
    int found = 0, rc = 0;
    for (int64_t sec = now_s - (int64_t)seconds + 1; sec <= now_s && rc >= 0; sec++) {
        if (sec <= 0)
            continue;
        rc = omdp_stats_latency_read_second(s, sec, tmp);
        if (rc == 1) {
            for (int h = 0; h < OMDP_STATS_HOPS; h++)
                omdp_hist_merge(&hist[h], &tmp[h]);
            found++;
        }
    }
    free(tmp);
    return rc < 0 ? rc : found;
}

int omdp_stats_latency_history(const omdp_stats_t *s, int64_t now_ns, uint32_t seconds, const double *qs,
                               uint32_t nq, int64_t *out)
{
    if (!s || !out || (nq > 0 && !qs) || now_ns <= 0 || seconds == 0 || seconds > OMDP_STATS_RING_SECONDS)
        return OMDP_STATS_EINVAL;
    omdp_hist_t *tmp = malloc(HOPS_BYTES);
    if (!tmp)
        return -ENOMEM;
    int64_t now_s = now_ns / 1000000000LL;
    size_t stride = 4 + (size_t)nq;
    int rc = 0;
    for (uint32_t i = 0; i < seconds && rc >= 0; i++) {
        int64_t sec = now_s - (int64_t)seconds + 1 + (int64_t)i;
        rc = sec > 0 ? omdp_stats_latency_read_second(s, sec, tmp) : 0;
        if (rc == 0)
            empty_hops(tmp);
        for (int h = 0; h < OMDP_STATS_HOPS && rc >= 0; h++) {
            int64_t *row = out + ((size_t)i * OMDP_STATS_HOPS + (size_t)h) * stride;
            const omdp_hist_t *hh = &tmp[h];
            row[0] = sec;
            row[1] = (int64_t)hh->count;
            row[2] = hh->sum;
            row[3] = hh->count ? hh->max : -1;
            omdp_hist_quantiles(hh, qs, nq, row + 4);
        }
    }
    free(tmp);
    return rc < 0 ? rc : (int)seconds;
}
