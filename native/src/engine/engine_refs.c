/* Pricing's double buffer of per-series limits. The refresher writes the back buffer and
 * publishes it with a release store of refs_front; the hot path takes it at its next batch
 * (acquire) and acknowledges with a release store of refs_seen, after which - and only then -
 * the old front may be rewritten. Neither side ever waits for the other. The group models
 * travel in the same buffers. The hot path writes into the front buffer only the limits of
 * a series it has just inserted (engine_price.c): the refresher never touches the front. */
#include "engine_internal.h"

omdp_series_ref_t *omdp_engine_refs_begin(omdp_engine_t *e, int *err)
{
    int dummy;
    if (!err)
        err = &dummy;
    if (!e) {
        *err = OMDP_ENGINE_EINVAL;
        return NULL;
    }
    uint32_t front = atomic_load_explicit(&e->refs_front, memory_order_relaxed);
    uint32_t seen = atomic_load_explicit(&e->refs_seen, memory_order_acquire);
    if (seen != front) {
        *err = OMDP_ENGINE_EBUSY;
        return NULL;
    }
    e->refs_begun = 1;
    *err = OMDP_ENGINE_OK;
    return e->refs[front ^ 1u];
}

omdp_group_ref_t *omdp_engine_group_refs_back(omdp_engine_t *e)
{
    if (!e || !e->refs_begun)
        return NULL;
    return e->grefs[atomic_load_explicit(&e->refs_front, memory_order_relaxed) ^ 1u];
}

int omdp_engine_refs_publish(omdp_engine_t *e)
{
    if (!e)
        return OMDP_ENGINE_EINVAL;
    if (!e->refs_begun)
        return OMDP_ENGINE_ENOTBEGUN;
    e->refs_begun = 0;
    uint32_t front = atomic_load_explicit(&e->refs_front, memory_order_relaxed);
    atomic_store_explicit(&e->refs_front, front ^ 1u, memory_order_release);
    return OMDP_ENGINE_OK;
}
