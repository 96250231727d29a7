/* omdp clock: int64 nanoseconds since the Unix epoch (CLOCK_REALTIME), plus this process's
 * clock shift.
 *
 * Realtime, not monotonic, because stamps are compared across processes and hosts. Read
 * through the vDSO: about 20 ns, no system call.
 *
 * The shift (clock.c) has two terms, both zero unless set:
 *  - the injected offset, OMDP_CLOCK_OFFSET_NS in the environment, read once when the
 *    module loads: tests make one emulated host's clock run ahead or behind by a known
 *    amount, and check that the runtime's estimate finds it;
 *  - the correction the runtime sets (omdp_clock_set_correction) after estimating this
 *    host's offset from the reference host (the collector's), so every host stamps in the
 *    reference host's time and cross-host hops subtract like same-host ones.
 * omdp_now_ns (stamps, deadlines) carries both; omdp_host_now_ns (what the offset
 * estimate measures) only the injected one.
 */
#ifndef OMDP_CLOCK_H
#define OMDP_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

extern _Atomic int64_t omdp_clock_injected;  /* OMDP_CLOCK_OFFSET_NS */
extern _Atomic int64_t omdp_clock_shift;     /* injected - correction */

static inline int64_t omdp_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

/* The omdp clock: every stamp and deadline. */
static inline int64_t omdp_now_ns(void)
{
    return omdp_realtime_ns() + atomic_load_explicit(&omdp_clock_shift, memory_order_relaxed);
}

/* This host's own clock (no correction): what a clock offset estimate compares. */
static inline int64_t omdp_host_now_ns(void)
{
    return omdp_realtime_ns() + atomic_load_explicit(&omdp_clock_injected, memory_order_relaxed);
}

/* The injected offset; 0 when OMDP_CLOCK_OFFSET_NS is unset. */
int64_t omdp_clock_injected_ns(void);
/* 1 when OMDP_CLOCK_OFFSET_NS is set but not a whole number of nanoseconds (then ignored). */
int omdp_clock_env_invalid(void);
/* Subtract `correction_ns` (this host's estimated offset from the reference) from every
 * later omdp_now_ns. Set once, before the partition loop starts. */
void omdp_clock_set_correction(int64_t correction_ns);
int64_t omdp_clock_correction_ns(void);

#endif /* OMDP_CLOCK_H */
