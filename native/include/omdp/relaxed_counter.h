/* A counter with one writer and any number of readers, in any thread or process.
 *
 * The writer adds with a relaxed load and a relaxed store: a plain move on x86, no locked
 * instruction, which a hot path counting every message or batch cannot afford; readers load
 * it relaxed and see a value that was once true. Only correct while a single thread writes
 * the counter (every counter that uses it says whose it is).
 */
#ifndef OMDP_RELAXED_COUNTER_H
#define OMDP_RELAXED_COUNTER_H

#include <stdatomic.h>
#include <stdint.h>

static inline void omdp_counter_add(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by, memory_order_relaxed);
}

#endif /* OMDP_RELAXED_COUNTER_H */
