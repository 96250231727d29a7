/* The elastic engine partition as an operator (elastic_op.h): frames the input batch into
 * runs of OPRA message records, dispatches them, and emits the collected output, samples
 * and signals to their ports. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/elastic_op.h"
#include "omdp/engine_op.h"
#include "omdp/record.h"
#include "omdp/signal.h"

#define DRAIN_SPINS 1000000000u /* end of stream: give up waiting after this many polls */

typedef struct elastic_op {
    omdp_elastic_t *el;
    omdp_engine_op_io_t io; /* output buffer, scratch, run counters, emits */
    uint64_t full_retries;  /* dispatch found a ring full: emitted and retried */
} elastic_op_t;

static void op_close(void *state)
{
    elastic_op_t *op = state;
    if (!op)
        return;
    omdp_engine_op_io_free(&op->io);
    free(op);
}

static int op_init(void **state, const omdp_op_init_t *init)
{
    if (!init->params || init->params_size != sizeof(omdp_elastic_op_params_t))
        return omdp_op_init_fail(init, "params: expected omdp_elastic_op_params_t");
    omdp_elastic_op_params_t prm;
    memcpy(&prm, init->params, sizeof prm);
    if (!prm.shared)
        return omdp_op_init_fail(init, "shared: the elastic partition is required");
    elastic_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return OMDP_ERR_NOMEM;
    op->el = prm.shared;
    int rc = omdp_engine_op_io_init(&op->io, prm.out_bytes, init);
    if (rc != OMDP_OK) {
        op_close(op);
        return rc;
    }
    *state = op;
    return OMDP_OK;
}

/* Emit the output buffer (omdp_engine_emit_output) and empty it. */
static int flush(elastic_op_t *op, const omdp_emitter_t *em)
{
    return omdp_engine_op_io_flush(&op->io, em, OMDP_ELASTIC_OP_PORT_SAMPLES, OMDP_ELASTIC_OP_PORT_SIGNALS);
}

static int collect_emit(elastic_op_t *op, const omdp_emitter_t *em)
{
    omdp_elastic_collect(op->el, op->io.out, op->io.out_bytes, &op->io.out_len);
    return op->io.out_len ? flush(op, em) : OMDP_OK;
}

static int dispatch_all(void *ctx, const omdp_opra_msg_t *msgs, uint32_t n, const omdp_emitter_t *em)
{
    elastic_op_t *op = ctx;
    uint32_t done = 0;
    while (done < n) {
        int32_t got = omdp_elastic_dispatch(op->el, msgs + done, n - done);
        if (got < 0)
            return OMDP_ERR_STATE;
        done += (uint32_t)got;
        if (done < n) {
            op->full_retries++;
            int rc = collect_emit(op, em);
            if (rc < 0)
                return rc;
            if (!omdp_elastic_pass(op->el))
                sched_yield();
        }
    }
    return OMDP_OK;
}

static int op_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                      const omdp_emitter_t *em)
{
    elastic_op_t *op = state;
    (void)in_port;
    int rc = omdp_engine_for_each_msg_run(records, nbytes, op->io.scratch, dispatch_all, op, em, &op->io.runs);
    if (rc < 0)
        return rc;
    omdp_elastic_pass(op->el); /* inline worker 0, if so configured */
    return collect_emit(op, em);
}

static int op_end(void *state, const omdp_emitter_t *em)
{
    elastic_op_t *op = state;
    for (uint32_t spins = 0; spins < DRAIN_SPINS; spins++) {
        int rc = collect_emit(op, em);
        if (rc < 0)
            return rc;
        uint64_t pending = 0;
        if (omdp_elastic_backlog(op->el, &pending) == 0 && pending == 0)
            return OMDP_OK;
        if (!omdp_elastic_pass(op->el))
            sched_yield();
    }
    return OMDP_ERR_STATE;
}

static const char *const NAMES[] = {
    "dispatched", "processed", "ring_full", "moves", "level", "level_changes", "suspended", "wakeups", "inplace",
    "signals", "sampled", "series", "quotes", "unrouted", "bbo_checked", "bbo_bid_mismatch", "bbo_offer_mismatch",
    "skipped_records", "bad_batches", "full_retries", "emits",
};
#define N_NAMES (sizeof NAMES / sizeof NAMES[0])

static uint32_t op_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    elastic_op_t *op = state;
    omdp_elastic_counters_t c;
    omdp_engine_counters_t e;
    omdp_elastic_read_counters(op->el, &c);
    omdp_elastic_engine_counters(op->el, &e);
    uint64_t v[N_NAMES] = {c.dispatched, c.processed, c.ring_full, c.moves, c.level, c.level_changes, c.suspended,
                           c.wakeups, c.inplace, e.signals, e.sampled, e.series, e.quotes, e.unrouted, e.bbo_checked,
                           e.bbo_bid_mismatch, e.bbo_offer_mismatch, op->io.runs.skipped_records, op->io.runs.bad_batches,
                           op->full_retries, op->io.emits};
    for (uint32_t i = 0; i < N_NAMES && i < max; i++) {
        out[i].name = NAMES[i];
        out[i].value = v[i];
    }
    return N_NAMES;
}

static const omdp_operator_vtable_t VTABLE = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "elastic_engine",
    .n_inputs = 1,
    .n_outputs = 2,
    .init = op_init,
    .process_batch = op_process,
    .poll = NULL,
    .end_of_stream = op_end,
    .counters = op_counters,
    .close = op_close,
};

const omdp_operator_vtable_t *omdp_elastic_op_vtable(void) { return &VTABLE; }
