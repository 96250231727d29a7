/* The stamp clock's process-wide choice and its drift checks (stamp_clock.h). */
#include "omdp/stamp_clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define DRIFT_TRIES 16

_Atomic int omdp_stamp_mode = OMDP_STAMP_REALTIME;
omdp_tsc_clock_t omdp_stamp_tsc;
static omdp_stamp_clock_info_t info;
static int64_t last_check_ns; /* CLOCK_REALTIME of the last check, or of the calibration */

int omdp_stamp_clock_use(int mode, int64_t interval_ns, const char *cpuinfo, char *err, size_t err_len)
{
    if (mode == OMDP_STAMP_REALTIME) {
        atomic_store_explicit(&omdp_stamp_mode, OMDP_STAMP_REALTIME, memory_order_release);
        memset(&info, 0, sizeof info);
        return 0;
    }
    if (mode != OMDP_STAMP_TSC) {
        snprintf(err, err_len, "stamp clock %d: not OMDP_STAMP_REALTIME (0) or OMDP_STAMP_TSC (1)", mode);
        return -1;
    }
    omdp_tsc_clock_t c;
    if (omdp_tsc_calibrate(&c, cpuinfo, interval_ns, err, err_len) != 0)
        return -1;
    /* Readers load the mode with acquire before the struct: switch to realtime while it
     * is rewritten (a second call), then publish. */
    atomic_store_explicit(&omdp_stamp_mode, OMDP_STAMP_REALTIME, memory_order_release);
    omdp_stamp_tsc = c;
    memset(&info, 0, sizeof info);
    info.mode = OMDP_STAMP_TSC;
    info.ticks_per_ns = c.ticks_per_ns;
    info.calibrated_ns = c.ns0;
    info.pair_error_ns = c.pair_error_ns;
    info.rate_error = c.rate_error;
    info.checked_error_ns = c.pair_error_ns;
    last_check_ns = c.ns0;
    atomic_store_explicit(&omdp_stamp_mode, OMDP_STAMP_TSC, memory_order_release);
    return 0;
}

int64_t omdp_stamp_clock_check(void)
{
    if (atomic_load_explicit(&omdp_stamp_mode, memory_order_acquire) != OMDP_STAMP_TSC)
        return 0;
    int64_t best_window = INT64_MAX, drift = 0, at = 0;
    for (int i = 0; i < DRIFT_TRIES; i++) {
        int64_t a = omdp_tsc_now_ns(&omdp_stamp_tsc);
        int64_t r = omdp_realtime_ns();
        int64_t b = omdp_tsc_now_ns(&omdp_stamp_tsc);
        if (b - a < best_window) {
            best_window = b - a;
            drift = a + (b - a) / 2 - r;
            at = r;
        }
    }
    int64_t stated = omdp_tsc_error_ns(&omdp_stamp_tsc, at);
    info.checks++;
    info.last_drift_ns = drift;
    info.stated_error_ns = stated;
    int64_t mag = drift < 0 ? -drift : drift;
    if (mag > info.max_abs_drift_ns)
        info.max_abs_drift_ns = mag;
    if (mag + best_window / 2 > info.checked_error_ns)
        info.checked_error_ns = mag + best_window / 2;
    if (at - last_check_ns > info.max_check_gap_ns)
        info.max_check_gap_ns = at - last_check_ns;
    last_check_ns = at;
    if (mag > stated + best_window / 2)
        info.over_error++;
    return drift;
}

void omdp_stamp_clock_info(omdp_stamp_clock_info_t *out)
{
    *out = info;
    out->mode = atomic_load_explicit(&omdp_stamp_mode, memory_order_acquire);
}

int64_t omdp_stamp_clock_now_ns(void)
{
    return omdp_stamp_ns();
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

/* Mean thread-CPU ns per evaluation of EXPR over n of them, as a function's body; thread CPU
 * time, so that other processes on a shared machine do not inflate it. A macro, not a
 * function pointer: the call would be timed too. */
#define MEAN_NS_PER_CALL(n, EXPR)                              \
    do {                                                       \
        volatile int64_t sink_ = 0;                            \
        int64_t a_ = thread_cpu_ns();                          \
        for (uint64_t i_ = 0; i_ < (n); i_++)                  \
            sink_ += (int64_t)(EXPR);                          \
        int64_t b_ = thread_cpu_ns();                          \
        (void)sink_;                                           \
        return (n) ? (double)(b_ - a_) / (double)(n) : 0.0;    \
    } while (0)

double omdp_stamp_clock_bench(uint64_t n)
{
    MEAN_NS_PER_CALL(n, omdp_stamp_ns());
}

/* The same loop around a bare TSC read: what a TSC stamp costs at the least on this CPU. */
double omdp_tsc_read_bench(uint64_t n)
{
    MEAN_NS_PER_CALL(n, omdp_tsc_read());
}
