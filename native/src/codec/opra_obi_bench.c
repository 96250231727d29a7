/* The OBI decoder's benchmark loop (opra_bench.h): per block, as a feed handler calls it. */
#define _GNU_SOURCE
#include "omdp/opra_bench.h"

#include <time.h>

#include "omdp/opra_obi.h"

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

int64_t omdp_obi_bench_decode_blocks(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                     const uint32_t *lengths, uint64_t npkts, uint32_t group,
                                     omdp_opra_msg_t *out, uint64_t out_cap, uint8_t *side, uint32_t side_cap,
                                     uint64_t *messages, uint64_t *bad, int64_t *wall_ns)
{
    if (!buf || (npkts && (!offsets || !lengths)) || !out || !side || !messages || !bad || !wall_ns || group == 0 ||
        out_cap / OMDP_OBI_MAX_MESSAGES < group)
        return -1;
    for (uint64_t i = 0; i < npkts; i++)
        if (offsets[i] > buf_len || lengths[i] > buf_len - offsets[i])
            return -1;
    uint64_t msgs = 0, refused = 0, base = 0;
    uint32_t in_group = 0;
    int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
    for (uint64_t i = 0; i < npkts; i++) {
        uint32_t side_used = 0;
        int n = omdp_obi_decode_block(buf + offsets[i], lengths[i], i, 0, out + base, OMDP_OBI_MAX_MESSAGES, side,
                                      side_cap, &side_used, NULL, NULL, NULL);
        if (n < 0) {
            refused++;
        } else {
            msgs += (uint64_t)n;
            base += (uint64_t)n;
        }
        if (++in_group == group) {
            in_group = 0;
            base = 0;
        }
    }
    int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    *wall_ns = clock_ns(CLOCK_MONOTONIC) - w0;
    *messages = msgs;
    *bad = refused;
    return cpu;
}
