/* The market statistics' hash table: see market_table.h. */
#include "market_table.h"

#include <stdlib.h>
#include <string.h>

int mkt_table_init(mkt_table_t *t, uint32_t capacity)
{
    memset(t, 0, sizeof *t);
    /* on cache lines, and touched now: a window's first keys do not pay the page faults */
    t->slots = aligned_alloc(64, (size_t)capacity * sizeof *t->slots);
    if (t->slots)
        memset(t->slots, 0, (size_t)capacity * sizeof *t->slots);
    t->order = calloc(capacity, sizeof *t->order);
    if (!t->slots || !t->order) {
        mkt_table_free(t);
        return OMDP_ERR_NOMEM;
    }
    t->mask = capacity - 1;
    t->limit = capacity / 4 * 3;
    return OMDP_OK;
}

void mkt_table_free(mkt_table_t *t)
{
    free(t->slots);
    free(t->order);
    t->slots = NULL;
    t->order = NULL;
}

void mkt_slot_merge(mkt_slot_t *s, const omdp_market_rec_t *r)
{
    const mkt_values_t v = {r->quotes, r->trades, r->contracts, r->notional, r->nbbo, r->max_trade};
    mkt_values_add(&s->v, &v);
}

void mkt_rec_init(omdp_market_rec_t *r, uint16_t kind, uint64_t window, uint32_t source)
{
    memset(r, 0, sizeof *r);
    r->hdr.type = OMDP_RT_MARKET;
    r->hdr.length = OMDP_MARKET_REC_SIZE;
    r->kind = kind;
    r->window = window;
    r->source = source;
}

void mkt_slot_record(const mkt_slot_t *s, omdp_market_rec_t *r, uint64_t window, uint32_t source)
{
    mkt_rec_init(r, OMDP_MKT_AGG, window, source);
    r->dim = (uint16_t)s->dim;
    r->key = s->key;
    r->quotes = s->v.quotes;
    r->trades = s->v.trades;
    r->contracts = s->v.contracts;
    r->notional = s->v.notional;
    r->nbbo = s->v.nbbo;
    r->max_trade = s->v.max_trade;
}
