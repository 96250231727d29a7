/* Decision engine lifecycle: create (every allocation and first touch happens here, never on
 * the hot path), destroy, counters, error strings, the exchange map. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* Zeroed, aligned memory. An array of 2 MiB or more (the series books, their limits, the
 * table) is placed on 2 MiB boundaries and asked for transparent huge pages before it is
 * touched: the hot path reads it at random, and on 4 KiB pages nearly every message missed
 * the TLB several times (a page walk, nested in a VM). Where huge pages are refused the
 * memory is the same, on small pages. */
static void *alloc_zeroed(size_t align, size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes >= huge)
        align = huge;
    size_t rounded = (bytes + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded ? rounded : align);
    if (!p)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= huge)
        (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    memset(p, 0, rounded ? rounded : align);
    return p;
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
    struct omdp_engine *e = alloc_zeroed(64, sizeof *e);
    if (!e) {
        *err = OMDP_ENGINE_ENOMEM;
        return NULL;
    }
    e->cfg = *cfg;
    uint32_t tsize = pow2_at_least(2ull * cfg->max_series);
    uint32_t gsize = pow2_at_least(2ull * cfg->max_groups);
    e->table_mask = tsize - 1;
    e->gtable_mask = gsize - 1;
    e->series = alloc_zeroed(64, (size_t)cfg->max_series * sizeof(eng_series_t));
    e->meta = alloc_zeroed(64, (size_t)cfg->max_series * sizeof(eng_series_meta_t));
    e->twins = alloc_zeroed(64, (size_t)cfg->max_series * sizeof(uint32_t));
    e->table = alloc_zeroed(64, (size_t)tsize * sizeof(uint64_t));
    e->gtable = alloc_zeroed(64, (size_t)gsize * sizeof(uint64_t));
    e->groups = alloc_zeroed(64, (size_t)cfg->max_groups * sizeof(omdp_engine_group_info_t));
    e->refs[0] = alloc_zeroed(64, (size_t)cfg->max_series * sizeof(omdp_series_ref_t));
    e->refs[1] = alloc_zeroed(64, (size_t)cfg->max_series * sizeof(omdp_series_ref_t));
    e->grefs[0] = alloc_zeroed(64, (size_t)cfg->max_groups * sizeof(omdp_group_ref_t)); /* zero: disabled */
    e->grefs[1] = alloc_zeroed(64, (size_t)cfg->max_groups * sizeof(omdp_group_ref_t));
    if (!e->series || !e->meta || !e->twins || !e->table || !e->gtable || !e->groups || !e->refs[0] || !e->refs[1] ||
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
    free(e->series);
    free(e->meta);
    free(e->twins);
    free((void *)e->table);
    free((void *)e->gtable);
    free(e->groups);
    free(e->refs[0]);
    free(e->refs[1]);
    free(e->grefs[0]);
    free(e->grefs[1]);
    free(e);
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
    switch (participant) {
    case 'A': return 0;
    case 'B': return 1;
    case 'C': return 2;
    case 'I': return 3;
    case 'P': return 4;
    case 'X': return 5;
    default: return -1;
    }
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
