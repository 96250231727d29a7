/* The omdp clock's process-wide shift (clock.h): the injected test offset, read once from
 * OMDP_CLOCK_OFFSET_NS when the module loads, and the runtime's cross-host correction. */
#include "omdp/clock.h"

#include <errno.h>
#include <stdlib.h>

_Atomic int64_t omdp_clock_injected = 0;
_Atomic int64_t omdp_clock_shift = 0;
static _Atomic int64_t correction = 0;
static int env_invalid = 0;

__attribute__((constructor)) static void read_injected_offset(void)
{
    const char *text = getenv("OMDP_CLOCK_OFFSET_NS");
    if (!text || !*text)
        return;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || !end || *end) {
        env_invalid = 1;
        return;
    }
    atomic_store_explicit(&omdp_clock_injected, (int64_t)v, memory_order_relaxed);
    atomic_store_explicit(&omdp_clock_shift, (int64_t)v, memory_order_relaxed);
}

int64_t omdp_clock_injected_ns(void)
{
    return atomic_load_explicit(&omdp_clock_injected, memory_order_relaxed);
}

int omdp_clock_env_invalid(void)
{
    return env_invalid;
}

void omdp_clock_set_correction(int64_t correction_ns)
{
    atomic_store_explicit(&correction, correction_ns, memory_order_relaxed);
    atomic_store_explicit(&omdp_clock_shift, omdp_clock_injected_ns() - correction_ns, memory_order_release);
}

int64_t omdp_clock_correction_ns(void)
{
    return atomic_load_explicit(&correction, memory_order_relaxed);
}
