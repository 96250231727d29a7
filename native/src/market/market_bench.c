/* The market statistics' benchmark loop: see omdp_market_bench_run in market_stats.h. */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "omdp/market_stats.h"
#include "omdp/opra_msg.h"

typedef struct bench_ctx {
    void *const *merges;
    omdp_market_bench_result_t *res;
    omdp_market_emit_t *emits;
    uint32_t cap, n, window_ms;
    int feeding;          /* ENDs now come from a partition batch (not the final flush) */
    uint64_t batch_t0;    /* CLOCK_MONOTONIC at the batch's start */
    uint64_t batch_c0;    /* the thread's CPU time then */
    int64_t batch_ms;     /* event time (ms of the day) of the batch's last message */
} bench_ctx_t;

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The event time of the last OPRA record of a batch (records of 256 bytes), ms of the day. */
static int64_t last_event_ms(const uint8_t *recs, uint64_t nbytes)
{
    if (nbytes < OMDP_OPRA_MSG_SIZE)
        return 0;
    omdp_opra_msg_t m;
    memcpy(&m, recs + nbytes - OMDP_OPRA_MSG_SIZE, sizeof m);
    uint32_t t = m.time;
    return ((int64_t)(t / 10000000u) * 3600 + t / 100000u % 100u * 60 + t / 1000u % 100u) * 1000 + t % 1000u;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int count_windows(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    bench_ctx_t *b = ctx;
    for (uint32_t off = 0; off + OMDP_MARKET_REC_SIZE <= nbytes; off += OMDP_MARKET_REC_SIZE) {
        omdp_market_rec_t r;
        memcpy(&r, records + off, sizeof r);
        b->res->window_records++;
        if (r.kind != OMDP_MKT_END)
            continue;
        b->res->ends++;
        if (b->feeding && b->n < b->cap)
            b->emits[b->n++] = (omdp_market_emit_t){r.window, (int64_t)(wall_ns() - b->batch_t0),
                                                     (int64_t)(cpu_ns() - b->batch_c0),
                                                     b->batch_ms - (int64_t)((r.window + 1) * b->window_ms)};
    }
    return OMDP_OK;
}

static int to_leader(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    bench_ctx_t *b = ctx;
    uint64_t t0 = cpu_ns();
    int r = omdp_market_merge_feed(b->merges[port], records, nbytes, count_windows, b);
    b->res->leader_ns += cpu_ns() - t0;
    b->res->delta_batches++;
    return r;
}

int omdp_market_bench_run(void *const *stats, uint32_t n_parts, void *const *merges, uint32_t n_leaders,
                          const uint8_t *const *parts, const uint64_t *sizes, uint32_t batch, uint32_t window_ms,
                          omdp_market_emit_t *emits, uint32_t emits_cap, uint32_t *n_emits,
                          omdp_market_bench_result_t *out)
{
    if (!stats || !merges || !parts || !sizes || !out || !n_emits || (emits_cap && !emits) || n_parts == 0 ||
        n_leaders == 0 || batch == 0 || window_ms == 0)
        return OMDP_ERR_PARAMS;
    memset(out, 0, sizeof *out);
    bench_ctx_t b = {.merges = merges, .res = out, .emits = emits, .cap = emits_cap, .window_ms = window_ms};
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
            b.feeding = 1;
            b.batch_ms = last_event_ms(parts[k] + done[k], n);
            b.batch_t0 = wall_ns();
            b.batch_c0 = cpu_ns();
            int r = omdp_market_stats_feed(stats[k], parts[k] + done[k], (uint32_t)n, to_leader, &b);
            b.feeding = 0;
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
        int r = omdp_market_merge_finish(merges[l], count_windows, &b);
        if (r < 0)
            return r;
    }
    out->leader_ns += cpu_ns() - t1;
    *n_emits = b.n;
    return OMDP_OK;
}
