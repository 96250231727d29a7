/* The decision engine as an omdp operator (operator.h): input port 0 takes batches of OPRA
 * message records; output port 0 ("samples") gets the 1-in-N sampled copies, port 1
 * ("signals") the signal records. Per batch it calls omdp_engine_process_batch and emits
 * what that appended before returning (so a sample's de_out is its batch's end).
 *
 * The engine is either the operator's own (created from `engine` in init) or `shared`: one
 * that Python created to price it (decision_engines.pricing), which the operator retains
 * until close. Records of other types in the input are counted (skipped_records) and skipped.
 */
#ifndef OMDP_ENGINE_OP_H
#define OMDP_ENGINE_OP_H

#include <stdint.h>

#include "omdp/engine.h"
#include "omdp/operator.h"
#include "omdp/reshard.h"

/* cdef: begin */
#define OMDP_ENGINE_OP_PORT_SAMPLES 0
#define OMDP_ENGINE_OP_PORT_SIGNALS 1
#define OMDP_ENGINE_OP_DEFAULT_OUT_BYTES 65536

typedef struct omdp_engine_op_params {
    omdp_engine_config_t engine; /* used when shared is NULL */
    omdp_engine_t *shared;       /* use (and retain) this engine instead */
    uint32_t out_bytes;          /* output buffer: >= OMDP_ENGINE_MAX_OUT_PER_MSG, multiple of 8 */
    uint32_t reserved;           /* zero */
    omdp_reshard_seg_t *reshard; /* the run's reshard segment (borrowed), NULL: buckets never move;
                                  * this engine is the replica index's (engine_reshard.h) */
} omdp_engine_op_params_t;
/* cdef: end */

const omdp_operator_vtable_t *omdp_engine_op_vtable(void);

/* Emit out[0, len) (an engine's output: whole records) to em, each run of consecutive
 * records of one type in one call: signals to signals_port, the rest to samples_port;
 * *emits counts the calls. OMDP_OK, an emit's error, or OMDP_ERR_RECORD on a bad length. */
int omdp_engine_emit_output(const uint8_t *out, uint32_t len, const omdp_emitter_t *em, uint32_t samples_port,
                            uint32_t signals_port, uint64_t *emits);

/* Records a misaligned run is copied through at a time: the scratch buffer's capacity. */
#define OMDP_ENGINE_SCRATCH_RECORDS 64

typedef int (*omdp_msg_run_fn)(void *ctx, const omdp_opra_msg_t *msgs, uint32_t n, const omdp_emitter_t *em);

typedef struct omdp_msg_run_counts {
    uint64_t skipped_records; /* records of other types or sizes, skipped */
    uint64_t bad_batches;     /* batches cut short by a malformed record */
    uint64_t copied_runs;     /* runs copied because the input was not 8-byte aligned */
} omdp_msg_run_counts_t;

/* Walk a batch (omdp_batch_next) and hand each run of consecutive OPRA message records to
 * fn, in order: in place when 8-byte aligned, else through scratch (OMDP_ENGINE_SCRATCH_RECORDS
 * records, 64-byte aligned). A malformed record ends the walk (the runs before it are handed
 * on). Adds to *counts; returns OMDP_OK or fn's first error. */
int omdp_engine_for_each_msg_run(const uint8_t *records, uint32_t nbytes, omdp_opra_msg_t *scratch,
                                 omdp_msg_run_fn fn, void *ctx, const omdp_emitter_t *em,
                                 omdp_msg_run_counts_t *counts);

/* What an operator running engines over a batch's message runs holds besides the engines:
 * the output buffer they append to, the scratch misaligned runs are copied through, the run
 * counters and the emit count. Shared by the engine and the elastic partition's operators. */
typedef struct omdp_engine_op_io {
    uint8_t *out;
    uint32_t out_bytes;
    uint32_t out_len;
    omdp_opra_msg_t *scratch;
    omdp_msg_run_counts_t runs;
    uint64_t emits;
} omdp_engine_op_io_t;

/* Check out_bytes (a multiple of 8 in [OMDP_ENGINE_MAX_OUT_PER_MSG, 64 MiB]; otherwise
 * OMDP_ERR_PARAMS with the reason in init->err) and allocate the buffers (OMDP_ERR_NOMEM).
 * io starts zeroed; omdp_engine_op_io_free frees whatever it holds, after a failure too. */
int omdp_engine_op_io_init(omdp_engine_op_io_t *io, uint32_t out_bytes, const omdp_op_init_t *init);
void omdp_engine_op_io_free(omdp_engine_op_io_t *io);

/* Emit out[0, out_len) (omdp_engine_emit_output) and empty it. */
int omdp_engine_op_io_flush(omdp_engine_op_io_t *io, const omdp_emitter_t *em, uint32_t samples_port,
                            uint32_t signals_port);

/* Reference counting, so an engine shared by Python and an operator is freed by the last
 * one to let go. omdp_engine_destroy is omdp_engine_release. */
void omdp_engine_retain(omdp_engine_t *engine);
void omdp_engine_release(omdp_engine_t *engine);

#endif /* OMDP_ENGINE_OP_H */
