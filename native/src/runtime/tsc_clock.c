/* The calibrated TSC clock (tsc_clock.h). */
#define _GNU_SOURCE
#include "omdp/tsc_clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

static int has_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ' || p[-1] == '\t') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

int omdp_tsc_invariant(const char *cpuinfo, char *why, size_t why_len)
{
    const char *path = cpuinfo ? cpuinfo : "/proc/cpuinfo";
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, why_len, "cannot read %s to check the TSC is invariant", path);
        return -1;
    }
    char line[8192];
    int found = 0, constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = 1;
        constant = has_flag(line, "constant_tsc");
        nonstop = has_flag(line, "nonstop_tsc");
        break; /* the first CPU's flags */
    }
    fclose(f);
    if (!found) {
        snprintf(why, why_len, "%s has no flags line: cannot tell whether the TSC is invariant", path);
        return -1;
    }
    if (!constant || !nonstop) {
        snprintf(why, why_len, "the TSC is not invariant (%s lacks%s%s): use CLOCK_REALTIME (omdp_now_ns)", path,
                 constant ? "" : " constant_tsc", nonstop ? "" : " nonstop_tsc");
        return 0;
    }
    return 1;
}

/* The tightest of OMDP_TSC_PAIR_TRIES rdtsc / clock_gettime / rdtsc reads. */
static void read_pair(uint64_t *tsc, int64_t *ns, uint64_t *window)
{
    uint64_t best = UINT64_MAX;
    *tsc = 0;
    *ns = 0;
    for (int i = 0; i < OMDP_TSC_PAIR_TRIES; i++) {
        uint64_t a = omdp_tsc_read();
        int64_t t = realtime_ns();
        uint64_t b = omdp_tsc_read();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = t;
        }
    }
    *window = best;
}

int omdp_tsc_calibrate(omdp_tsc_clock_t *c, const char *cpuinfo, int64_t interval_ns, char *err, size_t err_len)
{
    memset(c, 0, sizeof *c);
#if !defined(__x86_64__) && !defined(__i386__)
    snprintf(err, err_len, "no TSC on this architecture: use CLOCK_REALTIME (omdp_now_ns)");
    return -1;
#endif
    if (interval_ns < 1000000) {
        snprintf(err, err_len, "calibration interval %lld ns: at least 1 ms", (long long)interval_ns);
        return -1;
    }
    if (omdp_tsc_invariant(cpuinfo, err, err_len) != 1)
        return -1;
    uint64_t t1 = 0, t2 = 0, w1 = 0, w2 = 0;
    int64_t n1 = 0, n2 = 0;
    read_pair(&t1, &n1, &w1);
    struct timespec d = {interval_ns / 1000000000LL, interval_ns % 1000000000LL};
    while (nanosleep(&d, &d) != 0) {
    }
    read_pair(&t2, &n2, &w2);
    if (t2 <= t1 || n2 <= n1) {
        snprintf(err, err_len, "calibration failed: the TSC or CLOCK_REALTIME did not advance");
        return -1;
    }
    double ticks_per_ns = (double)(t2 - t1) / (double)(n2 - n1);
    c->tsc0 = t1;
    c->ns0 = n1;
    c->ticks_per_ns = ticks_per_ns;
    c->mult = (uint64_t)((double)(1ULL << 32) / ticks_per_ns + 0.5);
    /* a window of w ticks leaves the pairing uncertain by w/2 ticks, +1 ns for the realtime
     * read's resolution */
    c->pair_error_ns = (int64_t)((double)w1 / 2.0 / ticks_per_ns) + 1;
    c->rate_error = ((double)(w1 + w2) / 2.0 / ticks_per_ns + 2.0) / (double)(n2 - n1);
    return 0;
}

int64_t omdp_tsc_error_ns(const omdp_tsc_clock_t *c, int64_t at_ns)
{
    int64_t since = at_ns > c->ns0 ? at_ns - c->ns0 : c->ns0 - at_ns;
    return c->pair_error_ns + (int64_t)(c->rate_error * (double)since) + 1;
}

int64_t omdp_tsc_clock_now_ns(const omdp_tsc_clock_t *c)
{
    return omdp_tsc_now_ns(c);
}

void omdp_tsc_bench(const omdp_tsc_clock_t *c, uint64_t n, double *tsc_ns, double *gettime_ns)
{
    volatile int64_t sink = 0;
    int64_t a = realtime_ns();
    for (uint64_t i = 0; i < n; i++)
        sink += omdp_tsc_now_ns(c);
    int64_t b = realtime_ns();
    for (uint64_t i = 0; i < n; i++)
        sink += realtime_ns();
    int64_t e = realtime_ns();
    (void)sink;
    *tsc_ns = n ? (double)(b - a) / (double)n : 0.0;
    *gettime_ns = n ? (double)(e - b) / (double)n : 0.0;
}
