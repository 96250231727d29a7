/* A line's series and appendage tables for the replay's staged records (feed_stage.h): the
 * series seen so far in an open-addressing hash (key: the whole 24-byte series entry), the
 * appendages appended as they come. Both grow by doubling. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "feed_handler_stage_internal.h"

#define EMPTY 0xFFFFFFFFu

static inline uint64_t series_hash(const uint64_t w[3])
{
    uint64_t h = w[0] * 0x9E3779B97F4A7C15ULL;
    h = (h ^ (h >> 29)) + (w[1] & 0xFFFFFFFFull) * 0xBF58476D1CE4E5B9ULL; /* not the underlying id */
    h = (h ^ (h >> 29)) + w[2] * 0x94D049BB133111EBULL;
    return h ^ (h >> 32);
}

static inline void series_words(const omdp_fh_stage_series_t *s, uint64_t w[3])
{
    memcpy(w, s, 3 * sizeof *w);
}

omdp_fh_stage_tables_t *omdp_fh_stage_tables_new(void)
{
    omdp_fh_stage_tables_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->slots_mask = 1023;
    t->slots = malloc((t->slots_mask + 1) * sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return NULL;
    }
    memset(t->slots, 0xFF, (t->slots_mask + 1) * sizeof *t->slots);
    return t;
}

void omdp_fh_stage_tables_free(omdp_fh_stage_tables_t *t)
{
    if (!t)
        return;
    free(t->slots);
    free(t->series);
    free(t->routes);
    free(t->extras);
    free(t);
}

const omdp_fh_stage_series_t *omdp_fh_stage_tables_series(const omdp_fh_stage_tables_t *t, uint64_t *n)
{
    if (n)
        *n = t ? t->n_series : 0;
    return t ? t->series : NULL;
}

const uint32_t *omdp_fh_stage_tables_routes(const omdp_fh_stage_tables_t *t, uint64_t *n)
{
    if (n)
        *n = t ? t->n_series : 0;
    return t ? t->routes : NULL;
}

const omdp_fh_stage_extra_t *omdp_fh_stage_tables_extras(const omdp_fh_stage_tables_t *t, uint64_t *n)
{
    if (n)
        *n = t ? t->n_extras : 0;
    return t ? t->extras : NULL;
}

static int grow_slots(omdp_fh_stage_tables_t *t)
{
    uint64_t cap = (t->slots_mask + 1) * 2;
    uint32_t *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xFF, cap * sizeof *slots);
    for (uint64_t i = 0; i < t->n_series; i++) {
        uint64_t w[3];
        series_words(&t->series[i], w);
        uint64_t h = series_hash(w) & (cap - 1);
        while (slots[h] != EMPTY)
            h = (h + 1) & (cap - 1);
        slots[h] = (uint32_t)i;
    }
    free(t->slots);
    t->slots = slots;
    t->slots_mask = cap - 1;
    return 0;
}

/* Room for one more entry of `size` bytes in *arr (cap entries, doubled when full). */
static int reserve(void **arr, uint64_t *cap, uint64_t n, size_t size)
{
    if (n < *cap)
        return 0;
    uint64_t c = *cap ? *cap * 2 : 1024;
    void *p = realloc(*arr, c * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

int64_t stage_series_id(omdp_fh_stage_tables_t *t, const uint64_t w[3])
{
    uint64_t h = series_hash(w);
    for (uint64_t k = h & t->slots_mask;; k = (k + 1) & t->slots_mask) {
        uint32_t id = t->slots[k];
        if (id == EMPTY)
            break;
        uint64_t v[3];
        series_words(&t->series[id], v);
        if (v[0] == w[0] && v[1] == w[1] && v[2] == w[2])
            return id;
    }
    if (t->n_series >= EMPTY - 1)
        return -1;
    if (t->n_series >= t->cap_series) { /* both arrays grow together */
        uint64_t cap = t->cap_series, cap_routes = t->cap_series;
        if (reserve((void **)&t->routes, &cap_routes, t->n_series, sizeof *t->routes) ||
            reserve((void **)&t->series, &cap, t->n_series, sizeof *t->series))
            return -1;
        t->cap_series = cap;
    }
    if (2 * (t->n_series + 1) > t->slots_mask + 1 && grow_slots(t))
        return -1;
    uint64_t k = h & t->slots_mask;
    while (t->slots[k] != EMPTY)
        k = (k + 1) & t->slots_mask;
    uint32_t id = (uint32_t)t->n_series++;
    memcpy(&t->series[id], w, sizeof t->series[id]);
    t->routes[id] = STAGE_NO_ROUTE;
    t->slots[k] = id;
    return id;
}

int64_t stage_series_routed(const omdp_fh_stage_tables_t *t, const uint64_t w[3], uint32_t *route)
{
    uint64_t h = series_hash(w);
    for (uint64_t k = h & t->slots_mask;; k = (k + 1) & t->slots_mask) {
        uint32_t id = t->slots[k];
        if (id == EMPTY)
            return -1;
        uint64_t v[3];
        series_words(&t->series[id], v);
        if (v[0] == w[0] && (uint32_t)v[1] == (uint32_t)w[1] && v[2] == w[2] && t->routes[id] != STAGE_NO_ROUTE) {
            *route = t->routes[id];
            return id;
        }
    }
}

void stage_series_set_route(omdp_fh_stage_tables_t *t, uint64_t id, uint32_t route)
{
    if (id < t->n_series)
        t->routes[id] = route;
}

int64_t stage_extra_id(omdp_fh_stage_tables_t *t, const omdp_fh_stage_extra_t *x)
{
    if (t->n_extras >= OMDP_FH_STAGE_NO_EXTRA || reserve((void **)&t->extras, &t->cap_extras, t->n_extras, sizeof *x))
        return -1;
    t->extras[t->n_extras] = *x;
    return (int64_t)t->n_extras++;
}
