/* The market statistics' fixed-layout hash table (private to src/market).
 *
 * Open addressing with linear probing over a power-of-two array of 64-byte slots; at most
 * 3/4 of the slots are used, so a probe always ends. `order` lists the used slots in
 * insertion order, so walking and clearing a window costs its keys, not its capacity.
 */
#ifndef OMDP_MARKET_TABLE_H
#define OMDP_MARKET_TABLE_H

#include <stdint.h>

#include "omdp/market_stats.h"

typedef struct mkt_slot {
    uint64_t key;
    uint32_t dim;
    uint32_t used;
    uint64_t quotes, trades, contracts;
    int64_t notional;
    uint64_t nbbo, max_trade;
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
/* The slot of (dim, key), inserted zeroed when new; NULL when the table is full. */
mkt_slot_t *mkt_table_get(mkt_table_t *t, uint32_t dim, uint64_t key);
void mkt_table_clear(mkt_table_t *t);
/* Add a delta's values into a slot: sums, and max for max_trade (a CRDT merge). */
void mkt_slot_merge(mkt_slot_t *s, const omdp_market_rec_t *r);
/* Fill an AGG record from a slot. */
void mkt_slot_record(const mkt_slot_t *s, omdp_market_rec_t *r, uint64_t window, uint32_t source);
/* A zeroed record of `kind` with its header. */
void mkt_rec_init(omdp_market_rec_t *r, uint16_t kind, uint64_t window, uint32_t source);

static inline int mkt_pow2(uint32_t x) { return x >= 64 && (x & (x - 1)) == 0 && x <= (1u << 26); }

#endif /* OMDP_MARKET_TABLE_H */
