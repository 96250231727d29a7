/* An engine's output buffer out of an operator: each run of consecutive records of one type
 * leaves in one omdp_emit, signals on one port and samples on the other. Shared by the
 * engine operator and the elastic partition's operator. */
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
