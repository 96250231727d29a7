/* A partition's partial-state tables: see market_partial.h. */
#include "market_partial.h"

#include <stdlib.h>
#include <string.h>

/* Zeroed memory on a cache-line boundary (so a cell never straddles two lines). */
static void *zalloc64(size_t n)
{
    size_t size = (n + 63) / 64 * 64;
    void *p = aligned_alloc(64, size ? size : 64);
    if (p)
        memset(p, 0, size ? size : 64);
    return p;
}

static int init(mkt_ptab_t *t, uint32_t cap, int direct)
{
    memset(t, 0, sizeof *t);
    t->cap = cap;
    t->mask = cap - 1;
    t->limit = direct ? cap : cap / 4 * 3 + 1; /* + 1: the key 0's cell, outside the probed array */
    t->cells = zalloc64((size_t)(cap + 1) * sizeof *t->cells);
    t->order = calloc((size_t)cap + 1, sizeof *t->order);
    if (direct)
        t->bits = zalloc64(((size_t)cap + 63) / 64 * sizeof *t->bits);
    else
        t->keys = zalloc64((size_t)cap * sizeof *t->keys);
    if (!t->cells || !t->order || (!t->bits && !t->keys)) {
        mkt_ptab_free(t);
        return OMDP_ERR_NOMEM;
    }
    return OMDP_OK;
}

int mkt_ptab_init_hash(mkt_ptab_t *t, uint32_t cap) { return init(t, cap, 0); }

int mkt_ptab_init_direct(mkt_ptab_t *t, uint32_t cap) { return init(t, cap, 1); }

void mkt_ptab_free(mkt_ptab_t *t)
{
    free(t->keys);
    free(t->bits);
    free(t->cells);
    free(t->order);
    memset(t, 0, sizeof *t);
}
