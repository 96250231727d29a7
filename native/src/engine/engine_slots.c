/* New series slots and groups, shared by the hot path (a series seen for the first time,
 * engine_batch.c) and the re-sharding import (a series handed over, engine_bucket.c): one
 * way to find or add a group, describe a slot and publish it linked to its twin. */
#include <string.h>

#include "engine_internal.h"

uint32_t eng_group_find_or_add(struct omdp_engine *e, uint32_t underlying_id, uint32_t expiry)
{
    uint64_t key = ((uint64_t)underlying_id << 32) | expiry;
    uint64_t h = eng_hash(key, 0);
    uint32_t i = (uint32_t)h & e->gtable_mask;
    uint32_t tag = (uint32_t)(h >> 32);
    for (;;) {
        uint64_t ent = atomic_load_explicit(&e->gtable[i], memory_order_relaxed);
        if (ent == 0)
            break;
        if ((uint32_t)(ent >> 32) == tag) {
            uint32_t g = (uint32_t)ent - 1u;
            if (e->groups[g].underlying_id == underlying_id && e->groups[g].expiry == expiry)
                return g;
        }
        i = (i + 1u) & e->gtable_mask;
    }
    uint32_t g = atomic_load_explicit(&e->n_groups, memory_order_relaxed);
    if (g >= e->cfg.max_groups)
        return OMDP_ENGINE_NO_SLOT;
    e->groups[g].underlying_id = underlying_id;
    e->groups[g].expiry = expiry;
    atomic_store_explicit(&e->gtable[i], ((uint64_t)tag << 32) | (g + 1u), memory_order_release);
    atomic_store_explicit(&e->n_groups, g + 1u, memory_order_release);
    return g;
}

void eng_series_describe(struct omdp_engine *e, uint32_t slot, int64_t strike_px, uint32_t expiry,
                         uint32_t underlying_id, uint8_t put_call, uint8_t root_len, const char root[6])
{
    eng_series_meta_t *mt = &e->meta[slot];
    mt->strike_px = strike_px;
    mt->expiry = expiry;
    mt->underlying_id = underlying_id;
    mt->put_call = put_call;
    mt->root_len = root_len <= 6 ? root_len : 6;
    memcpy(mt->root, root, sizeof mt->root);
}

void eng_series_link(struct omdp_engine *e, uint32_t slot, uint64_t h, uint32_t pos)
{
    eng_series_t *s = &e->series[slot];
    uint64_t tk1 = s->k1 ^ (1ull << 63);
    uint32_t tpos;
    uint32_t twin = eng_lookup(e, s->k0, tk1, eng_hash(s->k0, tk1), &tpos);
    atomic_store_explicit(&s->twin, twin, memory_order_relaxed);
    atomic_store_explicit(&e->dense[slot].twin, twin, memory_order_relaxed); /* a mirror reads it while we run */
    atomic_store_explicit(&e->table[pos], ((h >> 32) << 32) | (slot + 1u), memory_order_release);
    if (twin != OMDP_ENGINE_NO_SLOT) {
        atomic_store_explicit(&e->series[twin].twin, slot, memory_order_relaxed);
        atomic_store_explicit(&e->dense[twin].twin, slot, memory_order_relaxed);
    }
}
