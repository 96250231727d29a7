/* Private to the stats segment sources: the open-segment handle and the seqlock protocol
 * documented in omdp/stats.h, in one place. */
#ifndef OMDP_STATS_SEQLOCK_H
#define OMDP_STATS_SEQLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "omdp/stats.h"

/* How long a writer waits for another writer of the same block (spins). */
#define OMDP_STATS_WRITE_SPINS (1u << 20)

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

/* Take a block for writing: CAS seq even -> odd. *out gets the even value to finish with. */
static inline int omdp_seq_write_begin(_Atomic uint64_t *seq, uint64_t *out)
{
    for (uint32_t i = 0; i < OMDP_STATS_WRITE_SPINS; i++) {
        uint64_t s = atomic_load_explicit(seq, memory_order_relaxed);
        if (!(s & 1u) &&
            atomic_compare_exchange_weak_explicit(seq, &s, s + 1, memory_order_acquire, memory_order_relaxed)) {
            /* The odd seq must be visible before any byte of the new body. */
            atomic_thread_fence(memory_order_release);
            *out = s;
            return 0;
        }
        omdp_stats_cpu_relax();
    }
    return OMDP_STATS_EBUSY;
}

static inline void omdp_seq_write_end(_Atomic uint64_t *seq, uint64_t s)
{
    atomic_store_explicit(seq, s + 2, memory_order_release);
}

/* Copy n bytes from src to dst as one consistent snapshot of the block guarded by seq. */
static inline int omdp_seq_read(const _Atomic uint64_t *seq, void *dst, const void *src, size_t n)
{
    _Atomic uint64_t *q = (_Atomic uint64_t *)seq;
    uint32_t odd = 0;
    for (uint32_t i = 0; i < OMDP_STATS_READ_RETRIES; i++) {
        uint64_t s1 = atomic_load_explicit(q, memory_order_acquire);
        if (s1 & 1u) {
            odd++;
            omdp_stats_cpu_relax();
            continue;
        }
        memcpy(dst, src, n);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(q, memory_order_relaxed) == s1)
            return 0;
    }
    return odd == OMDP_STATS_READ_RETRIES ? OMDP_STATS_EBUSY : OMDP_STATS_EAGAIN;
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
