/* omdp stamp clock: what every hop stamp (fh_in, fh_out, de_in, de_out, mc_in) reads.
 *
 * Two clocks, one process-wide choice made before the partition loop starts:
 *  - OMDP_STAMP_REALTIME: omdp_now_ns (clock.h), a vDSO clock_gettime per stamp;
 *  - OMDP_STAMP_TSC: rdtsc and one multiply-shift (tsc_clock.h), calibrated against
 *    CLOCK_REALTIME when chosen, plus the omdp clock's shift, so a TSC stamp subtracts
 *    from the replayer's intended times (taken with omdp_now_ns in another process) like
 *    a realtime one. Refused with the calibration's message where the TSC is not
 *    invariant.
 * Deadlines, heartbeats and pacing stay on omdp_now_ns: only stamps change.
 *
 * Drift: omdp_stamp_clock_check compares the two clocks (the tightest of a few
 * TSC / realtime / TSC reads) and keeps the last and the largest difference and the
 * calibration's stated error at that time; a partition's control thread calls it every
 * heartbeat and the run reports it. A drift beyond the stated error (CLOCK_REALTIME
 * stepped or slewed by NTP) is counted, not corrected.
 *
 * The checks also bound the error from what they saw: between two checks the TSC clock's
 * difference from CLOCK_REALTIME moves linearly (a fixed rate on both), so it never exceeds
 * the larger of the two ends; after the last check it may move by at most the rate's
 * uncertainty times the time since. checked_error_ns + rate_error * max_check_gap_ns is
 * then the run's error from measurement, typically far below the calibration's own
 * statement, which grows with the time since calibration.
 */
#ifndef OMDP_STAMP_CLOCK_H
#define OMDP_STAMP_CLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "omdp/clock.h"
#include "omdp/tsc_clock.h"

/* cdef: begin */
#define OMDP_STAMP_REALTIME 0
#define OMDP_STAMP_TSC 1
/* cdef: end */

extern _Atomic int omdp_stamp_mode;     /* OMDP_STAMP_*; published after omdp_stamp_tsc */
extern omdp_tsc_clock_t omdp_stamp_tsc; /* written once, before the mode says TSC */

/* cdef: begin */
typedef struct omdp_stamp_clock_info {
    int32_t mode;             /* OMDP_STAMP_* */
    int32_t reserved;
    double ticks_per_ns;      /* TSC rate (0 on realtime) */
    int64_t calibrated_ns;    /* CLOCK_REALTIME at calibration */
    int64_t pair_error_ns;    /* calibration: pairing uncertainty */
    double rate_error;        /* calibration: relative rate uncertainty */
    uint64_t checks;          /* drift checks made */
    uint64_t over_error;      /* checks whose drift exceeded the stated error */
    int64_t last_drift_ns;    /* TSC clock minus CLOCK_REALTIME at the last check */
    int64_t max_abs_drift_ns; /* largest |drift| seen */
    int64_t stated_error_ns;  /* the calibration's stated error at the last check */
    int64_t checked_error_ns; /* largest |drift| plus half its reading's window over the
                               * checks (the calibration's pairing error before any) */
    int64_t max_check_gap_ns; /* longest time between two checks, calibration to the first included */
} omdp_stamp_clock_info_t;
/* cdef: end */

/* The clock of every hop stamp. */
static inline int64_t omdp_stamp_ns(void)
{
    if (atomic_load_explicit(&omdp_stamp_mode, memory_order_acquire) == OMDP_STAMP_TSC)
        return omdp_tsc_now_ns(&omdp_stamp_tsc) + atomic_load_explicit(&omdp_clock_shift, memory_order_relaxed);
    return omdp_now_ns();
}

/* Choose the stamp clock (before any partition loop of this process runs). OMDP_STAMP_TSC
 * calibrates over `interval_ns` against CLOCK_REALTIME, `cpuinfo` (NULL: /proc/cpuinfo)
 * saying whether the TSC is invariant. 0, or -1 with the reason in err (the mode is then
 * left as it was). */
int omdp_stamp_clock_use(int mode, int64_t interval_ns, const char *cpuinfo, char *err, size_t err_len);

/* Compare the stamp clock with CLOCK_REALTIME now and fold it into the info; returns the
 * drift (0 on realtime). One thread at a time (the partition's control thread). */
int64_t omdp_stamp_clock_check(void);

void omdp_stamp_clock_info(omdp_stamp_clock_info_t *out);

/* Exported reading of omdp_stamp_ns, for Python and tests. */
int64_t omdp_stamp_clock_now_ns(void);

/* Mean thread-CPU ns per omdp_stamp_ns over `n` calls, with whatever clock is chosen. */
double omdp_stamp_clock_bench(uint64_t n);

/* Mean thread-CPU ns per bare rdtsc over `n` calls, in the same loop: the floor of a TSC stamp. */
double omdp_tsc_read_bench(uint64_t n);

#endif /* OMDP_STAMP_CLOCK_H */
