/* The decision engine operator (engine_op.h): frames the input batch into runs of OPRA
 * message records, runs the engine over each, and emits what it appended - samples on port
 * 0, signals on port 1 - before returning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/engine_op.h"
#include "omdp/engine_reshard.h"

#define RESHARD_END_WAIT_NS 2000000000LL /* end of stream: how long a held move waits for its state */

typedef struct engine_op {
    omdp_engine_t *engine;
    omdp_engine_op_io_t io; /* output buffer, scratch, run counters, emits */
    omdp_engine_reshard_t *reshard; /* NULL: no re-sharding in this run */
} engine_op_t;

static void op_close(void *state)
{
    engine_op_t *op = state;
    if (!op)
        return;
    omdp_engine_reshard_free(op->reshard);
    omdp_engine_release(op->engine);
    omdp_engine_op_io_free(&op->io);
    free(op);
}

static int op_init(void **state, const omdp_op_init_t *init)
{
    if (!init->params || init->params_size != sizeof(omdp_engine_op_params_t))
        return omdp_op_init_fail(init, "params: expected omdp_engine_op_params_t");
    omdp_engine_op_params_t prm;
    memcpy(&prm, init->params, sizeof prm);
    engine_op_t *op = calloc(1, sizeof *op);
    if (!op)
        return OMDP_ERR_NOMEM;
    int rc = omdp_engine_op_io_init(&op->io, prm.out_bytes, init);
    if (rc != OMDP_OK) {
        op_close(op);
        return rc;
    }
    if (prm.shared) {
        omdp_engine_retain(prm.shared);
        op->engine = prm.shared;
    } else {
        int err = 0;
        op->engine = omdp_engine_create(&prm.engine, &err);
        if (!op->engine) {
            op_close(op);
            if (err == OMDP_ENGINE_ENOMEM)
                return OMDP_ERR_NOMEM;
            return omdp_op_init_fail(init, "engine: max_series and max_groups must be 1..2^24");
        }
    }
    omdp_engine_prefault(op->engine); /* the hot path takes no first-touch fault */
    if (prm.reshard) {
        char err[160];
        op->reshard = omdp_engine_reshard_new(prm.reshard, op->engine, init->replica, err, sizeof err);
        if (!op->reshard) {
            op_close(op);
            return omdp_op_init_fail(init, "%s", err);
        }
    }
    *state = op;
    return OMDP_OK;
}

static int run_engine(void *ctx, const omdp_opra_msg_t *msgs, uint32_t n, const omdp_emitter_t *em)
{
    engine_op_t *op = ctx;
    uint32_t done = 0;
    while (done < n) {
        int32_t got = omdp_engine_process_batch(op->engine, msgs + done, n - done, op->io.out, op->io.out_bytes, &op->io.out_len);
        if (got < 0)
            return OMDP_ERR_STATE;
        done += (uint32_t)got;
        if (op->io.out_len) {
            int rc = omdp_engine_op_io_flush(&op->io, em, OMDP_ENGINE_OP_PORT_SAMPLES, OMDP_ENGINE_OP_PORT_SIGNALS);
            if (rc < 0)
                return rc;
        }
    }
    return OMDP_OK;
}

static int op_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                      const omdp_emitter_t *em)
{
    engine_op_t *op = state;
    (void)in_port;
    if (op->reshard)
        return omdp_engine_reshard_batch(op->reshard, records, nbytes, op->io.scratch, run_engine, op, em, &op->io.runs);
    return omdp_engine_for_each_msg_run(records, nbytes, op->io.scratch, run_engine, op, em, &op->io.runs);
}

static int op_end_of_stream(void *state, const omdp_emitter_t *em)
{
    engine_op_t *op = state;
    return op->reshard ? omdp_engine_reshard_finish(op->reshard, RESHARD_END_WAIT_NS, run_engine, op, em) : OMDP_OK;
}

static const char *const ENGINE_COUNTER_NAMES[] = {
    "batches", "processed", "quotes", "other", "bad_record", "bad_series", "bad_participant", "bad_price",
    "unrouted", "table_full", "groups_full", "series", "groups", "sampled", "signals", "sig_crossed",
    "sig_locked", "sig_off_smile", "sig_parity", "bbo_checked", "bbo_bid_mismatch", "bbo_offer_mismatch",
    "bbo_bad_indicator", "out_full_stops", "refs_published",
};
_Static_assert(sizeof ENGINE_COUNTER_NAMES / sizeof ENGINE_COUNTER_NAMES[0] ==
                   sizeof(omdp_engine_counters_t) / sizeof(uint64_t),
               "a name for every engine counter");

static uint32_t op_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    engine_op_t *op = state;
    omdp_engine_counters_t c;
    omdp_engine_read_counters(op->engine, &c);
    uint64_t v[sizeof c / sizeof(uint64_t)];
    memcpy(v, &c, sizeof c);
    uint32_t n_engine = sizeof v / sizeof v[0];
    omdp_counter_t own[] = {{"skipped_records", op->io.runs.skipped_records},
                            {"bad_batches", op->io.runs.bad_batches},
                            {"copied_runs", op->io.runs.copied_runs},
                            {"emits", op->io.emits}};
    uint32_t n_own = sizeof own / sizeof own[0];
    for (uint32_t i = 0; i < n_engine && i < max; i++)
        out[i] = (omdp_counter_t){ENGINE_COUNTER_NAMES[i], v[i]};
    for (uint32_t i = 0; i < n_own && n_engine + i < max; i++)
        out[n_engine + i] = own[i];
    uint32_t n = n_engine + n_own;
    if (op->reshard)
        n += omdp_engine_reshard_counters(op->reshard, out + (n < max ? n : max), n < max ? max - n : 0);
    return n;
}

static const omdp_operator_vtable_t ENGINE_OP = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "decision_engine",
    .n_inputs = 1,
    .n_outputs = 2,
    .init = op_init,
    .process_batch = op_process,
    .end_of_stream = op_end_of_stream,
    .counters = op_counters,
    .close = op_close,
};

const omdp_operator_vtable_t *omdp_engine_op_vtable(void) { return &ENGINE_OP; }
