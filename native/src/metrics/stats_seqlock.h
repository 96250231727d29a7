/* Private to the stats segment sources: the open-segment handle and the seqlock protocol
 * documented in omdp/stats.h, in one place. */
#ifndef OMDP_STATS_SEQLOCK_H
#define OMDP_STATS_SEQLOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "omdp/clock.h"
#include "omdp/stats.h"

/* Spins before a waiting reader or writer starts yielding its CPU. */
#define OMDP_STATS_SPINS 256

struct omdp_stats {
    omdp_stats_segment_t *seg;
    size_t size;
    int writable;
    int owner;
    char run_id[OMDP_STATS_RUN_ID_LEN];
};

static inline void omdp_stats_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Wait a little before attempt `attempt` + 1: spin first, then yield the CPU (a writer
 * preempted mid-update on a busy core needs the CPU to finish). 0 to try again, -1 once
 * OMDP_STATS_WAIT_NS have passed since *start (set on the first call). */
static inline int omdp_stats_backoff(uint32_t attempt, int64_t *start)
{
    if (attempt < OMDP_STATS_SPINS) {
        omdp_stats_cpu_relax();
        return 0;
    }
    int64_t now = omdp_now_ns();
    if (*start == 0)
        *start = now;
    if (now - *start > OMDP_STATS_WAIT_NS)
        return -1;
    sched_yield();
    return 0;
}

/* Take a block for writing: CAS seq even -> odd. *out gets the even value to finish with. */
static inline int omdp_seq_write_begin(_Atomic uint64_t *seq, uint64_t *out)
{
    int64_t start = 0;
    for (uint32_t i = 0;; i++) {
        uint64_t s = atomic_load_explicit(seq, memory_order_relaxed);
        if (!(s & 1u) &&
            atomic_compare_exchange_weak_explicit(seq, &s, s + 1, memory_order_acquire, memory_order_relaxed)) {
            /* The odd seq must be visible before any byte of the new body. */
            atomic_thread_fence(memory_order_release);
            *out = s;
            return 0;
        }
        if (omdp_stats_backoff(i, &start) != 0)
            return OMDP_STATS_EBUSY;
    }
}

static inline void omdp_seq_write_end(_Atomic uint64_t *seq, uint64_t s)
{
    atomic_store_explicit(seq, s + 2, memory_order_release);
}

/* Copy n bytes from src to dst as one consistent snapshot of the block guarded by seq. */
static inline int omdp_seq_read(const _Atomic uint64_t *seq, void *dst, const void *src, size_t n)
{
    _Atomic uint64_t *q = (_Atomic uint64_t *)seq;
    int64_t start = 0;
    int saw_even = 0;
    for (uint32_t i = 0;; i++) {
        uint64_t s1 = atomic_load_explicit(q, memory_order_acquire);
        if (!(s1 & 1u)) {
            saw_even = 1;
            memcpy(dst, src, n);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(q, memory_order_relaxed) == s1)
                return 0;
        }
        if (omdp_stats_backoff(i, &start) != 0)
            return saw_even ? OMDP_STATS_EAGAIN : OMDP_STATS_EBUSY;
    }
}

/* Bounded copy of a C string into a fixed field, always NUL-terminated; -1 when it does not fit. */
static inline int omdp_stats_copy_text(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap) : 0;
    if (n >= cap)
        return -1;
    memset(dst, 0, cap);
    if (n)
        memcpy(dst, src, n);
    return 0;
}

#endif /* OMDP_STATS_SEQLOCK_H */
