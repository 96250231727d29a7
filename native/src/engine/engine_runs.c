/* A batch's OPRA message records as runs of consecutive ones, each handed on as an array:
 * in place when 8-byte aligned, else copied through a scratch buffer. Shared by the engine
 * operator and the elastic partition's operator. */
#include <string.h>

#include "omdp/engine_op.h"
#include "omdp/record.h"

static int hand_on(const uint8_t *first, uint32_t n, omdp_opra_msg_t *scratch, omdp_msg_run_fn fn, void *ctx,
                   const omdp_emitter_t *em, omdp_msg_run_counts_t *counts)
{
    if (n == 0)
        return OMDP_OK;
    if (((uintptr_t)first & 7u) == 0)
        return fn(ctx, (const omdp_opra_msg_t *)(const void *)first, n, em);
    counts->copied_runs++;
    for (uint32_t k = 0; k < n; k += OMDP_ENGINE_SCRATCH_RECORDS) {
        uint32_t m = n - k < OMDP_ENGINE_SCRATCH_RECORDS ? n - k : OMDP_ENGINE_SCRATCH_RECORDS;
        memcpy(scratch, first + (size_t)k * OMDP_OPRA_MSG_SIZE, (size_t)m * OMDP_OPRA_MSG_SIZE);
        int rc = fn(ctx, scratch, m, em);
        if (rc < 0)
            return rc;
    }
    return OMDP_OK;
}

int omdp_engine_for_each_msg_run(const uint8_t *records, uint32_t nbytes, omdp_opra_msg_t *scratch,
                                 omdp_msg_run_fn fn, void *ctx, const omdp_emitter_t *em,
                                 omdp_msg_run_counts_t *counts)
{
    uint32_t off = 0, run_n = 0;
    const uint8_t *run_start = NULL, *rec = NULL;
    int r;
    while ((r = omdp_batch_next(records, nbytes, &off, &rec)) == 1) {
        omdp_record_header_t h;
        memcpy(&h, rec, sizeof h);
        if (h.type == OMDP_RT_OPRA_MSG && h.length == OMDP_OPRA_MSG_SIZE) {
            if (run_n == 0)
                run_start = rec;
            run_n++;
            continue;
        }
        counts->skipped_records++;
        int rc = hand_on(run_start, run_n, scratch, fn, ctx, em, counts);
        if (rc < 0)
            return rc;
        run_n = 0;
    }
    if (r < 0)
        counts->bad_batches++;
    return hand_on(run_start, run_n, scratch, fn, ctx, em, counts);
}
