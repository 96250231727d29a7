/* The market statistics' benchmark loop: see omdp_market_bench_run in market_stats.h. */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "omdp/market_stats.h"

typedef struct bench_ctx {
    void *const *merges;
    omdp_market_bench_result_t *res;
} bench_ctx_t;

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int count_windows(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    omdp_market_bench_result_t *res = ctx;
    for (uint32_t off = 0; off + OMDP_MARKET_REC_SIZE <= nbytes; off += OMDP_MARKET_REC_SIZE) {
        uint16_t kind;
        memcpy(&kind, records + off + offsetof(omdp_market_rec_t, kind), sizeof kind);
        res->window_records++;
        res->ends += kind == OMDP_MKT_END;
    }
    return OMDP_OK;
}

static int to_leader(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    bench_ctx_t *b = ctx;
    uint64_t t0 = cpu_ns();
    int r = omdp_market_merge_feed(b->merges[port], records, nbytes, count_windows, b->res);
    b->res->leader_ns += cpu_ns() - t0;
    b->res->delta_batches++;
    return r;
}

int omdp_market_bench_run(void *const *stats, uint32_t n_parts, void *const *merges, uint32_t n_leaders,
                          const uint8_t *const *parts, const uint64_t *sizes, uint32_t batch,
                          omdp_market_bench_result_t *out)
{
    if (!stats || !merges || !parts || !sizes || !out || n_parts == 0 || n_leaders == 0 || batch == 0)
        return OMDP_ERR_PARAMS;
    memset(out, 0, sizeof *out);
    bench_ctx_t b = {merges, out};
    uint64_t step = (uint64_t)batch * 256u, done[OMDP_MKT_MAX_SOURCES] = {0};
    if (n_parts > OMDP_MKT_MAX_SOURCES)
        return OMDP_ERR_PARAMS;
    uint64_t t0 = cpu_ns();
    for (int more = 1; more;) {
        more = 0;
        for (uint32_t k = 0; k < n_parts; k++) {
            if (done[k] >= sizes[k])
                continue;
            uint64_t n = sizes[k] - done[k] < step ? sizes[k] - done[k] : step;
            int r = omdp_market_stats_feed(stats[k], parts[k] + done[k], (uint32_t)n, to_leader, &b);
            if (r < 0)
                return r;
            done[k] += n;
            out->messages += n / 256u;
            more |= done[k] < sizes[k];
        }
    }
    for (uint32_t k = 0; k < n_parts; k++) {
        int r = omdp_market_stats_finish(stats[k], to_leader, &b);
        if (r < 0)
            return r;
    }
    uint64_t t1 = cpu_ns();
    out->partition_ns = t1 - t0 - out->leader_ns; /* the leaders' share of the loop taken out */
    for (uint32_t l = 0; l < n_leaders; l++) {
        int r = omdp_market_merge_finish(merges[l], count_windows, out);
        if (r < 0)
            return r;
    }
    out->leader_ns += cpu_ns() - t1;
    return OMDP_OK;
}
