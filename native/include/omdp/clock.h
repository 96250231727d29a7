/* omdp clock: int64 nanoseconds since the Unix epoch (CLOCK_REALTIME).
 *
 * Realtime, not monotonic, because stamps are compared across processes and hosts
 * (cross-host offsets are estimated and applied by the runtime). Read through the
 * vDSO: about 20 ns, no system call.
 */
#ifndef OMDP_CLOCK_H
#define OMDP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t omdp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

#endif /* OMDP_CLOCK_H */
