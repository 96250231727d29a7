/* The decoders' benchmark loops (opra_bench.h): FAST V2 per packet and OBI per block, each
 * as a feed handler calls it. One loop serves both; the decoder is picked by a constant
 * argument of an inlined function, so each public function is a loop with a direct call
 * and no branch on the format inside. */
#define _GNU_SOURCE
#include "omdp/opra_bench.h"

#include <time.h>

#include "omdp/opra_fast.h"
#include "omdp/opra_obi.h"

enum { BENCH_FAST, BENCH_OBI };

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

static inline __attribute__((always_inline)) int64_t
bench_loop(int format, const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets, const uint32_t *lengths,
           uint64_t npkts, uint32_t group, omdp_opra_msg_t *out, uint64_t out_cap, uint8_t *side, uint32_t side_cap,
           uint64_t *messages, uint64_t *bad, int64_t *wall_ns)
{
    uint32_t per_packet = format == BENCH_OBI ? OMDP_OBI_MAX_MESSAGES : OMDP_OPRA_MAX_MESSAGES;
    if (!buf || (npkts && (!offsets || !lengths)) || !out || !side || !messages || !bad || !wall_ns || group == 0 ||
        out_cap / per_packet < group)
        return -1;
    for (uint64_t i = 0; i < npkts; i++)
        if (offsets[i] > buf_len || lengths[i] > buf_len - offsets[i])
            return -1;
    uint64_t msgs = 0, refused = 0, base = 0;
    uint32_t in_group = 0;
    int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
    for (uint64_t i = 0; i < npkts; i++) {
        uint32_t side_used = 0;
        /* the next packet's lines asked for while this one is decoded, as the feed handler
         * asks for its ring's next slot (feed_handler_input.c) */
        if (i + 1 < npkts)
            for (uint32_t at = 0; at < lengths[i + 1]; at += 64)
                __builtin_prefetch(buf + offsets[i + 1] + at, 0, 3);
        int n = format == BENCH_OBI
                    ? omdp_obi_decode_block(buf + offsets[i], lengths[i], i, 0, out + base, per_packet, side, side_cap,
                                            &side_used, NULL, NULL, NULL)
                    : omdp_opra_decode_packet(buf + offsets[i], lengths[i], i, out + base, per_packet, side, side_cap,
                                              &side_used, NULL);
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

int64_t omdp_opra_bench_decode_packets(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                       const uint32_t *lengths, uint64_t npkts, uint32_t group,
                                       omdp_opra_msg_t *out, uint64_t out_cap, uint8_t *side, uint32_t side_cap,
                                       uint64_t *messages, uint64_t *bad, int64_t *wall_ns)
{
    return bench_loop(BENCH_FAST, buf, buf_len, offsets, lengths, npkts, group, out, out_cap, side, side_cap, messages,
                      bad, wall_ns);
}

int64_t omdp_obi_bench_decode_blocks(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                     const uint32_t *lengths, uint64_t npkts, uint32_t group,
                                     omdp_opra_msg_t *out, uint64_t out_cap, uint8_t *side, uint32_t side_cap,
                                     uint64_t *messages, uint64_t *bad, int64_t *wall_ns)
{
    return bench_loop(BENCH_OBI, buf, buf_len, offsets, lengths, npkts, group, out, out_cap, side, side_cap, messages,
                      bad, wall_ns);
}
