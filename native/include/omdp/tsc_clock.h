/* omdp TSC clock: rdtsc scaled to CLOCK_REALTIME nanoseconds (the omdp clock's epoch),
 * calibrated against clock_gettime(CLOCK_REALTIME).
 *
 * Only where the TSC is invariant: /proc/cpuinfo must list both constant_tsc (a fixed
 * rate whatever the core's frequency) and nonstop_tsc (it keeps counting in deep C
 * states); elsewhere omdp_tsc_calibrate refuses with a message naming the missing flag,
 * and stamps stay on omdp_now_ns (clock.h).
 *
 * Calibration: two (tsc, realtime) pairs `interval_ns` apart, each the tightest of
 * OMDP_TSC_PAIR_TRIES reads of rdtsc / clock_gettime / rdtsc (the midpoint of the two TSC
 * reads is paired with the realtime read). The stated error of omdp_tsc_now_ns against
 * CLOCK_REALTIME (omdp_tsc_error_ns) is the pairing uncertainty of the first pair plus the
 * rate uncertainty (both pairs' uncertainty over the interval) times the time since
 * calibration; it does not cover CLOCK_REALTIME itself being stepped or slewed (NTP) after
 * calibration: recalibrate to follow it. Not an omdp clock shift (clock.h): add
 * omdp_clock_shift where stamps must agree with omdp_now_ns on a corrected host.
 *
 * Cost (docs/benchmarks.md): omdp_tsc_bench times it against clock_gettime.
 */
#ifndef OMDP_TSC_CLOCK_H
#define OMDP_TSC_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define OMDP_TSC_PAIR_TRIES 64

/* cdef: begin */
typedef struct omdp_tsc_clock {
    uint64_t tsc0;        /* TSC at the first pair */
    int64_t ns0;          /* CLOCK_REALTIME ns at the first pair */
    uint64_t mult;        /* ns per tick << 32 */
    double ticks_per_ns;  /* the TSC's rate */
    int64_t pair_error_ns; /* half the tightest pair's window, first pair */
    double rate_error;    /* relative: (both pairs' windows) / interval */
} omdp_tsc_clock_t;
/* cdef: end */

/* 1: `cpuinfo` (NULL: /proc/cpuinfo) lists constant_tsc and nonstop_tsc; 0: not (why says
 * which flag is missing); -1: unreadable (why says so). */
int omdp_tsc_invariant(const char *cpuinfo, char *why, size_t why_len);

/* Check the TSC is invariant (cpuinfo as above) and calibrate over `interval_ns` (>= 1 ms).
 * 0, or -1 with the reason in err. */
int omdp_tsc_calibrate(omdp_tsc_clock_t *c, const char *cpuinfo, int64_t interval_ns, char *err, size_t err_len);

static inline uint64_t omdp_tsc_read(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return 0;
#endif
}

/* CLOCK_REALTIME nanoseconds from the TSC. */
static inline int64_t omdp_tsc_now_ns(const omdp_tsc_clock_t *c)
{
    uint64_t d = omdp_tsc_read() - c->tsc0;
    return c->ns0 + (int64_t)(((unsigned __int128)d * c->mult) >> 32);
}

/* Stated error of omdp_tsc_now_ns against CLOCK_REALTIME at time `at_ns`. */
int64_t omdp_tsc_error_ns(const omdp_tsc_clock_t *c, int64_t at_ns);
/* Exported (non-inline) reading, for Python and the benchmark. */
int64_t omdp_tsc_clock_now_ns(const omdp_tsc_clock_t *c);

/* Mean ns per call over `n` calls of omdp_tsc_now_ns and of clock_gettime(CLOCK_REALTIME). */
void omdp_tsc_bench(const omdp_tsc_clock_t *c, uint64_t n, double *tsc_ns, double *gettime_ns);

#endif /* OMDP_TSC_CLOCK_H */
