/* The engine's benchmark loop (engine_bench.h): the per-batch call as the feed handler's
 * partition pays it, which a Python driver's per-call cost would hide at small batches. */
#define _GNU_SOURCE
#include "omdp/engine_bench.h"

#include <string.h>
#include <time.h>

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

int64_t omdp_engine_bench_batches(omdp_engine_t *engine, const omdp_opra_msg_t *msgs, uint32_t n, uint32_t batch,
                                  omdp_opra_msg_t *hot, uint32_t hot_cap, uint8_t *out, uint32_t out_cap,
                                  int64_t *wall_ns)
{
    if (!engine || !msgs || !hot || !out || !wall_ns || batch == 0 || hot_cap < batch)
        return OMDP_ENGINE_EINVAL;
    uint32_t step = hot_cap / batch * batch;
    int64_t cpu = 0, wall = 0;
    for (uint32_t start = 0; start < n; start += step) {
        uint32_t k = n - start < step ? n - start : step;
        memcpy(hot, msgs + start, (size_t)k * sizeof *hot);
        int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
        for (uint32_t b = 0; b < k; b += batch) {
            uint32_t m = k - b < batch ? k - b : batch, done = 0;
            while (done < m) {
                uint32_t used = 0;
                int32_t rc = omdp_engine_process_batch(engine, hot + b + done, m - done, out, out_cap, &used);
                if (rc < 0)
                    return rc;
                done += (uint32_t)rc;
            }
        }
        cpu += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        wall += clock_ns(CLOCK_MONOTONIC) - w0;
    }
    *wall_ns = wall;
    return cpu;
}
