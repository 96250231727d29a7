/* A bucket's state out of one engine and into another (engine_reshard.h): every series of
 * the bucket's underlyings as an omdp_reshard_series_t - key, each exchange's quote, NBBO,
 * crossed/locked/parity state, pricing's limits in force - so that the engine taking the
 * bucket goes on exactly where the one giving it up stopped. Both run on the hot path's thread of their engine. */
#include <stdatomic.h>

#include "engine_internal.h"
#include "omdp/engine_reshard.h"

_Static_assert(sizeof(((omdp_reshard_series_t *)0)->bid) == OMDP_ENGINE_EXCHANGES * sizeof(int64_t) &&
                   sizeof(((omdp_reshard_series_t *)0)->ask_sz) == OMDP_ENGINE_EXCHANGES * sizeof(uint32_t),
               "a hand-over series holds every exchange's quote");

_Static_assert(sizeof(omdp_reshard_series_t) == OMDP_RESHARD_SERIES_SIZE, "series hand-over record size");

int64_t omdp_engine_export_bucket(const omdp_engine_t *engine, uint32_t buckets, uint32_t bucket, uint8_t *area,
                                  uint64_t cap, uint32_t *n_series)
{
    const struct omdp_engine *e = engine;
    *n_series = 0;
    if (!e || !area || buckets == 0 || (buckets & (buckets - 1)) || bucket >= buckets ||
        cap < sizeof(omdp_reshard_handover_t))
        return OMDP_ENGINE_EINVAL;
    uint32_t n = atomic_load_explicit(&e->n_series, memory_order_relaxed);
    uint64_t room = (cap - sizeof(omdp_reshard_handover_t)) / sizeof(omdp_reshard_series_t);
    omdp_reshard_series_t *out = (omdp_reshard_series_t *)(area + sizeof(omdp_reshard_handover_t));
    uint32_t k = 0;
    for (uint32_t slot = 0; slot < n; slot++) {
        const eng_series_meta_t *mt = &e->meta[slot];
        if (mt->underlying_id == OMDP_NO_UNDERLYING || (mt->underlying_id & (buckets - 1)) != bucket)
            continue;
        if (k >= room)
            return OMDP_ENGINE_EOUTSMALL;
        const eng_series_t *s = &e->series[slot];
        omdp_reshard_series_t *r = &out[k++];
        memset(r, 0, sizeof *r);
        r->k0 = s->k0;
        r->k1 = s->k1;
        r->strike_px = mt->strike_px;
        for (int x = 0; x < OMDP_ENGINE_EXCHANGES; x++) {
            r->bid[x] = ENG_BID(s, x);
            r->ask[x] = ENG_ASK(s, x);
            r->bid_sz[x] = ENG_BID_SZ(s, x);
            r->ask_sz[x] = ENG_ASK_SZ(s, x);
        }
        r->nb_px = atomic_load_explicit(&s->nb_px, memory_order_relaxed);
        r->no_px = atomic_load_explicit(&s->no_px, memory_order_relaxed);
        r->nb_sz = atomic_load_explicit(&s->nb_sz, memory_order_relaxed);
        r->no_sz = atomic_load_explicit(&s->no_sz, memory_order_relaxed);
        r->nb_ex = atomic_load_explicit(&s->nb_ex, memory_order_relaxed);
        r->no_ex = atomic_load_explicit(&s->no_ex, memory_order_relaxed);
        r->state = s->state;
        r->expiry = mt->expiry;
        r->underlying_id = mt->underlying_id;
        r->put_call = mt->put_call;
        r->root_len = mt->root_len;
        memcpy(r->root, mt->root, sizeof r->root);
        const omdp_series_ref_t *ref = &e->refs[e->refs_in_use][slot];
        r->band_lo = ref->band_lo;
        r->band_hi = ref->band_hi;
        r->parity_lo = ref->parity_lo;
        r->parity_hi = ref->parity_hi;
    }
    *n_series = k;
    return (int64_t)(sizeof(omdp_reshard_handover_t) + (uint64_t)k * sizeof(omdp_reshard_series_t));
}

/* A new slot for series r (its book set below by the caller), linked to its twin and
 * published; OMDP_ENGINE_NO_SLOT when the table is full (counted). */
static uint32_t add_series(struct omdp_engine *e, const omdp_reshard_series_t *r, uint64_t h, uint32_t pos)
{
    uint32_t slot = atomic_load_explicit(&e->n_series, memory_order_relaxed);
    if (slot >= e->cfg.max_series) {
        eng_count(e, C_TABLE_FULL, 1);
        return OMDP_ENGINE_NO_SLOT;
    }
    eng_series_t *s = &e->series[slot];
    s->k0 = r->k0;
    s->k1 = r->k1;
    s->is_put = (uint8_t)(r->k1 >> 63);
    atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
    eng_series_describe(e, slot, r->strike_px, r->expiry, r->underlying_id, r->put_call, r->root_len, r->root);
    s->group = eng_group_find_or_add(e, r->underlying_id, r->expiry);
    if (s->group == OMDP_ENGINE_NO_SLOT)
        eng_count(e, C_GROUPS_FULL, 1);
    eng_series_link(e, slot, h, pos);
    return slot;
}

uint32_t omdp_engine_import_series(omdp_engine_t *engine, const omdp_reshard_series_t *in, uint32_t n,
                                   uint32_t *slots)
{
    struct omdp_engine *e = engine;
    if (!e || (n && !in))
        return 0;
    uint32_t done = 0;
    for (uint32_t i = 0; i < n; i++) {
        const omdp_reshard_series_t *r = &in[i];
        uint64_t h = eng_hash(r->k0, r->k1);
        uint32_t pos = 0;
        uint32_t slot = eng_lookup(e, r->k0, r->k1, h, &pos);
        int fresh = slot == OMDP_ENGINE_NO_SLOT;
        if (fresh && (slot = add_series(e, r, h, pos)) == OMDP_ENGINE_NO_SLOT) {
            if (slots)
                slots[i] = OMDP_ENGINE_NO_SLOT;
            continue;
        }
        eng_series_t *s = &e->series[slot];
        for (int x = 0; x < ENG_LANES; x++) {
            int real = x < OMDP_ENGINE_EXCHANGES;
            ENG_BID(s, x) = real ? r->bid[x] : ENG_NONE_BID;
            ENG_ASK(s, x) = real ? r->ask[x] : ENG_NONE_ASK;
            ENG_BID_SZ(s, x) = real ? r->bid_sz[x] : 0;
            ENG_ASK_SZ(s, x) = real ? r->ask_sz[x] : 0;
        }
        s->state = r->state;
        /* the NBBO under its seqlock: pricing may be reading a series that was already here */
        uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
        atomic_store_explicit(&s->seq, q + 1u, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&s->nb_px, r->nb_px, memory_order_relaxed);
        atomic_store_explicit(&s->no_px, r->no_px, memory_order_relaxed);
        atomic_store_explicit(&s->nb_sz, r->nb_sz, memory_order_relaxed);
        atomic_store_explicit(&s->no_sz, r->no_sz, memory_order_relaxed);
        atomic_store_explicit(&s->nb_ex, r->nb_ex < OMDP_ENGINE_EXCHANGES ? r->nb_ex : ENG_NO_EXCH, memory_order_relaxed);
        atomic_store_explicit(&s->no_ex, r->no_ex < OMDP_ENGINE_EXCHANGES ? r->no_ex : ENG_NO_EXCH, memory_order_relaxed);
        atomic_store_explicit(&s->seq, q + 2u, memory_order_release);
        atomic_store_explicit(&e->dense[slot].seq, q + 2u, memory_order_release);
        /* the limits the old engine checked it against, in the buffer the hot path reads
         * (pricing writes only the other one); its own next refresh supersedes them */
        omdp_series_ref_t *ref = &e->refs[e->refs_in_use][slot];
        ref->band_lo = r->band_lo;
        ref->band_hi = r->band_hi;
        ref->parity_lo = r->parity_lo;
        ref->parity_hi = r->parity_hi;
        if (fresh)
            atomic_store_explicit(&e->n_series, slot + 1u, memory_order_release);
        if (slots)
            slots[i] = slot;
        done++;
    }
    return done;
}

int omdp_engine_carry_refs(omdp_engine_t *engine, const uint32_t *slots, const omdp_series_ref_t *refs, uint32_t n,
                           uint32_t *front_seen)
{
    struct omdp_engine *e = engine;
    /* a publish the hot path has not taken yet: the refresher let go of that buffer when it
     * published and writes it again only after the hot path has taken it */
    uint32_t front = atomic_load_explicit(&e->refs_front, memory_order_acquire);
    if (front == *front_seen)
        return 0;
    *front_seen = front;
    /* that publish may come from a snapshot taken before the import, without the series or
     * (the bucket coming back) with the books this engine had left behind: the carried
     * limits are the newer ones */
    for (uint32_t i = 0; i < n; i++)
        if (slots[i] < e->cfg.max_series)
            e->refs[front][slots[i]] = refs[i];
    return 1;
}

uint32_t omdp_engine_refs_in_use(const omdp_engine_t *engine)
{
    return engine->refs_in_use;
}
