/* What pricing and tools read while the hot path runs: series (with a consistent NBBO per
 * series, by seqlock), groups, and a series' slot by its key. */
#include "engine_internal.h"

/* Series `slot` of the n in use as pricing sees it, its NBBO read under the seqlock; returns
 * the (even) sequence the NBBO was read at. */
static uint32_t read_series(struct omdp_engine *e, uint32_t slot, uint32_t n, omdp_engine_series_info_t *o)
{
    eng_series_t *s = &e->series[slot];
    const eng_series_meta_t *m = &e->meta[slot];
    int64_t nb, no;
    uint32_t nbs, nos, q0;
    uint8_t nbx, nox;
    for (;;) {
        q0 = atomic_load_explicit(&s->seq, memory_order_acquire);
        nb = atomic_load_explicit(&s->nb_px, memory_order_relaxed);
        no = atomic_load_explicit(&s->no_px, memory_order_relaxed);
        nbs = atomic_load_explicit(&s->nb_sz, memory_order_relaxed);
        nos = atomic_load_explicit(&s->no_sz, memory_order_relaxed);
        nbx = atomic_load_explicit(&s->nb_ex, memory_order_relaxed);
        nox = atomic_load_explicit(&s->no_ex, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        uint32_t q1 = atomic_load_explicit(&s->seq, memory_order_relaxed);
        if (q0 == q1 && !(q0 & 1u))
            break;
    }
    uint32_t twin = atomic_load_explicit(&s->twin, memory_order_relaxed);
    memset(o, 0, sizeof *o);
    o->strike_px = m->strike_px;
    o->bid_px = nb == ENG_NONE_BID ? 0 : nb;
    o->offer_px = no == ENG_NONE_ASK ? 0 : no;
    o->bid_size = nb == ENG_NONE_BID ? 0 : nbs;
    o->offer_size = no == ENG_NONE_ASK ? 0 : nos;
    o->expiry = m->expiry;
    o->underlying_id = m->underlying_id;
    o->group = s->group;
    o->twin = twin < n ? twin : OMDP_ENGINE_NO_SLOT;
    o->put_call = m->put_call;
    o->bid_part = nb == ENG_NONE_BID ? 0 : eng_exch_code_of(nbx);
    o->offer_part = no == ENG_NONE_ASK ? 0 : eng_exch_code_of(nox);
    o->root_len = m->root_len;
    memcpy(o->root, m->root, sizeof o->root);
    return q0;
}

uint32_t omdp_engine_snapshot_series(const omdp_engine_t *ce, uint32_t first, omdp_engine_series_info_t *out,
                                     uint32_t cap)
{
    struct omdp_engine *e = (struct omdp_engine *)ce;
    if (!e || !out)
        return 0;
    uint32_t n = atomic_load_explicit(&e->n_series, memory_order_acquire);
    if (first >= n)
        return 0;
    uint32_t count = n - first < cap ? n - first : cap;
    for (uint32_t k = 0; k < count; k++)
        read_series(e, first + k, n, &out[k]);
    return count;
}

static inline int priced_differ(const omdp_engine_series_info_t *a, const omdp_engine_series_info_t *b)
{
    return (a->strike_px != b->strike_px) | (a->bid_px != b->bid_px) | (a->offer_px != b->offer_px) |
           (a->put_call != b->put_call) | (a->group != b->group) | (a->twin != b->twin);
}

uint32_t omdp_engine_snapshot_update(const omdp_engine_t *ce, omdp_engine_series_info_t *infos, uint32_t *seqs,
                                     uint32_t *twins, uint32_t cap, uint32_t *n_seen, uint32_t *changed)
{
    struct omdp_engine *e = (struct omdp_engine *)ce;
    if (!e || !infos || !seqs || !twins || !n_seen || !changed)
        return 0;
    uint32_t n = atomic_load_explicit(&e->n_series, memory_order_acquire);
    if (n > cap)
        n = cap;
    uint32_t seen = *n_seen < n ? *n_seen : n, count = 0;
    for (uint32_t slot = 0; slot < seen; slot++) {
        /* the cheap test first, on the engine's dense copy of each series' twin and
         * sequence (8 bytes a series, read in order): a sequence written since the last update,
         * or a twin linked or newly within n, sends the series to the seqlock read. A copy
         * still behind the series' own sequence only costs a read that finds nothing new. */
        uint32_t tw = atomic_load_explicit(&e->dense[slot].twin, memory_order_relaxed);
        tw = tw < n ? tw : OMDP_ENGINE_NO_SLOT;
        if (atomic_load_explicit(&e->dense[slot].seq, memory_order_acquire) == seqs[slot] && tw == twins[slot])
            continue;
        omdp_engine_series_info_t now;
        seqs[slot] = read_series(e, slot, n, &now);
        twins[slot] = now.twin;
        if (priced_differ(&now, &infos[slot]))
            changed[count++] = slot;
        infos[slot] = now;
    }
    for (uint32_t slot = seen; slot < n; slot++) {
        seqs[slot] = read_series(e, slot, n, &infos[slot]);
        twins[slot] = infos[slot].twin;
        changed[count++] = slot;
    }
    *n_seen = n;
    return count;
}

uint32_t omdp_engine_series_priced_changed(const omdp_engine_series_info_t *now, const omdp_engine_series_info_t *old,
                                           uint32_t n, uint8_t *changed)
{
    if (!now || !old || !changed)
        return 0;
    uint32_t count = 0;
    for (uint32_t k = 0; k < n; k++) {
        const uint8_t c = (uint8_t)priced_differ(&now[k], &old[k]);
        changed[k] = c;
        count += c;
    }
    return count;
}

uint32_t omdp_engine_snapshot_groups(const omdp_engine_t *ce, omdp_engine_group_info_t *out, uint32_t cap)
{
    struct omdp_engine *e = (struct omdp_engine *)ce;
    if (!e || !out)
        return 0;
    uint32_t n = atomic_load_explicit(&e->n_groups, memory_order_acquire);
    uint32_t count = n < cap ? n : cap;
    memcpy(out, e->groups, (size_t)count * sizeof *out);
    return count;
}

uint32_t omdp_engine_find_series(const omdp_engine_t *ce, const char *root, uint8_t root_len, uint32_t expiry,
                                 int64_t strike_px, uint8_t put_call)
{
    const struct omdp_engine *e = ce;
    if (!e || !root || root_len > 6 || strike_px <= 0 || (put_call != 'C' && put_call != 'P'))
        return OMDP_ENGINE_NO_SLOT;
    int32_t code = eng_expiry_code(expiry);
    if (code < 0)
        return OMDP_ENGINE_NO_SLOT;
    char r[6] = {0};
    memcpy(r, root, root_len);
    uint64_t k0 = eng_root_bits(r) | ((uint64_t)code << 48);
    uint64_t k1 = (uint64_t)strike_px | ((uint64_t)(put_call == 'P') << 63);
    uint32_t pos;
    return eng_lookup(e, k0, k1, eng_hash(k0, k1), &pos);
}
