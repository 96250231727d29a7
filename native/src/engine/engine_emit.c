/* An engine's output buffer out of an operator: each run of consecutive records of one type
 * leaves in one omdp_emit, signals on one port and samples on the other; and the buffers
 * themselves (omdp_engine_op_io_t). Shared by the engine operator and the elastic
 * partition's operator. */
#include <stdlib.h>
#include <string.h>

#include "omdp/engine_op.h"
#include "omdp/record.h"
#include "omdp/signal.h"

int omdp_engine_emit_output(const uint8_t *out, uint32_t len, const omdp_emitter_t *em, uint32_t samples_port,
                            uint32_t signals_port, uint64_t *emits)
{
    uint32_t pos = 0, run = 0;
    uint32_t run_port = samples_port;
    while (pos < len) {
        omdp_record_header_t h;
        if (len - pos < OMDP_RECORD_HEADER_SIZE)
            return OMDP_ERR_RECORD;
        memcpy(&h, out + pos, sizeof h);
        if (h.length < OMDP_RECORD_HEADER_SIZE || h.length > len - pos)
            return OMDP_ERR_RECORD;
        uint32_t port = h.type == OMDP_RT_SIGNAL ? signals_port : samples_port;
        if (port != run_port && pos > run) {
            int rc = omdp_emit(em, run_port, out + run, pos - run);
            (*emits)++;
            if (rc < 0)
                return rc;
            run = pos;
        }
        run_port = port;
        pos += h.length;
    }
    if (pos > run) {
        int rc = omdp_emit(em, run_port, out + run, pos - run);
        (*emits)++;
        if (rc < 0)
            return rc;
    }
    return OMDP_OK;
}

int omdp_engine_op_io_init(omdp_engine_op_io_t *io, uint32_t out_bytes, const omdp_op_init_t *init)
{
    if (out_bytes < OMDP_ENGINE_MAX_OUT_PER_MSG || out_bytes % 8 || out_bytes > (1u << 26))
        return omdp_op_init_fail(init, "out_bytes must be a multiple of 8 in [OMDP_ENGINE_MAX_OUT_PER_MSG, 64 MiB]");
    io->out_bytes = out_bytes;
    io->out = aligned_alloc(64, out_bytes);
    io->scratch = aligned_alloc(64, OMDP_ENGINE_SCRATCH_RECORDS * sizeof(omdp_opra_msg_t));
    return io->out && io->scratch ? OMDP_OK : OMDP_ERR_NOMEM;
}

void omdp_engine_op_io_free(omdp_engine_op_io_t *io)
{
    free(io->out);
    free(io->scratch);
    io->out = NULL;
    io->scratch = NULL;
}

int omdp_engine_op_io_flush(omdp_engine_op_io_t *io, const omdp_emitter_t *em, uint32_t samples_port,
                            uint32_t signals_port)
{
    int rc = omdp_engine_emit_output(io->out, io->out_len, em, samples_port, signals_port, &io->emits);
    io->out_len = 0;
    return rc;
}
