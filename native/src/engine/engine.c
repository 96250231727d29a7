/* Decision engine lifecycle: create (every allocation happens here; a live operator pre-faults
 * the memory where it starts, so its hot path takes no first-touch fault), prefault,
 * destroy, counters, error strings, the exchange map. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "omdp/engine_op.h"

static void engine_free(struct omdp_engine *e);

static uint32_t pow2_at_least(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return (uint32_t)p;
}

#define ENG_ARRAYS 10

/* The engine's arrays (their addresses in ptrs, may be NULL) and sizes, in one place for create,
 * free and prefault. */
static void engine_arrays(const struct omdp_engine *e, void *ptrs[ENG_ARRAYS], size_t bytes[ENG_ARRAYS])
{
    size_t ns = e->cfg.max_series, ng = e->cfg.max_groups;
    size_t ts = (size_t)e->table_mask + 1, gs = (size_t)e->gtable_mask + 1;
    ptrs[0] = e->series, bytes[0] = ns * sizeof(eng_series_t);
    ptrs[1] = e->meta, bytes[1] = ns * sizeof(eng_series_meta_t);
    ptrs[2] = e->dense, bytes[2] = ns * sizeof(eng_dense_t);
    ptrs[3] = (void *)e->table, bytes[3] = ts * sizeof(uint64_t);
    ptrs[4] = (void *)e->gtable, bytes[4] = gs * sizeof(uint64_t);
    ptrs[5] = e->groups, bytes[5] = ng * sizeof(omdp_engine_group_info_t);
    ptrs[6] = e->refs[0], bytes[6] = ns * sizeof(omdp_series_ref_t);
    ptrs[7] = e->refs[1], bytes[7] = ns * sizeof(omdp_series_ref_t);
    ptrs[8] = e->grefs[0], bytes[8] = ng * sizeof(omdp_group_ref_t); /* zero: disabled */
    ptrs[9] = e->grefs[1], bytes[9] = ng * sizeof(omdp_group_ref_t);
}

static void refs_disable_all(omdp_series_ref_t *refs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        refs[i].band_lo = INT64_MIN;
        refs[i].band_hi = INT64_MAX;
        refs[i].parity_lo = INT64_MIN;
        refs[i].parity_hi = INT64_MAX;
    }
}

omdp_engine_t *omdp_engine_create(const omdp_engine_config_t *cfg, int *err)
{
    int dummy;
    if (!err)
        err = &dummy;
    if (!cfg || cfg->max_series == 0 || cfg->max_series > OMDP_ENGINE_MAX_CAPACITY || cfg->max_groups == 0 ||
        cfg->max_groups > OMDP_ENGINE_MAX_CAPACITY) {
        *err = OMDP_ENGINE_EINVAL;
        return NULL;
    }
    struct omdp_engine *e = eng_map_zeroed(sizeof *e);
    if (!e) {
        *err = OMDP_ENGINE_ENOMEM;
        return NULL;
    }
    e->cfg = *cfg;
    e->table_mask = pow2_at_least(2ull * cfg->max_series) - 1;
    e->gtable_mask = pow2_at_least(2ull * cfg->max_groups) - 1;
    /* Not touched here: a fresh mapping is zero, and its pages cost only where they are used
     * (a replay task's engine sees a fraction of max_series); omdp_engine_prefault is for
     * a live operator, whose hot path must not take first-touch faults. */
    void *unused[ENG_ARRAYS];
    size_t bytes[ENG_ARRAYS];
    engine_arrays(e, unused, bytes);
    e->series = eng_map_zeroed(bytes[0]);
    e->meta = eng_map_zeroed(bytes[1]);
    e->dense = eng_map_zeroed(bytes[2]);
    e->table = eng_map_zeroed(bytes[3]);
    e->gtable = eng_map_zeroed(bytes[4]);
    e->groups = eng_map_zeroed(bytes[5]);
    e->refs[0] = eng_map_zeroed(bytes[6]);
    e->refs[1] = eng_map_zeroed(bytes[7]);
    e->grefs[0] = eng_map_zeroed(bytes[8]);
    e->grefs[1] = eng_map_zeroed(bytes[9]);
    if (!e->series || !e->meta || !e->dense || !e->table || !e->gtable || !e->groups || !e->refs[0] || !e->refs[1] ||
        !e->grefs[0] || !e->grefs[1]) {
        engine_free(e);
        *err = OMDP_ENGINE_ENOMEM;
        return NULL;
    }
    refs_disable_all(e->refs[0], cfg->max_series);
    refs_disable_all(e->refs[1], cfg->max_series);
    e->sample_left = cfg->sample_every;
    atomic_init(&e->refs_front, 0);
    atomic_init(&e->refs_seen, 0);
    e->refs_in_use = 0;
    atomic_init(&e->owners, 1);
    *err = OMDP_ENGINE_OK;
    return e;
}

static void engine_free(struct omdp_engine *e)
{
    void *ptrs[ENG_ARRAYS];
    size_t bytes[ENG_ARRAYS];
    engine_arrays(e, ptrs, bytes);
    for (int i = 0; i < ENG_ARRAYS; i++)
        eng_unmap(ptrs[i], bytes[i]);
    eng_unmap(e, sizeof *e);
}

uint64_t omdp_engine_state_bytes(const omdp_engine_t *e)
{
    if (!e)
        return 0;
    void *ptrs[ENG_ARRAYS];
    size_t bytes[ENG_ARRAYS];
    engine_arrays(e, ptrs, bytes);
    uint64_t total = sizeof *e;
    for (int i = 0; i < ENG_ARRAYS; i++)
        total += bytes[i];
    return total;
}

void omdp_engine_prefault(omdp_engine_t *e)
{
    if (!e)
        return;
    void *ptrs[ENG_ARRAYS];
    size_t bytes[ENG_ARRAYS];
    engine_arrays(e, ptrs, bytes);
    for (int i = 0; i < ENG_ARRAYS; i++)
        eng_prefault(ptrs[i], bytes[i]);
}

void omdp_engine_retain(omdp_engine_t *e)
{
    if (e)
        atomic_fetch_add_explicit(&e->owners, 1, memory_order_relaxed);
}

void omdp_engine_release(omdp_engine_t *e)
{
    if (e && atomic_fetch_sub_explicit(&e->owners, 1, memory_order_acq_rel) == 1)
        engine_free(e);
}

void omdp_engine_destroy(omdp_engine_t *e)
{
    omdp_engine_release(e);
}

void omdp_engine_read_counters(const omdp_engine_t *e, omdp_engine_counters_t *out)
{
    if (!e || !out)
        return;
    uint64_t v[C_COUNT];
    for (int i = 0; i < C_COUNT; i++)
        v[i] = atomic_load_explicit(&((struct omdp_engine *)e)->counters[i], memory_order_relaxed);
    v[C_SERIES] = atomic_load_explicit(&((struct omdp_engine *)e)->n_series, memory_order_relaxed);
    v[C_GROUPS] = atomic_load_explicit(&((struct omdp_engine *)e)->n_groups, memory_order_relaxed);
    memcpy(out, v, sizeof v);
}

uint32_t omdp_engine_series_count(const omdp_engine_t *e)
{
    return e ? atomic_load_explicit(&((struct omdp_engine *)e)->n_series, memory_order_acquire) : 0;
}

uint32_t omdp_engine_group_count(const omdp_engine_t *e)
{
    return e ? atomic_load_explicit(&((struct omdp_engine *)e)->n_groups, memory_order_acquire) : 0;
}

uint32_t omdp_engine_max_series(const omdp_engine_t *e)
{
    return e ? e->cfg.max_series : 0;
}

int omdp_engine_exchange_index(uint8_t participant)
{
    return (int)eng_exch_of[participant] - 1;
}

const char *omdp_engine_strerror(int err)
{
    switch (err) {
    case OMDP_ENGINE_OK: return "ok";
    case OMDP_ENGINE_EINVAL: return "invalid argument (NULL pointer or capacity out of range)";
    case OMDP_ENGINE_ENOMEM: return "out of memory";
    case OMDP_ENGINE_EOUTSMALL: return "output capacity below OMDP_ENGINE_MAX_OUT_PER_MSG";
    case OMDP_ENGINE_EBUSY: return "the hot path has not yet taken the previous publish";
    case OMDP_ENGINE_ENOTBEGUN: return "refs_publish without a successful refs_begin";
    default: return "unknown engine error";
    }
}
