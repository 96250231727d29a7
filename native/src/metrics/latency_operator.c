/* The latency collector operator (latency_operator.h). */
#include "omdp/latency_operator.h"

#include <stdio.h>
#include <stdlib.h>

#include "omdp/clock.h"

typedef struct latency_op {
    omdp_latency_collector_t *c;
} latency_op_t;

static int lat_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != sizeof(omdp_latency_op_params_t) || !init->params)
        return omdp_op_init_fail(init, "params: expected omdp_latency_op_params_t");
    omdp_latency_op_params_t prm;
    memcpy(&prm, init->params, sizeof prm);
    if (!prm.collector)
        return omdp_op_init_fail(init, "params: no collector");
    latency_op_t *s = calloc(1, sizeof *s);
    if (!s)
        return OMDP_ERR_NOMEM;
    s->c = prm.collector;
    *state = s;
    return OMDP_OK;
}

static int lat_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                       const omdp_emitter_t *em)
{
    latency_op_t *s = state;
    /* OMDP_LAT_EBADREC is counted by the collector (bad_batches); nothing else can fail
     * with a valid collector and batch. */
    omdp_latency_collect_batch(s->c, records, nbytes, (uint16_t)in_port, 0);
    return OMDP_OK;
}

static int lat_end_of_stream(void *state, const omdp_emitter_t *em)
{
    latency_op_t *s = state;
    omdp_latency_publish(s->c, omdp_now_ns());
    return OMDP_OK;
}

static uint32_t lat_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    latency_op_t *s = state;
    const omdp_latency_counters_t *k = omdp_latency_counters(s->c);
    const omdp_counter_t all[] = {
        {"records", k->records},         {"samples", k->samples}, {"not_sampled", k->not_sampled},
        {"bad_batches", k->bad_batches}, {"rows", k->rows},       {"rows_dropped", k->rows_dropped},
        {"publish_errors", k->publish_errors},
    };
    uint32_t n = (uint32_t)(sizeof all / sizeof all[0]);
    for (uint32_t i = 0; i < n && i < max; i++)
        out[i] = all[i];
    return n;
}

static void lat_close(void *state)
{
    latency_op_t *s = state;
    if (s)
        omdp_latency_publish(s->c, omdp_now_ns());
    free(s);
}

static const omdp_operator_vtable_t LATENCY_COLLECTOR = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "latency_collector",
    .n_inputs = 1,
    .n_outputs = 0,
    .init = lat_init,
    .process_batch = lat_process,
    .end_of_stream = lat_end_of_stream,
    .counters = lat_counters,
    .close = lat_close,
};

const omdp_operator_vtable_t *omdp_latency_collector_vtable(void)
{
    return &LATENCY_COLLECTOR;
}
