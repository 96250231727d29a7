/* The market statistics' leader table (private to src/market).
 *
 * The leader's table (the partitions' compact one is market_partial.h): open addressing
 * with linear probing over a power-of-two array of 64-byte slots, each on a cache line of
 * its own; at most 3/4 of the slots are used, so a probe always ends. It lists its used
 * slots in `order`, so walking and clearing a window costs its keys, not its capacity.
 */
#ifndef OMDP_MARKET_TABLE_H
#define OMDP_MARKET_TABLE_H

#include <stdint.h>

#include "omdp/market_stats.h"

/* A key's aggregates in a window; all merge by sum, max_trade by max (a CRDT merge). */
typedef struct mkt_values {
    uint64_t quotes, trades, contracts;
    int64_t notional;
    uint64_t nbbo, max_trade;
} mkt_values_t;

typedef struct mkt_slot {
    uint64_t key;
    uint32_t dim;
    uint32_t used;
    mkt_values_t v;
} mkt_slot_t;

typedef struct mkt_table {
    mkt_slot_t *slots;
    uint32_t *order; /* used slot indices, insertion order */
    uint32_t mask;
    uint32_t n;
    uint32_t limit; /* 3/4 of the capacity */
} mkt_table_t;

/* 0, or OMDP_ERR_NOMEM. `capacity` is a power of two (checked by the callers' init). */
int mkt_table_init(mkt_table_t *t, uint32_t capacity);
void mkt_table_free(mkt_table_t *t);
/* Start loading the slot a lookup of `hash` starts at. */
static inline void mkt_table_prefetch(const mkt_table_t *t, uint64_t hash)
{
    __builtin_prefetch(&t->slots[hash & t->mask], 1);
}
/* The slot of (dim, key) with the key's hash (omdp_market_key_hash), inserted zeroed when
 * new; NULL when the table is full. */
static inline mkt_slot_t *mkt_table_get_hashed(mkt_table_t *t, uint32_t dim, uint64_t key, uint64_t hash)
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
/* Add a delta's values into a slot (mkt_values_add). */
void mkt_slot_merge(mkt_slot_t *s, const omdp_market_rec_t *r);
/* Fill an AGG record from a slot. */
void mkt_slot_record(const mkt_slot_t *s, omdp_market_rec_t *r, uint64_t window, uint32_t source);
/* A zeroed record of `kind` with its header. */
void mkt_rec_init(omdp_market_rec_t *r, uint16_t kind, uint64_t window, uint32_t source);

static inline int mkt_pow2(uint32_t x) { return x >= 64 && (x & (x - 1)) == 0 && x <= (1u << 26); }

static inline void mkt_values_add(mkt_values_t *d, const mkt_values_t *s)
{
    d->quotes += s->quotes;
    d->trades += s->trades;
    d->contracts += s->contracts;
    d->notional += s->notional;
    d->nbbo += s->nbbo;
    if (s->max_trade > d->max_trade)
        d->max_trade = s->max_trade;
}

#endif /* OMDP_MARKET_TABLE_H */
