/* The market_stats operator: partial state per partition, deltas to the leaders at window
 * ends (shared mode), or every update routed to its leader (route mode, the baseline).
 * docs/market_stats.md; records and parameters in omdp/market_stats.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "market_outbox.h"
#include "market_table.h"
#include "omdp/market_stats.h"
#include "omdp/opra_msg.h"

#define MAX_OPEN 4 /* lateness 0 .. 3 */
#define PREFETCH_AHEAD 2u /* messages: the slots of the one this far ahead are loaded now */
#define UND_DIRECT 16384u /* routed underlying ids below this: a direct table (others: the hash table) */
#define EX_DIRECT 256u    /* participant ids: a byte */
#define AHEAD_RING 4u     /* series keys computed ahead (a power of two > PREFETCH_AHEAD) */

/* A message's series key and its hash, computed when its slot was prefetched. */
typedef struct ahead {
    const uint8_t *rec;
    uint64_t key, hash;
} ahead_t;

typedef struct stats_state {
    omdp_market_stats_params_t p;
    uint32_t open; /* windows open: lateness + 1 */
    mkt_table_t tab[MAX_OPEN]; /* series, and underlyings beyond the direct table */
    mkt_table_t und[MAX_OPEN]; /* underlyings, direct */
    mkt_table_t ex[MAX_OPEN];  /* exchanges, direct */
    ahead_t ahead[AHEAD_RING];
    uint64_t msgs[MAX_OPEN], overflow[MAX_OPEN];
    uint64_t sent[MAX_OPEN][OMDP_MKT_MAX_LEADERS];
    int started;
    uint64_t base;         /* oldest open window */
    uint64_t late_pending; /* late messages not yet reported in a MARK */
    mkt_outbox_t ob;
    uint64_t c_seen, c_counted, c_other, c_bad_time, c_late, c_overflow, c_windows, c_marks;
} stats_state_t;

static void stats_close(void *state)
{
    stats_state_t *s = state;
    for (uint32_t i = 0; i < MAX_OPEN; i++) {
        mkt_table_free(&s->tab[i]);
        mkt_table_free(&s->und[i]);
        mkt_table_free(&s->ex[i]);
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
        r = mkt_table_init(&s->tab[i], p.capacity);
        if (r == OMDP_OK)
            r = mkt_table_init_direct(&s->und[i], UND_DIRECT);
        if (r == OMDP_OK)
            r = mkt_table_init_direct(&s->ex[i], EX_DIRECT);
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

/* One table's keys of a closing window as deltas to their leaders; the table cleared. */
static int send_table(stats_state_t *s, mkt_table_t *t, uint64_t window, uint32_t slot, omdp_market_out_fn out,
                      void *ctx)
{
    int err = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        const mkt_slot_t *e = &t->slots[t->order[k]];
        uint32_t l = leader_of(s, e->dim, e->key);
        omdp_market_rec_t *r = mkt_outbox_next(&s->ob, l, out, ctx, &err);
        if (!r)
            return err;
        mkt_slot_record(e, r, window, s->p.source);
        s->sent[slot][l]++;
    }
    mkt_table_clear(t);
    return OMDP_OK;
}

/* Close an open window: its deltas (shared mode) and its marks. */
static int close_window(stats_state_t *s, uint64_t window, omdp_market_out_fn out, void *ctx)
{
    uint32_t slot = (uint32_t)(window % s->open);
    if (s->p.mode == OMDP_MKT_MODE_SHARED) {
        int r = send_table(s, &s->und[slot], window, slot, out, ctx);
        if (r == OMDP_OK)
            r = send_table(s, &s->tab[slot], window, slot, out, ctx);
        if (r == OMDP_OK)
            r = send_table(s, &s->ex[slot], window, slot, out, ctx);
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

/* The baseline: one update of one key routed to its leader as a delta of one message. */
static int route_update(stats_state_t *s, uint32_t slot, uint64_t window, uint32_t dim, uint64_t key,
                        const mkt_values_t *u, omdp_market_out_fn out, void *ctx)
{
    uint32_t l = leader_of(s, dim, key);
    int err = 0;
    omdp_market_rec_t *r = mkt_outbox_next(&s->ob, l, out, ctx, &err);
    if (!r)
        return err;
    const mkt_slot_t e = {.key = key, .dim = dim, .used = 1, .v = *u};
    mkt_slot_record(&e, r, window, s->p.source);
    s->sent[slot][l]++;
    return OMDP_OK;
}

/* Add an update to a slot; a full table's NULL is counted (overflow). */
static void add(stats_state_t *s, uint32_t slot, mkt_slot_t *e, const mkt_values_t *u)
{
    if (!e) {
        s->overflow[slot]++;
        s->c_overflow++;
        return;
    }
    mkt_values_add(&e->v, u);
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

/* A message's series key and hash: computed once, when it was prefetched, or now. */
static const ahead_t *series_of(stats_state_t *s, const uint8_t *rec, uint32_t n)
{
    ahead_t *a = &s->ahead[n & (AHEAD_RING - 1)];
    if (a->rec != rec) {
        const omdp_opra_msg_t *m = (const omdp_opra_msg_t *)rec;
        a->rec = rec;
        a->key = series_key(m);
        a->hash = omdp_market_key_hash(OMDP_MKT_DIM_SERIES, a->key);
    }
    return a;
}

/* Start loading the slots message `n` of the batch will touch (the series table is larger
 * than the caches: a slot's miss, not the arithmetic, is what an update costs); its series
 * key is kept for when it is processed. */
static void prefetch_message(stats_state_t *s, const uint8_t *rec, uint32_t n)
{
    const omdp_opra_msg_t *m = (const omdp_opra_msg_t *)rec;
    uint64_t w = window_of_time(s, m->time);
    if (w == UINT64_MAX || w < s->base || (m->category != 'k' && m->category != 'a'))
        return;
    const ahead_t *a = series_of(s, rec, n);
    const mkt_table_t *t = &s->tab[w % s->open];
    __builtin_prefetch(&t->slots[a->hash & t->mask], 1);
    if (m->underlying_id < UND_DIRECT)
        __builtin_prefetch(&s->und[w % s->open].slots[m->underlying_id], 1);
}

static int one_message(stats_state_t *s, const uint8_t *rec, uint32_t n, omdp_market_out_fn out, void *ctx)
{
    const omdp_opra_msg_t *m = (const omdp_opra_msg_t *)rec;
    s->c_seen++;
    if (m->category != 'k' && m->category != 'a') {
        s->c_other++;
        return OMDP_OK;
    }
    uint64_t w = window_of_time(s, m->time);
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
    mkt_values_t u = {0};
    if (m->category == 'k') {
        u.quotes = 1;
        u.nbbo = m->bbo_ind >= 'B' && m->bbo_ind <= 'P';
    } else {
        u.trades = 1;
        u.contracts = m->volume;
        u.max_trade = m->volume;
        u.notional = (m->premium_px / 100000) * (int64_t)m->volume * (int64_t)s->p.multiplier;
    }
    s->msgs[slot]++;
    s->c_counted++;
    const ahead_t *a = series_of(s, rec, n);
    if (s->p.mode == OMDP_MKT_MODE_ROUTE) {
        int r = route_update(s, slot, w, OMDP_MKT_DIM_UNDERLYING, m->underlying_id, &u, out, ctx);
        if (r == OMDP_OK)
            r = route_update(s, slot, w, OMDP_MKT_DIM_SERIES, a->key, &u, out, ctx);
        if (r == OMDP_OK)
            r = route_update(s, slot, w, OMDP_MKT_DIM_EXCHANGE, m->participant, &u, out, ctx);
        return r;
    }
    add(s, slot,
        m->underlying_id < UND_DIRECT ? mkt_table_direct(&s->und[slot], OMDP_MKT_DIM_UNDERLYING, m->underlying_id)
                                      : mkt_table_get(&s->tab[slot], OMDP_MKT_DIM_UNDERLYING, m->underlying_id),
        &u);
    add(s, slot, mkt_table_get_hashed(&s->tab[slot], OMDP_MKT_DIM_SERIES, a->key, a->hash), &u);
    add(s, slot, mkt_table_direct(&s->ex[slot], OMDP_MKT_DIM_EXCHANGE, m->participant), &u);
    return OMDP_OK;
}

int omdp_market_stats_feed(void *state, const uint8_t *records, uint32_t nbytes, omdp_market_out_fn out, void *ctx)
{
    stats_state_t *s = state;
    uint32_t off = 0, n = 0;
    const uint8_t *rec;
    int r;
    int ahead = s->p.mode == OMDP_MKT_MODE_SHARED && s->started;
    memset(s->ahead, 0, sizeof s->ahead); /* a buffer is reused: an address says nothing across batches */
    while ((r = omdp_batch_next(records, nbytes, &off, &rec)) == 1) {
        omdp_record_header_t h;
        memcpy(&h, rec, sizeof h);
        if (h.type != OMDP_RT_OPRA_MSG || h.length != OMDP_OPRA_MSG_SIZE) {
            s->c_other++;
            continue;
        }
        /* the slots of the message PREFETCH_AHEAD on (records are back to back) load while this one runs */
        if (ahead && nbytes - off >= PREFETCH_AHEAD * OMDP_OPRA_MSG_SIZE)
            prefetch_message(s, records + off + (PREFETCH_AHEAD - 1) * OMDP_OPRA_MSG_SIZE, n + PREFETCH_AHEAD);
        int e = one_message(s, rec, n++, out, ctx);
        if (e < 0)
            return e;
        ahead = s->p.mode == OMDP_MKT_MODE_SHARED && s->started;
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
        {"batches", s->ob.batches},
    };
    return mkt_counters(c, sizeof c / sizeof c[0], out, max);
}

static const omdp_operator_vtable_t STATS = {
    .abi = OMDP_OPERATOR_ABI, .kind = "market_stats", .n_inputs = OMDP_MKT_MAX_INPUTS,
    .n_outputs = OMDP_MKT_MAX_LEADERS, .init = stats_init, .process_batch = stats_process,
    .end_of_stream = stats_end, .counters = stats_counters, .close = stats_close,
};

const omdp_operator_vtable_t *omdp_market_stats_vtable(void) { return &STATS; }
