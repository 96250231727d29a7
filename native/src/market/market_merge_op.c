/* The market_merge operator: a leader of part of the key space. It merges the deltas every
 * source sends for its keys (sums and max, in any order) and emits a window - its AGG
 * records, then an END - once every source's watermark has passed it; when a source has
 * not (it died, or the leader must make room, or its inputs ended), the END says
 * incomplete and names the sources missing. A source whose partition died (its channel
 * drained: omdp_market_merge_peer_gone) no longer holds windows back: every window it had
 * not passed goes out incomplete as soon as the others pass it. docs/market_stats.md. */
#include <stdlib.h>
#include <string.h>

#include "market_outbox.h"
#include "market_table.h"
#include "omdp/market_stats.h"

#define NO_MARK UINT64_MAX
#define BLOCK 16u /* deltas whose slots are loaded together before any is merged */

typedef struct pending {
    int used;
    uint64_t window;
    mkt_table_t tab;
    uint64_t msgs, overflow, late;
    uint64_t got[OMDP_MKT_MAX_SOURCES];    /* deltas received from each source */
    uint64_t expect[OMDP_MKT_MAX_SOURCES]; /* what its MARK said it sent; NO_MARK before it */
} pending_t;

typedef struct merge_state {
    omdp_market_merge_params_t p;
    pending_t *pend;
    int64_t wm[OMDP_MKT_MAX_SOURCES]; /* each source's watermark; -1 before its first MARK */
    uint64_t done;                    /* bitmap: sources that ended cleanly */
    uint64_t gone;                    /* bitmap: sources whose partition died, all they sent read */
    int64_t last_emitted;             /* -1 before the first window */
    mkt_outbox_t ob;
    uint64_t c_deltas, c_marks, c_windows, c_incomplete, c_forced, c_stale, c_mismatch, c_overflow, c_late, c_bad;
} merge_state_t;

static void merge_close(void *state)
{
    merge_state_t *s = state;
    for (uint32_t i = 0; s->pend && i < s->p.pending; i++)
        mkt_table_free(&s->pend[i].tab);
    free(s->pend);
    mkt_outbox_free(&s->ob);
    free(s);
}

static int merge_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != sizeof(omdp_market_merge_params_t))
        return omdp_op_init_fail(init, "params: expected omdp_market_merge_params_t");
    omdp_market_merge_params_t p;
    memcpy(&p, init->params, sizeof p);
    if (p.sources < 1 || p.sources > OMDP_MKT_MAX_SOURCES)
        return omdp_op_init_fail(init, "sources must be 1 .. %d, not %u", OMDP_MKT_MAX_SOURCES, p.sources);
    if (!mkt_pow2(p.capacity))
        return omdp_op_init_fail(init, "capacity must be a power of two, 64 .. 2^26, not %u", p.capacity);
    if (p.pending < 2 || p.pending > 64)
        return omdp_op_init_fail(init, "pending must be 2 .. 64 windows, not %u", p.pending);
    if (p.out_records < 1 || p.out_records > 4096)
        return omdp_op_init_fail(init, "out_records must be 1 .. 4096, not %u", p.out_records);
    merge_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return OMDP_ERR_NOMEM;
    s->p = p;
    s->last_emitted = -1;
    for (uint32_t i = 0; i < OMDP_MKT_MAX_SOURCES; i++)
        s->wm[i] = -1;
    s->pend = calloc(p.pending, sizeof *s->pend);
    int r = s->pend ? mkt_outbox_init(&s->ob, 1, p.out_records) : OMDP_ERR_NOMEM;
    for (uint32_t i = 0; r == OMDP_OK && i < p.pending; i++)
        r = mkt_table_init(&s->pend[i].tab, p.capacity);
    if (r < 0) {
        merge_close(s);
        return r;
    }
    *state = s;
    return OMDP_OK;
}

static pending_t *oldest(merge_state_t *s)
{
    pending_t *o = NULL;
    for (uint32_t i = 0; i < s->p.pending; i++)
        if (s->pend[i].used && (!o || s->pend[i].window < o->window))
            o = &s->pend[i];
    return o;
}

/* The sources that have not (exactly) delivered window w: bitmap. */
static uint64_t missing(const merge_state_t *s, const pending_t *w)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < s->p.sources; i++) {
        int passed = (s->done >> i & 1) || (s->wm[i] >= 0 && (uint64_t)s->wm[i] >= w->window);
        int exact = w->expect[i] == NO_MARK ? w->got[i] == 0 : w->got[i] == w->expect[i];
        if (!passed || !exact)
            m |= 1ULL << i;
    }
    return m;
}

static int emit_window(merge_state_t *s, pending_t *w, omdp_market_out_fn out, void *ctx)
{
    int err = 0;
    for (uint32_t k = 0; k < w->tab.n; k++) { /* each slot cleared while its line is loaded */
        if (k + 8 < w->tab.n)
            __builtin_prefetch(&w->tab.slots[w->tab.order[k + 8]], 1);
        omdp_market_rec_t *r = mkt_outbox_next(&s->ob, 0, out, ctx, &err);
        if (!r)
            return err;
        mkt_slot_t *e = &w->tab.slots[w->tab.order[k]];
        mkt_slot_record(e, r, w->window, s->p.leader);
        *e = (mkt_slot_t){0};
    }
    w->tab.n = 0;
    uint64_t miss = missing(s, w);
    for (uint32_t i = 0; i < s->p.sources; i++)
        if ((miss >> i & 1) && w->expect[i] != NO_MARK && w->got[i] != w->expect[i])
            s->c_mismatch++;
    omdp_market_rec_t *r = mkt_outbox_next(&s->ob, 0, out, ctx, &err);
    if (!r)
        return err;
    mkt_rec_init(r, OMDP_MKT_END, w->window, s->p.leader);
    r->key = miss;
    r->dim = miss != 0;
    r->quotes = w->msgs;
    r->trades = w->overflow;
    r->contracts = w->late;
    s->c_windows++;
    s->c_incomplete += miss != 0;
    s->last_emitted = (int64_t)w->window;
    w->used = 0;
    return OMDP_OK;
}

/* Emit, oldest first, every window all sources' watermarks have passed. */
static int emit_ready(merge_state_t *s, omdp_market_out_fn out, void *ctx)
{
    for (;;) {
        pending_t *o = oldest(s);
        if (!o)
            return OMDP_OK;
        for (uint32_t i = 0; i < s->p.sources; i++)
            if (!((s->done | s->gone) >> i & 1) && (s->wm[i] < 0 || (uint64_t)s->wm[i] < o->window))
                return OMDP_OK;
        int r = emit_window(s, o, out, ctx);
        if (r < 0)
            return r;
    }
}

/* The pending window w (made when new; the oldest forced out incomplete when none is
 * free); NULL when w was already emitted (the record is stale, counted). */
static pending_t *window_of(merge_state_t *s, uint64_t w, omdp_market_out_fn out, void *ctx, int *err)
{
    if (s->last_emitted >= 0 && w <= (uint64_t)s->last_emitted) {
        s->c_stale++;
        return NULL;
    }
    pending_t *free_slot = NULL;
    for (uint32_t i = 0; i < s->p.pending; i++) {
        if (s->pend[i].used && s->pend[i].window == w)
            return &s->pend[i];
        if (!s->pend[i].used && !free_slot)
            free_slot = &s->pend[i];
    }
    while (!free_slot) {
        pending_t *o = oldest(s);
        if (o->window > w) { /* older than everything held, and no room: it cannot be placed */
            s->c_stale++;
            return NULL;
        }
        s->c_forced++;
        int r = emit_window(s, o, out, ctx);
        if (r < 0) {
            *err = r;
            return NULL;
        }
        free_slot = o;
    }
    free_slot->used = 1;
    free_slot->window = w;
    free_slot->msgs = free_slot->overflow = free_slot->late = 0;
    memset(free_slot->got, 0, sizeof free_slot->got);
    for (uint32_t i = 0; i < OMDP_MKT_MAX_SOURCES; i++)
        free_slot->expect[i] = NO_MARK;
    return free_slot;
}

/* The pending window w when it is held, else NULL (no side effect: for prefetching). */
static pending_t *held(merge_state_t *s, uint64_t w)
{
    for (uint32_t i = 0; i < s->p.pending; i++)
        if (s->pend[i].used && s->pend[i].window == w)
            return &s->pend[i];
    return NULL;
}

/* `hash`: the AGG key's omdp_market_key_hash. */
static int one_record(merge_state_t *s, const omdp_market_rec_t *m, uint64_t hash, omdp_market_out_fn out,
                      void *ctx)
{
    if (m->source >= s->p.sources) {
        s->c_bad++;
        return OMDP_OK;
    }
    int err = 0;
    pending_t *w;
    switch (m->kind) {
    case OMDP_MKT_AGG:
        s->c_deltas++;
        if (!(w = window_of(s, m->window, out, ctx, &err)))
            return err;
        w->got[m->source]++;
        mkt_slot_t *e = mkt_table_get_hashed(&w->tab, m->dim, m->key, hash);
        if (!e) {
            w->overflow++;
            s->c_overflow++;
        } else {
            mkt_slot_merge(e, m);
        }
        return OMDP_OK;
    case OMDP_MKT_MARK:
        s->c_marks++;
        if (m->key || m->quotes || m->trades || m->contracts) {
            if (!(w = window_of(s, m->window, out, ctx, &err))) {
                if (err < 0)
                    return err;
            } else {
                w->expect[m->source] = m->key;
                w->msgs += m->quotes;
                w->overflow += m->trades;
                w->late += m->contracts;
            }
        }
        if (s->wm[m->source] < (int64_t)m->window)
            s->wm[m->source] = (int64_t)m->window;
        return emit_ready(s, out, ctx);
    case OMDP_MKT_DONE:
        s->done |= 1ULL << m->source;
        s->c_late += m->contracts;
        return emit_ready(s, out, ctx);
    default:
        s->c_bad++;
        return OMDP_OK;
    }
}

int omdp_market_merge_feed(void *state, const uint8_t *records, uint32_t nbytes, omdp_market_out_fn out, void *ctx)
{
    merge_state_t *s = state;
    uint32_t off = 0;
    const uint8_t *rec;
    int r = 1;
    pending_t *last = NULL; /* the window the previous delta went to: most of a batch's */
    while (r == 1) {
        omdp_market_rec_t blk[BLOCK];
        uint64_t hash[BLOCK];
        uint32_t n = 0;
        /* a block: every delta's slot starts loading, then each is merged in order */
        while (n < BLOCK && (r = omdp_batch_next(records, nbytes, &off, &rec)) == 1) {
            omdp_record_header_t h;
            memcpy(&h, rec, sizeof h);
            if (h.type != OMDP_RT_MARKET || h.length != OMDP_MARKET_REC_SIZE) {
                s->c_bad++;
                continue;
            }
            omdp_market_rec_t *m = &blk[n];
            memcpy(m, rec, sizeof *m);
            hash[n++] = omdp_market_key_hash(m->dim, m->key);
            if (m->kind != OMDP_MKT_AGG)
                continue;
            if (!last || !last->used || last->window != m->window)
                last = held(s, m->window);
            if (last)
                mkt_table_prefetch(&last->tab, hash[n - 1]);
        }
        for (uint32_t k = 0; k < n; k++) {
            int e = one_record(s, &blk[k], hash[k], out, ctx);
            if (e < 0)
                return e;
        }
    }
    if (r < 0)
        s->c_bad++;
    return mkt_outbox_flush(&s->ob, out, ctx);
}

int omdp_market_merge_finish(void *state, omdp_market_out_fn out, void *ctx)
{
    merge_state_t *s = state;
    pending_t *o;
    while ((o = oldest(s)) != NULL) {
        int r = emit_window(s, o, out, ctx);
        if (r < 0)
            return r;
    }
    return mkt_outbox_flush(&s->ob, out, ctx);
}

int omdp_market_merge_gone(void *state, uint64_t sources, omdp_market_out_fn out, void *ctx)
{
    merge_state_t *s = state;
    uint64_t mine = s->p.sources >= 64 ? UINT64_MAX : (1ULL << s->p.sources) - 1;
    s->gone |= sources & mine;
    int r = emit_ready(s, out, ctx);
    return r < 0 ? r : mkt_outbox_flush(&s->ob, out, ctx);
}

int omdp_market_merge_peer_gone(void *state, uint64_t sources, const omdp_emitter_t *em)
{
    return omdp_market_merge_gone(state, sources, mkt_via_emit, (void *)em);
}

static int merge_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                         const omdp_emitter_t *em)
{
    return omdp_market_merge_feed(state, records, nbytes, mkt_via_emit, (void *)em);
}

static int merge_end(void *state, const omdp_emitter_t *em)
{
    return omdp_market_merge_finish(state, mkt_via_emit, (void *)em);
}

static uint32_t merge_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    merge_state_t *s = state;
    const omdp_counter_t c[] = {
        {"deltas", s->c_deltas},     {"marks", s->c_marks},   {"windows", s->c_windows},
        {"incomplete", s->c_incomplete}, {"forced", s->c_forced}, {"stale", s->c_stale},
        {"mismatch", s->c_mismatch}, {"overflow", s->c_overflow}, {"late_at_end", s->c_late},
        {"bad", s->c_bad}, {"sources_gone", (uint64_t)__builtin_popcountll(s->gone)},
    };
    return mkt_counters(c, sizeof c / sizeof c[0], out, max);
}

static const omdp_operator_vtable_t MERGE = {
    .abi = OMDP_OPERATOR_ABI, .kind = "market_merge", .n_inputs = 1, .n_outputs = 1,
    .init = merge_init, .process_batch = merge_process, .end_of_stream = merge_end,
    .counters = merge_counters, .close = merge_close,
};

const omdp_operator_vtable_t *omdp_market_merge_vtable(void) { return &MERGE; }
