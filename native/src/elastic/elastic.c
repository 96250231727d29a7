/* The elastic partition's life and control plane: create (engines, rings, worker threads),
 * destroy, moving buckets, setting the level, counters (elastic.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_internal.h"
#include "omdp/engine_op.h"

static int is_pow2(uint32_t v) { return v && !(v & (v - 1u)); }

static int config_ok(const omdp_elastic_config_t *c)
{
    return c->workers >= 1 && c->workers <= OMDP_ELASTIC_MAX_WORKERS && is_pow2(c->buckets) &&
           c->buckets <= OMDP_ELASTIC_MAX_BUCKETS && is_pow2(c->ring_msgs) && c->ring_msgs >= 16 &&
           c->ring_msgs <= OMDP_ELASTIC_MAX_RING && is_pow2(c->out_bytes) &&
           c->out_bytes >= 4u * OMDP_ENGINE_MAX_OUT_PER_MSG && c->out_bytes <= (1u << 26) && c->level >= 1 &&
           c->level <= c->workers && c->inline_worker0 <= 1u;
}

static void wake_all(omdp_elastic_t *el)
{
    pthread_mutex_lock(&el->lock);
    pthread_cond_broadcast(&el->wake);
    pthread_mutex_unlock(&el->lock);
}

void omdp_elastic_destroy(omdp_elastic_t *el)
{
    if (!el)
        return;
    atomic_store_explicit(&el->stop, 1u, memory_order_seq_cst);
    if (el->lock_ready)
        wake_all(el);
    for (uint32_t i = 0; el->workers && i < el->cfg.workers; i++) {
        if (el->workers[i].started)
            pthread_join(el->workers[i].thread, NULL);
        free(el->workers[i].scratch);
    }
    for (uint32_t b = 0; el->buckets && b < el->cfg.buckets; b++) {
        if (el->buckets[b].engine)
            omdp_engine_release(el->buckets[b].engine);
        free(el->buckets[b].in);
        free(el->buckets[b].out);
    }
    if (el->lock_ready) {
        pthread_cond_destroy(&el->wake);
        pthread_mutex_destroy(&el->lock);
    }
    free(el->workers);
    free(el->buckets);
    free(el->d_head);
    free(el->d_tail);
    free(el->d_touched);
    free(el->d_is_touched);
    free(el->d_bucket_of);
    free(el->d_idx);
    free(el->d_count);
    free(el->d_start);
    free(el->d_mode);
    free(el);
}

static int alloc_buckets(omdp_elastic_t *el)
{
    const omdp_elastic_config_t *c = &el->cfg;
    for (uint32_t b = 0; b < c->buckets; b++) {
        el_bucket_t *k = &el->buckets[b];
        int eerr = 0;
        k->engine = omdp_engine_create(&c->engine, &eerr);
        if (!k->engine)
            return eerr == OMDP_ENGINE_ENOMEM ? OMDP_ELASTIC_ENOMEM : OMDP_ELASTIC_EENGINE;
        omdp_engine_prefault(k->engine); /* touched here, not on the hot path */
        k->in = aligned_alloc(64, (size_t)c->ring_msgs * sizeof(omdp_opra_msg_t));
        k->out = aligned_alloc(64, c->out_bytes);
        if (!k->in || !k->out)
            return OMDP_ELASTIC_ENOMEM;
        memset(k->in, 0, (size_t)c->ring_msgs * sizeof(omdp_opra_msg_t)); /* touched here, not on the hot path */
        memset(k->out, 0, c->out_bytes);
        uint32_t w = b % c->level;
        atomic_init(&k->owner, w);
        atomic_init(&k->want, w);
    }
    return OMDP_ELASTIC_OK;
}

omdp_elastic_t *omdp_elastic_create(const omdp_elastic_config_t *cfg, int *err)
{
    int dummy;
    if (!err)
        err = &dummy;
    if (!cfg || !config_ok(cfg)) {
        *err = OMDP_ELASTIC_EINVAL;
        return NULL;
    }
    omdp_elastic_t *el = aligned_alloc(64, sizeof *el);
    if (!el) {
        *err = OMDP_ELASTIC_ENOMEM;
        return NULL;
    }
    memset(el, 0, sizeof *el);
    el->cfg = *cfg;
    atomic_init(&el->level, cfg->level);
    el->buckets = aligned_alloc(64, sizeof(el_bucket_t) * cfg->buckets);
    el->workers = aligned_alloc(64, sizeof(el_worker_t) * cfg->workers);
    el->d_head = calloc(cfg->buckets, sizeof(uint64_t));
    el->d_tail = calloc(cfg->buckets, sizeof(uint64_t));
    el->d_touched = calloc(cfg->buckets, sizeof(uint32_t));
    el->d_is_touched = calloc(cfg->buckets, 1);
    el->d_bucket_of = calloc(OMDP_ELASTIC_INLINE_CHUNK, sizeof(uint16_t));
    el->d_idx = calloc(OMDP_ELASTIC_INLINE_CHUNK, sizeof(uint32_t));
    el->d_count = calloc(cfg->buckets, sizeof(uint32_t));
    el->d_start = calloc(cfg->buckets, sizeof(uint32_t));
    el->d_mode = calloc(cfg->buckets, 1);
    if (!el->buckets || !el->workers || !el->d_head || !el->d_tail || !el->d_touched || !el->d_is_touched ||
        !el->d_bucket_of || !el->d_idx || !el->d_count || !el->d_start || !el->d_mode) {
        free(el->buckets);
        free(el->workers);
        el->buckets = NULL;
        el->workers = NULL;
        *err = OMDP_ELASTIC_ENOMEM;
        omdp_elastic_destroy(el);
        return NULL;
    }
    memset(el->buckets, 0, sizeof(el_bucket_t) * cfg->buckets);
    memset(el->workers, 0, sizeof(el_worker_t) * cfg->workers);
    if (pthread_mutex_init(&el->lock, NULL) != 0 || pthread_cond_init(&el->wake, NULL) != 0) {
        *err = OMDP_ELASTIC_ETHREAD;
        omdp_elastic_destroy(el);
        return NULL;
    }
    el->lock_ready = 1;
    int rc = alloc_buckets(el);
    if (rc != OMDP_ELASTIC_OK) {
        *err = rc;
        omdp_elastic_destroy(el);
        return NULL;
    }
    for (uint32_t i = 0; i < cfg->workers; i++) {
        el_worker_t *w = &el->workers[i];
        w->el = el;
        w->index = i;
        w->scratch_cap = cfg->out_bytes;
        w->scratch = aligned_alloc(64, cfg->out_bytes);
        if (!w->scratch) {
            *err = OMDP_ELASTIC_ENOMEM;
            omdp_elastic_destroy(el);
            return NULL;
        }
        memset(w->scratch, 0, cfg->out_bytes);
    }
    if (cfg->inline_worker0) {
        atomic_store_explicit(&el->workers[0].alive, 1u, memory_order_relaxed);
        atomic_store_explicit(&el->workers[0].tid, 0u, memory_order_relaxed);
    }
    for (uint32_t i = cfg->inline_worker0 ? 1u : 0u; i < cfg->workers; i++) {
        if (pthread_create(&el->workers[i].thread, NULL, el_worker_main, &el->workers[i]) != 0) {
            *err = OMDP_ELASTIC_ETHREAD;
            omdp_elastic_destroy(el);
            return NULL;
        }
        el->workers[i].started = 1;
    }
    *err = OMDP_ELASTIC_OK;
    return el;
}

uint64_t omdp_elastic_pass(omdp_elastic_t *el)
{
    if (!el || !el->cfg.inline_worker0)
        return 0;
    uint32_t owned, handed;
    return el_worker_pass(&el->workers[0], &owned, &handed);
}

int omdp_elastic_move(omdp_elastic_t *el, uint32_t bucket, uint32_t worker)
{
    if (!el || bucket >= el->cfg.buckets || worker >= el->cfg.workers)
        return OMDP_ELASTIC_EINVAL;
    atomic_store_explicit(&el->buckets[bucket].want, worker, memory_order_seq_cst);
    if (atomic_load_explicit(&el->asleep, memory_order_seq_cst))
        wake_all(el);
    return OMDP_ELASTIC_OK;
}

int omdp_elastic_set_level(omdp_elastic_t *el, uint32_t level)
{
    if (!el || level < 1 || level > el->cfg.workers)
        return OMDP_ELASTIC_EINVAL;
    uint32_t old = atomic_exchange_explicit(&el->level, level, memory_order_seq_cst);
    if (old != level)
        atomic_fetch_add_explicit(&el->level_changes, 1u, memory_order_relaxed);
    /* new wants: buckets of workers at or above the level go to the least loaded active one,
     * then the active workers' shares are evened out to within one bucket */
    uint32_t count[OMDP_ELASTIC_MAX_WORKERS] = {0};
    uint32_t nb = el->cfg.buckets;
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t w = atomic_load_explicit(&el->buckets[b].want, memory_order_relaxed);
        if (w < level)
            count[w]++;
    }
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t w = atomic_load_explicit(&el->buckets[b].want, memory_order_relaxed);
        uint32_t lo = 0;
        for (uint32_t i = 1; i < level; i++)
            if (count[i] < count[lo])
                lo = i;
        if (w >= level) {
            atomic_store_explicit(&el->buckets[b].want, lo, memory_order_seq_cst);
            count[lo]++;
        } else if (count[w] > count[lo] + 1u) {
            atomic_store_explicit(&el->buckets[b].want, lo, memory_order_seq_cst);
            count[w]--;
            count[lo]++;
        }
    }
    wake_all(el);
    return OMDP_ELASTIC_OK;
}

int32_t omdp_elastic_owner(const omdp_elastic_t *el, uint32_t bucket, uint32_t *wanted)
{
    if (!el || bucket >= el->cfg.buckets)
        return OMDP_ELASTIC_EINVAL;
    if (wanted)
        *wanted = atomic_load_explicit(&el->buckets[bucket].want, memory_order_relaxed);
    return (int32_t)atomic_load_explicit(&el->buckets[bucket].owner, memory_order_relaxed);
}

void omdp_elastic_read_counters(const omdp_elastic_t *el, omdp_elastic_counters_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!el)
        return;
    out->dispatched = atomic_load_explicit(&el->dispatched, memory_order_relaxed);
    out->ring_full = atomic_load_explicit(&el->ring_full, memory_order_relaxed);
    out->bad_record = atomic_load_explicit(&el->bad_record, memory_order_relaxed);
    out->collected = atomic_load_explicit(&el->collected, memory_order_relaxed);
    out->moves = atomic_load_explicit(&el->moves, memory_order_relaxed);
    out->level = atomic_load_explicit(&el->level, memory_order_relaxed);
    out->level_changes = atomic_load_explicit(&el->level_changes, memory_order_relaxed);
    out->suspended = atomic_load_explicit(&el->asleep, memory_order_relaxed);
    out->wakeups = atomic_load_explicit(&el->wakeups, memory_order_relaxed);
    out->inplace = atomic_load_explicit(&el->inplace, memory_order_relaxed);
    for (uint32_t i = 0; i < el->cfg.workers; i++)
        out->processed += atomic_load_explicit(&el->workers[i].processed, memory_order_relaxed);
}

int omdp_elastic_read_worker(const omdp_elastic_t *el, uint32_t worker, omdp_elastic_worker_stats_t *out)
{
    if (!el || !out || worker >= el->cfg.workers)
        return OMDP_ELASTIC_EINVAL;
    const el_worker_t *w = &el->workers[worker];
    out->processed = atomic_load_explicit(&w->processed, memory_order_relaxed);
    out->busy_ns = atomic_load_explicit(&w->busy_ns, memory_order_relaxed);
    out->runs = atomic_load_explicit(&w->runs, memory_order_relaxed);
    out->handoffs = atomic_load_explicit(&w->handoffs, memory_order_relaxed);
    out->alive = atomic_load_explicit(&w->alive, memory_order_relaxed);
    out->tid = atomic_load_explicit(&w->tid, memory_order_relaxed);
    return OMDP_ELASTIC_OK;
}

void omdp_elastic_engine_counters(const omdp_elastic_t *el, omdp_engine_counters_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!el)
        return;
    enum { N = sizeof(omdp_engine_counters_t) / sizeof(uint64_t) };
    for (uint32_t b = 0; b < el->cfg.buckets; b++) {
        omdp_engine_counters_t c;
        omdp_engine_read_counters(el->buckets[b].engine, &c);
        uint64_t v[N], s[N];
        memcpy(v, &c, sizeof c);
        memcpy(s, out, sizeof s);
        for (int i = 0; i < N; i++)
            s[i] += v[i];
        memcpy(out, s, sizeof s);
    }
}

omdp_engine_t *omdp_elastic_bucket_engine(omdp_elastic_t *el, uint32_t bucket)
{
    if (!el || bucket >= el->cfg.buckets)
        return NULL;
    return el->buckets[bucket].engine;
}

const char *omdp_elastic_strerror(int err)
{
    switch (err) {
    case OMDP_ELASTIC_OK: return "ok";
    case OMDP_ELASTIC_EINVAL: return "invalid argument or setting out of range";
    case OMDP_ELASTIC_ENOMEM: return "out of memory";
    case OMDP_ELASTIC_ETHREAD: return "a worker thread could not be started";
    case OMDP_ELASTIC_EENGINE: return "a bucket engine refused its config";
    default: return "unknown elastic error";
    }
}
