/* The market_stats operator: partial state per partition, deltas to the leaders at window
 * ends (shared mode), or every update routed to its leader (route mode, the baseline).
 * docs/market_stats.md; records and parameters in omdp/market_stats.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "market_outbox.h"
#include "market_partial.h"
#include "market_table.h"
#include "omdp/market_stats.h"
#include "omdp/opra_msg.h"

#define MAX_OPEN 4     /* lateness 0 .. 3 */
#define BLOCK 16u      /* messages whose slots are loaded together before any is updated */
#define UND_DIRECT 16384u /* routed underlying ids below this: a direct table (others: a hash table) */
#define UND_HASH 4096u    /* the hash table of the other underlying ids (and the unrouted) */
#define EX_DIRECT 256u    /* participant ids: a byte */

/* One message of a block, read once: its window (UINT64_MAX when it is not counted: not a
 * quote or a sale, or not a time of day) and its series key and hash. */
typedef struct pre {
    const omdp_opra_msg_t *m;
    uint64_t w, skey, shash;
} pre_t;

typedef struct stats_state {
    omdp_market_stats_params_t p;
    uint32_t open; /* windows open: lateness + 1 */
    mkt_ptab_t ser[MAX_OPEN];  /* series */
    mkt_ptab_t und[MAX_OPEN];  /* underlyings, direct */
    mkt_ptab_t undh[MAX_OPEN]; /* underlyings beyond the direct table */
    mkt_ptab_t ex[MAX_OPEN];   /* exchanges, direct */
    uint64_t msgs[MAX_OPEN], overflow[MAX_OPEN];
    uint64_t sent[MAX_OPEN][OMDP_MKT_MAX_LEADERS];
    int started;
    uint64_t base;         /* oldest open window */
    uint64_t late_pending; /* late messages not yet reported in a MARK */
    mkt_outbox_t ob;
    uint64_t c_seen, c_counted, c_other, c_bad_time, c_late, c_overflow, c_windows, c_marks, c_spills;
} stats_state_t;

static void stats_close(void *state)
{
    stats_state_t *s = state;
    for (uint32_t i = 0; i < MAX_OPEN; i++) {
        mkt_ptab_free(&s->ser[i]);
        mkt_ptab_free(&s->und[i]);
        mkt_ptab_free(&s->undh[i]);
        mkt_ptab_free(&s->ex[i]);
    }
    mkt_outbox_free(&s->ob);
    free(s);
}

static int stats_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != sizeof(omdp_market_stats_params_t))
        return omdp_op_init_fail(init, "params: expected omdp_market_stats_params_t");
    omdp_market_stats_params_t p;
    memcpy(&p, init->params, sizeof p);
    if (p.window_ms < 1)
        return omdp_op_init_fail(init, "window_ms must be at least 1");
    if (p.leaders < 1 || p.leaders > OMDP_MKT_MAX_LEADERS)
        return omdp_op_init_fail(init, "leaders must be 1 .. %d, not %u", OMDP_MKT_MAX_LEADERS, p.leaders);
    if (p.lateness >= MAX_OPEN)
        return omdp_op_init_fail(init, "lateness must be 0 .. %d windows, not %u", MAX_OPEN - 1, p.lateness);
    if (p.mode != OMDP_MKT_MODE_SHARED && p.mode != OMDP_MKT_MODE_ROUTE)
        return omdp_op_init_fail(init, "mode must be shared (0) or route (1), not %u", p.mode);
    if (p.source >= OMDP_MKT_MAX_SOURCES)
        return omdp_op_init_fail(init, "source must be below %d, not %u", OMDP_MKT_MAX_SOURCES, p.source);
    if (p.mode == OMDP_MKT_MODE_SHARED && !mkt_pow2(p.capacity))
        return omdp_op_init_fail(init, "capacity must be a power of two, 64 .. 2^26, not %u", p.capacity);
    if (p.out_records < 1 || p.out_records > 4096)
        return omdp_op_init_fail(init, "out_records must be 1 .. 4096, not %u", p.out_records);
    stats_state_t *s = calloc(1, sizeof *s);
    if (!s)
        return OMDP_ERR_NOMEM;
    s->p = p;
    s->open = p.lateness + 1;
    int r = mkt_outbox_init(&s->ob, p.leaders, p.out_records);
    for (uint32_t i = 0; r == OMDP_OK && p.mode == OMDP_MKT_MODE_SHARED && i < s->open; i++) {
        r = mkt_ptab_init_hash(&s->ser[i], p.capacity);
        if (r == OMDP_OK)
            r = mkt_ptab_init_direct(&s->und[i], UND_DIRECT);
        if (r == OMDP_OK)
            r = mkt_ptab_init_hash(&s->undh[i], p.capacity < UND_HASH ? p.capacity : UND_HASH);
        if (r == OMDP_OK)
            r = mkt_ptab_init_direct(&s->ex[i], EX_DIRECT);
    }
    if (r < 0) {
        stats_close(s);
        return r;
    }
    *state = s;
    return OMDP_OK;
}

static uint32_t leader_of(const stats_state_t *s, uint32_t dim, uint64_t key)
{
    return (uint32_t)(omdp_market_key_hash(dim, key) % s->p.leaders);
}

/* One window's MARK to every leader (its deltas to that leader counted), then its state reset. */
static int mark_window(stats_state_t *s, uint64_t window, uint32_t slot, omdp_market_out_fn out, void *ctx)
{
    int err = 0;
    for (uint32_t l = 0; l < s->p.leaders; l++) {
        omdp_market_rec_t *r = mkt_outbox_next(&s->ob, l, out, ctx, &err);
        if (!r)
            return err;
        mkt_rec_init(r, OMDP_MKT_MARK, window, s->p.source);
        r->key = s->sent[slot][l];
        r->quotes = s->msgs[slot];
        r->trades = l == 0 ? s->overflow[slot] : 0; /* counts that are not keys': leader 0 only, */
        r->contracts = l == 0 ? s->late_pending : 0; /* so the leaders' ENDs add up */
        s->sent[slot][l] = 0;
    }
    s->c_marks++;
    s->late_pending = 0;
    s->msgs[slot] = 0;
    s->overflow[slot] = 0;
    return OMDP_OK;
}

/* A key's cell as a delta to its leader. */
static int send_cell(stats_state_t *s, uint32_t dim, uint64_t key, const mkt_cell_t *c, uint64_t window,
                     uint32_t slot, omdp_market_out_fn out, void *ctx)
{
    uint32_t l = leader_of(s, dim, key);
    int err = 0;
    omdp_market_rec_t *r = mkt_outbox_next(&s->ob, l, out, ctx, &err);
    if (!r)
        return err;
    mkt_rec_init(r, OMDP_MKT_AGG, window, s->p.source);
    r->dim = (uint16_t)dim;
    r->key = key;
    r->quotes = c->quotes;
    r->trades = c->trades;
    r->contracts = c->contracts;
    r->notional = c->notional;
    r->nbbo = c->nbbo;
    r->max_trade = c->max_trade;
    s->sent[slot][l]++;
    return OMDP_OK;
}

/* One table's keys of a closing window as deltas to their leaders, each cell cleared as it
 * goes (its lines are loaded then); the cells a few ahead are prefetched. */
static int send_table(stats_state_t *s, mkt_ptab_t *t, uint32_t dim, uint64_t window, uint32_t slot,
                      omdp_market_out_fn out, void *ctx)
{
    for (uint32_t k = 0; k < t->n; k++) {
        if (k + 8 < t->n) {
            __builtin_prefetch(&t->cells[t->order[k + 8]], 1);
            if (t->keys)
                __builtin_prefetch(&t->keys[t->order[k + 8] & t->mask], 1);
        }
        uint32_t i = t->order[k];
        int r = send_cell(s, dim, mkt_ptab_key(t, i), &t->cells[i], window, slot, out, ctx);
        if (r < 0)
            return r;
        mkt_ptab_forget(t, i);
    }
    t->n = 0;
    return OMDP_OK;
}

/* Close an open window: its deltas (shared mode) and its marks. */
static int close_window(stats_state_t *s, uint64_t window, omdp_market_out_fn out, void *ctx)
{
    uint32_t slot = (uint32_t)(window % s->open);
    if (s->p.mode == OMDP_MKT_MODE_SHARED) {
        int r = send_table(s, &s->und[slot], OMDP_MKT_DIM_UNDERLYING, window, slot, out, ctx);
        if (r == OMDP_OK)
            r = send_table(s, &s->undh[slot], OMDP_MKT_DIM_UNDERLYING, window, slot, out, ctx);
        if (r == OMDP_OK)
            r = send_table(s, &s->ser[slot], OMDP_MKT_DIM_SERIES, window, slot, out, ctx);
        if (r == OMDP_OK)
            r = send_table(s, &s->ex[slot], OMDP_MKT_DIM_EXCHANGE, window, slot, out, ctx);
        if (r < 0)
            return r;
    }
    s->c_windows++;
    return mark_window(s, window, slot, out, ctx);
}

/* Close windows base .. upto (those that saw messages; the last one always, so the
 * leaders' watermark of this source moves on). */
static int close_through(stats_state_t *s, uint64_t upto, omdp_market_out_fn out, void *ctx)
{
    for (uint64_t w = s->base; w <= upto && w < s->base + s->open; w++) {
        uint32_t slot = (uint32_t)(w % s->open);
        int busy = s->msgs[slot] != 0 || s->overflow[slot] != 0;
        if (busy || w == upto) {
            int r = close_window(s, w, out, ctx);
            if (r < 0)
                return r;
        }
    }
    if (upto >= s->base + s->open) { /* a jump past every open window: the watermark still moves */
        int r = mark_window(s, upto, (uint32_t)(upto % s->open), out, ctx);
        if (r < 0)
            return r;
    }
    s->base = upto + 1;
    return OMDP_OK;
}

/* One message's contribution to each of its keys. */
typedef struct upd {
    uint32_t quote, trade, nbbo, volume;
    int64_t notional;
} upd_t;

/* The baseline: one update of one key routed to its leader as a delta of one message. */
static int route_update(stats_state_t *s, uint32_t slot, uint64_t window, uint32_t dim, uint64_t key,
                        const upd_t *u, omdp_market_out_fn out, void *ctx)
{
    const mkt_cell_t c = {.notional = u->notional, .quotes = u->quote, .trades = u->trade,
                          .contracts = u->volume, .nbbo = u->nbbo, .max_trade = u->volume};
    return send_cell(s, dim, key, &c, window, slot, out, ctx);
}

/* Add an update to a key's cell: a full table's NULL is counted (overflow); a cell whose
 * 32-bit counts this update would overflow goes to its leader first as a delta (a spill). */
static inline __attribute__((always_inline)) int add(stats_state_t *s, uint32_t slot, uint64_t window, uint32_t dim, uint64_t key, mkt_cell_t *c,
               const upd_t *u, omdp_market_out_fn out, void *ctx)
{
    if (!c) {
        s->overflow[slot]++;
        s->c_overflow++;
        return OMDP_OK;
    }
    if (__builtin_expect(c->quotes == UINT32_MAX || c->trades == UINT32_MAX || u->volume > UINT32_MAX - c->contracts,
                         0)) {
        int r = send_cell(s, dim, key, c, window, slot, out, ctx);
        if (r < 0)
            return r;
        s->c_spills++;
        *c = (mkt_cell_t){0};
    }
    c->quotes += u->quote;
    c->trades += u->trade;
    c->nbbo += u->nbbo;
    c->contracts += u->volume;
    c->notional += u->notional;
    if (u->volume > c->max_trade)
        c->max_trade = u->volume;
    return OMDP_OK;
}

static uint64_t series_key(const omdp_opra_msg_t *m)
{
    uint64_t h = omdp_market_mix(((uint64_t)m->underlying_id << 32) ^ m->expiry);
    h = omdp_market_mix(h ^ (uint64_t)m->strike_px);
    return omdp_market_mix(h ^ m->put_call);
}

/* The message's window, or UINT64_MAX when its time is not a time of day. */
static uint64_t window_of_time(const stats_state_t *s, uint32_t t)
{
    uint32_t hh = t / 10000000u, mi = t / 100000u % 100u, ss = t / 1000u % 100u;
    if (hh > 23 || mi > 59 || ss > 59)
        return UINT64_MAX;
    return ((uint64_t)((hh * 60u + mi) * 60u + ss) * 1000u + t % 1000u) / s->p.window_ms;
}

/* Read one message of a block and, in shared mode once the windows are placed, start loading
 * the cells it will update (the series table is larger than the caches: a cell's miss, not
 * the arithmetic, is what an update costs; a block's misses overlap). */
static void pre_read(stats_state_t *s, pre_t *p, const uint8_t *rec)
{
    const omdp_opra_msg_t *m = (const omdp_opra_msg_t *)rec;
    p->m = m;
    p->w = UINT64_MAX;
    if (m->category != 'k' && m->category != 'a')
        return;
    p->w = window_of_time(s, m->time);
    if (p->w == UINT64_MAX)
        return;
    p->skey = series_key(m);
    if (s->p.mode != OMDP_MKT_MODE_SHARED)
        return;
    p->shash = omdp_market_key_hash(OMDP_MKT_DIM_SERIES, p->skey);
    if (!s->started || p->w < s->base)
        return;
    uint32_t slot = (uint32_t)(p->w % s->open);
    mkt_ptab_prefetch(&s->ser[slot], p->shash);
    if (m->underlying_id < UND_DIRECT)
        __builtin_prefetch(&s->und[slot].cells[m->underlying_id], 1);
}

static int one_message(stats_state_t *s, const pre_t *p, omdp_market_out_fn out, void *ctx)
{
    const omdp_opra_msg_t *m = p->m;
    s->c_seen++;
    if (m->category != 'k' && m->category != 'a') {
        s->c_other++;
        return OMDP_OK;
    }
    uint64_t w = p->w;
    if (w == UINT64_MAX) {
        s->c_bad_time++;
        return OMDP_OK;
    }
    if (!s->started) {
        s->started = 1;
        s->base = w >= s->p.lateness ? w - s->p.lateness : 0;
    }
    if (w < s->base) {
        s->c_late++;
        s->late_pending++;
        return OMDP_OK;
    }
    if (w >= s->base + s->open) {
        int r = close_through(s, w - s->open, out, ctx);
        if (r < 0)
            return r;
    }
    uint32_t slot = (uint32_t)(w % s->open);
    upd_t u = {0};
    if (m->category == 'k') {
        u.quote = 1;
        u.nbbo = m->bbo_ind >= 'B' && m->bbo_ind <= 'P';
    } else {
        u.trade = 1;
        u.volume = m->volume;
        u.notional = (m->premium_px / 100000) * (int64_t)m->volume * (int64_t)s->p.multiplier;
    }
    s->msgs[slot]++;
    s->c_counted++;
    uint32_t und = m->underlying_id;
    if (s->p.mode == OMDP_MKT_MODE_ROUTE) {
        int r = route_update(s, slot, w, OMDP_MKT_DIM_UNDERLYING, und, &u, out, ctx);
        if (r == OMDP_OK)
            r = route_update(s, slot, w, OMDP_MKT_DIM_SERIES, p->skey, &u, out, ctx);
        if (r == OMDP_OK)
            r = route_update(s, slot, w, OMDP_MKT_DIM_EXCHANGE, m->participant, &u, out, ctx);
        return r;
    }
    mkt_cell_t *uc = und < UND_DIRECT ? mkt_ptab_direct(&s->und[slot], und)
                                      : mkt_ptab_find(&s->undh[slot], und,
                                                      omdp_market_key_hash(OMDP_MKT_DIM_UNDERLYING, und));
    int r = add(s, slot, w, OMDP_MKT_DIM_UNDERLYING, und, uc, &u, out, ctx);
    if (r == OMDP_OK)
        r = add(s, slot, w, OMDP_MKT_DIM_SERIES, p->skey, mkt_ptab_find(&s->ser[slot], p->skey, p->shash), &u, out,
                ctx);
    if (r == OMDP_OK)
        r = add(s, slot, w, OMDP_MKT_DIM_EXCHANGE, m->participant, mkt_ptab_direct(&s->ex[slot], m->participant), &u,
                out, ctx);
    return r;
}

int omdp_market_stats_feed(void *state, const uint8_t *records, uint32_t nbytes, omdp_market_out_fn out, void *ctx)
{
    stats_state_t *s = state;
    uint32_t off = 0;
    const uint8_t *rec;
    int r = 1;
    while (r == 1) {
        pre_t blk[BLOCK];
        uint32_t n = 0;
        /* a block: every message read and its cells' loads started, then each updated in order */
        while (n < BLOCK && (r = omdp_batch_next(records, nbytes, &off, &rec)) == 1) {
            omdp_record_header_t h;
            memcpy(&h, rec, sizeof h);
            if (h.type != OMDP_RT_OPRA_MSG || h.length != OMDP_OPRA_MSG_SIZE) {
                s->c_other++;
                continue;
            }
            pre_read(s, &blk[n++], rec);
        }
        for (uint32_t k = 0; k < n; k++) {
            int e = one_message(s, &blk[k], out, ctx);
            if (e < 0)
                return e;
        }
    }
    if (r < 0)
        s->c_other++; /* an unframable tail: counted, skipped */
    return mkt_outbox_flush(&s->ob, out, ctx); /* what a closed window produced goes out now */
}

int omdp_market_stats_finish(void *state, omdp_market_out_fn out, void *ctx)
{
    stats_state_t *s = state;
    if (s->started) {
        int r = close_through(s, s->base + s->open - 1, out, ctx);
        if (r < 0)
            return r;
    }
    int err = 0;
    for (uint32_t l = 0; l < s->p.leaders; l++) {
        omdp_market_rec_t *r = mkt_outbox_next(&s->ob, l, out, ctx, &err);
        if (!r)
            return err;
        mkt_rec_init(r, OMDP_MKT_DONE, s->started ? s->base - 1 : 0, s->p.source);
        r->contracts = l == 0 ? s->late_pending : 0;
    }
    s->late_pending = 0;
    return mkt_outbox_flush(&s->ob, out, ctx);
}

static int stats_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                         const omdp_emitter_t *em)
{
    return omdp_market_stats_feed(state, records, nbytes, mkt_via_emit, (void *)em);
}

static int stats_end(void *state, const omdp_emitter_t *em)
{
    return omdp_market_stats_finish(state, mkt_via_emit, (void *)em);
}

static uint32_t stats_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    stats_state_t *s = state;
    const omdp_counter_t c[] = {
        {"seen", s->c_seen},         {"counted", s->c_counted},         {"other", s->c_other},
        {"bad_time", s->c_bad_time}, {"late", s->c_late},               {"overflow", s->c_overflow},
        {"windows", s->c_windows},   {"marks", s->c_marks},             {"records_out", s->ob.records},
        {"batches", s->ob.batches},  {"spills", s->c_spills},
    };
    return mkt_counters(c, sizeof c / sizeof c[0], out, max);
}

static const omdp_operator_vtable_t STATS = {
    .abi = OMDP_OPERATOR_ABI, .kind = "market_stats", .n_inputs = OMDP_MKT_MAX_INPUTS,
    .n_outputs = OMDP_MKT_MAX_LEADERS, .init = stats_init, .process_batch = stats_process,
    .end_of_stream = stats_end, .counters = stats_counters, .close = stats_close,
};

const omdp_operator_vtable_t *omdp_market_stats_vtable(void) { return &STATS; }
