/* Timing the decision engine as the pipeline calls it: from C, one omdp_engine_process_batch
 * per batch of `batch` records, no Python between batches (ops/bench/engine.py). */
#ifndef OMDP_ENGINE_BENCH_H
#define OMDP_ENGINE_BENCH_H

#include <stdint.h>

#include "omdp/engine.h"

/* Push msgs[0..n) through the engine in batches of `batch`, output discarded (written
 * from offset 0 of `out` for every batch). As in the pipeline, the records are in cache
 * when the engine reads them: each block of `hot_cap` records (rounded down to whole
 * batches, at least one) is copied into `hot` untimed, then timed. Returns the thread CPU
 * ns the engine took (*wall_ns: wall ns), or a negative OMDP_ENGINE_E* code. */
int64_t omdp_engine_bench_batches(omdp_engine_t *engine, const omdp_opra_msg_t *msgs, uint32_t n, uint32_t batch,
                                  omdp_opra_msg_t *hot, uint32_t hot_cap, uint8_t *out, uint32_t out_cap,
                                  int64_t *wall_ns);

#endif /* OMDP_ENGINE_BENCH_H */
