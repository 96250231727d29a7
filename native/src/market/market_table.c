/* The market statistics' hash table: see market_table.h. */
#include "market_table.h"

#include <stdlib.h>
#include <string.h>

int mkt_table_init(mkt_table_t *t, uint32_t capacity)
{
    memset(t, 0, sizeof *t);
    t->slots = calloc(capacity, sizeof *t->slots);
    t->order = calloc(capacity, sizeof *t->order);
    if (!t->slots || !t->order) {
        mkt_table_free(t);
        return OMDP_ERR_NOMEM;
    }
    t->mask = capacity - 1;
    t->limit = capacity / 4 * 3;
    return OMDP_OK;
}

int mkt_table_init_direct(mkt_table_t *t, uint32_t capacity)
{
    int r = mkt_table_init(t, capacity);
    t->limit = capacity;
    return r;
}

void mkt_table_free(mkt_table_t *t)
{
    free(t->slots);
    free(t->order);
    t->slots = NULL;
    t->order = NULL;
}

mkt_slot_t *mkt_table_get(mkt_table_t *t, uint32_t dim, uint64_t key)
{
    return mkt_table_get_hashed(t, dim, key, omdp_market_key_hash(dim, key));
}

mkt_slot_t *mkt_table_get_hashed(mkt_table_t *t, uint32_t dim, uint64_t key, uint64_t hash)
{
    uint32_t i = (uint32_t)hash & t->mask;
    for (;;) {
        mkt_slot_t *s = &t->slots[i];
        if (!s->used) {
            if (t->n >= t->limit)
                return NULL;
            s->used = 1;
            s->dim = dim;
            s->key = key;
            t->order[t->n++] = i;
            return s;
        }
        if (s->key == key && s->dim == dim)
            return s;
        i = (i + 1) & t->mask;
    }
}

void mkt_table_clear(mkt_table_t *t)
{
    for (uint32_t k = 0; k < t->n; k++)
        memset(&t->slots[t->order[k]], 0, sizeof(mkt_slot_t));
    t->n = 0;
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
