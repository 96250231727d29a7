/* The run's reshard segment (reshard.h): create, open, the move log, owners, hand-over area.
 *
 * Layout: a header (counters as C11 atomics), the owner and home tables, the move log, then
 * the hand-over area on a 64-byte boundary. Only C touches it (Python goes through the
 * functions here), so the atomics are plain _Atomic fields. */
#define _GNU_SOURCE
#include "omdp/reshard.h"
#include "omdp/shm_region.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SEG_MAGIC 0x4452414853524D4FULL /* "OMRSHARD" */
#define SEG_VERSION 1u
#define REQ_CLOSED (1ull << 63) /* in `requested`: a feed handler has ended, no more moves */

typedef struct seg_move {
    _Atomic uint64_t id;
    uint32_t bucket, to, from, n_series;
    int64_t requested_ns, exported_ns, installed_ns;
    uint64_t state_bytes, held;
    int64_t hold_ns;
    _Atomic uint64_t installed;
} seg_move_t;

typedef struct seg_hdr {
    uint64_t magic;
    uint32_t version, buckets, n_engines, n_fh;
    uint64_t size, handover_off, handover_cap;
    _Atomic uint64_t claimed;   /* moves claimed by triggers */
    _Atomic uint64_t requested; /* moves published to the feed handlers (| REQ_CLOSED) */
    _Atomic uint64_t exported;  /* last move whose state is in the hand-over area */
    _Atomic uint64_t installed; /* last move installed */
    _Atomic uint64_t attached;  /* parties counted in */
    _Atomic uint64_t ended;     /* feed handlers whose stream ended */
    uint16_t home[OMDP_RESHARD_MAX_BUCKETS];
    _Atomic uint16_t owner[OMDP_RESHARD_MAX_BUCKETS];
    seg_move_t moves[OMDP_RESHARD_LOG];
} seg_hdr_t;

struct omdp_reshard_seg {
    seg_hdr_t *h;
    size_t size;
};

static uint64_t round64(uint64_t v) { return (v + 63u) & ~(uint64_t)63u; }

static int name_ok(const char *name)
{
    if (!name || !name[0] || strlen(name) >= 250)
        return 0;
    return strchr(name + 1, '/') == NULL; /* "/omdp-..." or "omdp-...": one component */
}

/* The handle of a mapped segment; the mapping is released when the handle cannot be made. */
static omdp_reshard_seg_t *wrap(void *p, size_t size, int *err)
{
    omdp_reshard_seg_t *s = calloc(1, sizeof *s);
    if (!s) {
        munmap(p, size);
        *err = OMDP_RESHARD_ESYS;
        return NULL;
    }
    s->h = p;
    s->size = size;
    return s;
}

omdp_reshard_seg_t *omdp_reshard_create(const char *name, uint32_t buckets, uint32_t n_engines, uint32_t n_fh,
                                        const uint16_t *home, uint64_t handover_cap, int *err)
{
    int dummy;
    if (!err)
        err = &dummy;
    *err = OMDP_RESHARD_EINVAL;
    if (!name_ok(name) || !home || buckets == 0 || buckets > OMDP_RESHARD_MAX_BUCKETS || (buckets & (buckets - 1)) ||
        n_engines == 0 || n_engines > OMDP_RESHARD_MAX_ENGINES || n_fh == 0 || n_fh > OMDP_RESHARD_MAX_FH ||
        handover_cap < sizeof(omdp_reshard_handover_t) || handover_cap > ((uint64_t)1 << 36))
        return NULL;
    for (uint32_t b = 0; b < buckets; b++)
        if (home[b] >= n_engines)
            return NULL;
    uint64_t off = round64(sizeof(seg_hdr_t));
    uint64_t size = off + round64(handover_cap);
    shm_unlink(name); /* a segment left by a run that died under this name */
    void *p = NULL;
    if (omdp_shm_create(name, size, 0, &p, NULL) != 0) {
        *err = OMDP_RESHARD_ESYS;
        return NULL;
    }
    omdp_reshard_seg_t *s = wrap(p, (size_t)size, err);
    if (!s) {
        shm_unlink(name);
        return NULL;
    }
    seg_hdr_t *h = s->h; /* fresh pages are zero */
    h->version = SEG_VERSION;
    h->buckets = buckets;
    h->n_engines = n_engines;
    h->n_fh = n_fh;
    h->size = size;
    h->handover_off = off;
    h->handover_cap = handover_cap;
    for (uint32_t b = 0; b < OMDP_RESHARD_MAX_BUCKETS; b++) {
        h->home[b] = b < buckets ? home[b] : OMDP_RESHARD_NO_OWNER;
        atomic_store_explicit(&h->owner[b], h->home[b], memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_release);
    h->magic = SEG_MAGIC; /* last: an opener that sees it sees the rest */
    *err = 0;
    return s;
}

omdp_reshard_seg_t *omdp_reshard_open(const char *name, int *err)
{
    int dummy;
    if (!err)
        err = &dummy;
    if (!name_ok(name)) {
        *err = OMDP_RESHARD_EINVAL;
        return NULL;
    }
    void *p = NULL;
    uint64_t size = 0;
    int rc = omdp_shm_map(name, 1, 0, round64(sizeof(seg_hdr_t)), &p, &size, NULL);
    if (rc != 0) {
        *err = rc == -ENODATA ? OMDP_RESHARD_EFORMAT : OMDP_RESHARD_ESYS;
        return NULL;
    }
    omdp_reshard_seg_t *s = wrap(p, (size_t)size, err);
    if (!s)
        return NULL;
    const seg_hdr_t *h = s->h;
    atomic_thread_fence(memory_order_acquire);
    if (h->magic != SEG_MAGIC || h->version != SEG_VERSION || h->size != s->size ||
        h->handover_off + h->handover_cap > h->size || h->buckets == 0 || h->buckets > OMDP_RESHARD_MAX_BUCKETS ||
        h->n_engines == 0 || h->n_engines > OMDP_RESHARD_MAX_ENGINES || h->n_fh == 0 ||
        h->n_fh > OMDP_RESHARD_MAX_FH) {
        omdp_reshard_close(s);
        *err = OMDP_RESHARD_EFORMAT;
        return NULL;
    }
    *err = 0;
    return s;
}

void omdp_reshard_close(omdp_reshard_seg_t *seg)
{
    if (!seg)
        return;
    munmap(seg->h, seg->size);
    free(seg);
}

int omdp_reshard_unlink(const char *name)
{
    if (!name_ok(name))
        return OMDP_RESHARD_EINVAL;
    return shm_unlink(name) == 0 ? 0 : OMDP_RESHARD_ESYS;
}

static seg_move_t *slot_of(const omdp_reshard_seg_t *seg, uint64_t id)
{
    return &seg->h->moves[id % OMDP_RESHARD_LOG];
}

int64_t omdp_reshard_request(omdp_reshard_seg_t *seg, uint32_t bucket, uint32_t to, int64_t requested_ns)
{
    if (!seg)
        return OMDP_RESHARD_EINVAL;
    seg_hdr_t *h = seg->h;
    if (bucket >= h->buckets || to >= h->n_engines)
        return OMDP_RESHARD_EINVAL;
    uint64_t done = atomic_load_explicit(&h->installed, memory_order_acquire);
    if (atomic_load_explicit(&h->owner[bucket], memory_order_relaxed) == to)
        return OMDP_RESHARD_ESAME;
    uint64_t expect = done;
    /* one move in flight: claim id done + 1 only while nothing else is claimed */
    if (!atomic_compare_exchange_strong_explicit(&h->claimed, &expect, done + 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return OMDP_RESHARD_EBUSY;
    uint64_t id = done + 1;
    seg_move_t *m = slot_of(seg, id);
    atomic_store_explicit(&m->installed, 0, memory_order_relaxed);
    m->bucket = bucket;
    m->to = to;
    m->from = OMDP_RESHARD_NO_OWNER;
    m->n_series = 0;
    m->requested_ns = requested_ns;
    m->exported_ns = m->installed_ns = m->hold_ns = 0;
    m->state_bytes = m->held = 0;
    atomic_store_explicit(&m->id, id, memory_order_relaxed);
    /* publish unless a handler has ended (the CLOSED bit, set by omdp_reshard_fh_ended: one
     * read-modify-write each on one word, so either the handler sees this move or this fails) */
    uint64_t prev = id - 1;
    if (!atomic_compare_exchange_strong_explicit(&h->requested, &prev, id, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        atomic_store_explicit(&h->claimed, done, memory_order_release);
        return OMDP_RESHARD_EENDED;
    }
    return (int64_t)id;
}

void omdp_reshard_totals(const omdp_reshard_seg_t *seg, omdp_reshard_totals_t *out)
{
    const seg_hdr_t *h = seg->h;
    memset(out, 0, sizeof *out);
    out->buckets = h->buckets;
    out->n_engines = h->n_engines;
    out->n_fh = h->n_fh;
    out->requested = atomic_load_explicit(&((seg_hdr_t *)h)->requested, memory_order_acquire) & ~REQ_CLOSED;
    out->exported = atomic_load_explicit(&((seg_hdr_t *)h)->exported, memory_order_acquire);
    out->installed = atomic_load_explicit(&((seg_hdr_t *)h)->installed, memory_order_acquire);
    out->handover_cap = h->handover_cap;
    out->attached = atomic_load_explicit(&((seg_hdr_t *)h)->attached, memory_order_acquire);
    out->ended = atomic_load_explicit(&((seg_hdr_t *)h)->ended, memory_order_acquire);
}

void omdp_reshard_fh_ended(omdp_reshard_seg_t *seg)
{
    atomic_fetch_or_explicit(&seg->h->requested, REQ_CLOSED, memory_order_acq_rel);
    atomic_fetch_add_explicit(&seg->h->ended, 1, memory_order_acq_rel);
}

uint64_t omdp_reshard_attach(omdp_reshard_seg_t *seg)
{
    return atomic_fetch_add_explicit(&seg->h->attached, 1, memory_order_acq_rel) + 1;
}

int omdp_reshard_move_info(const omdp_reshard_seg_t *seg, uint64_t id, omdp_reshard_move_t *out)
{
    memset(out, 0, sizeof *out);
    if (!seg || id == 0)
        return OMDP_RESHARD_EINVAL;
    seg_move_t *m = slot_of(seg, id);
    if (atomic_load_explicit(&m->id, memory_order_acquire) != id)
        return OMDP_RESHARD_EINVAL;
    out->installed = atomic_load_explicit(&m->installed, memory_order_acquire);
    out->id = id;
    out->bucket = m->bucket;
    out->to = m->to;
    out->from = m->from;
    out->n_series = m->n_series;
    out->requested_ns = m->requested_ns;
    out->exported_ns = m->exported_ns;
    out->installed_ns = m->installed_ns;
    out->state_bytes = m->state_bytes;
    out->held = m->held;
    out->hold_ns = m->hold_ns;
    return 0;
}

uint32_t omdp_reshard_owner(const omdp_reshard_seg_t *seg, uint32_t bucket)
{
    if (!seg || bucket >= seg->h->buckets)
        return OMDP_RESHARD_NO_OWNER;
    return atomic_load_explicit(&seg->h->owner[bucket], memory_order_acquire);
}

uint32_t omdp_reshard_home(const omdp_reshard_seg_t *seg, uint32_t bucket)
{
    if (!seg || bucket >= seg->h->buckets)
        return OMDP_RESHARD_NO_OWNER;
    return seg->h->home[bucket];
}

uint32_t omdp_reshard_buckets(const omdp_reshard_seg_t *seg) { return seg ? seg->h->buckets : 0; }

uint64_t omdp_reshard_requested(const omdp_reshard_seg_t *seg)
{
    return atomic_load_explicit(&seg->h->requested, memory_order_acquire) & ~REQ_CLOSED;
}

int omdp_reshard_request_of(const omdp_reshard_seg_t *seg, uint64_t id, uint32_t *bucket, uint32_t *to)
{
    seg_move_t *m = slot_of(seg, id);
    if (id == 0 || atomic_load_explicit(&m->id, memory_order_acquire) != id)
        return OMDP_RESHARD_EINVAL;
    *bucket = m->bucket;
    *to = m->to;
    return 0;
}

uint8_t *omdp_reshard_handover_area(omdp_reshard_seg_t *seg, uint64_t *cap)
{
    *cap = seg->h->handover_cap;
    return (uint8_t *)seg->h + seg->h->handover_off;
}

void omdp_reshard_publish_export(omdp_reshard_seg_t *seg, uint64_t id, uint32_t from, uint32_t n_series,
                                 uint64_t bytes, int64_t now_ns)
{
    seg_move_t *m = slot_of(seg, id);
    m->from = from;
    m->n_series = n_series;
    m->state_bytes = bytes;
    m->exported_ns = now_ns;
    atomic_store_explicit(&seg->h->exported, id, memory_order_release);
}

uint64_t omdp_reshard_exported(const omdp_reshard_seg_t *seg)
{
    return atomic_load_explicit(&seg->h->exported, memory_order_acquire);
}

void omdp_reshard_publish_install(omdp_reshard_seg_t *seg, uint64_t id, uint32_t bucket, uint32_t owner,
                                  uint64_t held, int64_t hold_ns, int64_t now_ns)
{
    seg_move_t *m = slot_of(seg, id);
    m->held = held;
    m->hold_ns = hold_ns;
    m->installed_ns = now_ns;
    atomic_store_explicit(&m->installed, 1, memory_order_relaxed);
    if (bucket < seg->h->buckets)
        atomic_store_explicit(&seg->h->owner[bucket], (uint16_t)owner, memory_order_relaxed);
    atomic_store_explicit(&seg->h->installed, id, memory_order_release);
}
