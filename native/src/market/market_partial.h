/* A partition's partial state, one dimension of one open window (private to src/market).
 *
 * Compact because a message's update is a cache miss in a table larger than the caches:
 * the keys live apart from the values (a probe walks 8-byte keys, eight to a cache line),
 * and a key's values are a 32-byte cell (two to a line, 64-byte aligned) of 32-bit counts -
 * a cell about to overflow one is sent as a delta first and restarted (market_stats_op.c),
 * so nothing is lost to the narrow fields. A hash table: open addressing, linear probing
 * over a power-of-two key array, key 0 marking an empty slot (the key 0 itself lives in an
 * extra cell at index `cap`), at most 3/4 full so a probe always ends. A direct table: the
 * cells indexed by the key (keys below its capacity), a bitmap saying which are used. Both
 * list their used cells in `order`, so sending and clearing a window costs its keys.
 */
#ifndef OMDP_MARKET_PARTIAL_H
#define OMDP_MARKET_PARTIAL_H

#include <stdint.h>

#include "omdp/market_stats.h"

typedef struct mkt_cell {
    int64_t notional;
    uint32_t quotes, trades, contracts, nbbo, max_trade, reserved;
} mkt_cell_t;

typedef struct mkt_ptab {
    uint64_t *keys;    /* hash: cap keys, 0 = empty; NULL for a direct table */
    uint64_t *bits;    /* direct: a bit per key, set when used; NULL for a hash table */
    mkt_cell_t *cells; /* cap + 1 cells, 64-byte aligned */
    uint32_t *order;   /* used cell indices, insertion order */
    uint32_t mask, n, limit, cap;
    uint32_t zero; /* hash: the key 0 is used (its cell is cells[cap]) */
} mkt_ptab_t;

/* 0 or OMDP_ERR_NOMEM; `cap` a power of two. */
int mkt_ptab_init_hash(mkt_ptab_t *t, uint32_t cap);
int mkt_ptab_init_direct(mkt_ptab_t *t, uint32_t cap);
void mkt_ptab_free(mkt_ptab_t *t);

/* The key of used cell index `i`. */
static inline uint64_t mkt_ptab_key(const mkt_ptab_t *t, uint32_t i)
{
    return t->keys && i < t->cap ? t->keys[i] : (t->keys ? 0 : i);
}

/* Start loading what a lookup of `hash` will touch. */
static inline void mkt_ptab_prefetch(const mkt_ptab_t *t, uint64_t hash)
{
    uint32_t i = (uint32_t)hash & t->mask;
    __builtin_prefetch(&t->keys[i], 1);
    __builtin_prefetch(&t->cells[i], 1);
}

/* The cell of `key` (its `hash`), inserted (zeroed) when new; NULL when the table is full. */
static inline mkt_cell_t *mkt_ptab_find(mkt_ptab_t *t, uint64_t key, uint64_t hash)
{
    if (key == 0) {
        if (!t->zero) {
            if (t->n >= t->limit)
                return NULL;
            t->zero = 1;
            t->order[t->n++] = t->cap;
        }
        return &t->cells[t->cap];
    }
    uint32_t i = (uint32_t)hash & t->mask;
    for (;;) {
        uint64_t k = t->keys[i];
        if (k == key)
            return &t->cells[i];
        if (k == 0) {
            if (t->n >= t->limit)
                return NULL;
            t->keys[i] = key;
            t->order[t->n++] = i;
            return &t->cells[i];
        }
        i = (i + 1) & t->mask;
    }
}

/* The cell of key `key` (< cap) of a direct table, marked used when new. */
static inline mkt_cell_t *mkt_ptab_direct(mkt_ptab_t *t, uint32_t key)
{
    uint64_t bit = 1ULL << (key & 63);
    if (!(t->bits[key >> 6] & bit)) {
        t->bits[key >> 6] |= bit;
        t->order[t->n++] = key;
    }
    return &t->cells[key];
}

/* Forget used cell number `k` of the list (its values zeroed, its key freed); the caller
 * resets n when every cell is forgotten. */
static inline void mkt_ptab_forget(mkt_ptab_t *t, uint32_t i)
{
    t->cells[i] = (mkt_cell_t){0};
    if (t->keys) {
        if (i < t->cap)
            t->keys[i] = 0;
        else
            t->zero = 0;
    } else {
        t->bits[i >> 6] &= ~(1ULL << (i & 63));
    }
}

#endif /* OMDP_MARKET_PARTIAL_H */
