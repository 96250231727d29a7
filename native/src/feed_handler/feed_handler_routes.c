/* Routing by option root: an open-addressing table root -> (underlying, engine) (feed_handler.h). */
#include "omdp/feed_handler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint64_t key; /* root bytes, NUL padded; 0 = empty (a root is never empty) */
    uint32_t underlying_id;
    uint32_t engine;
} slot_t;

struct omdp_fh_routes {
    slot_t *slots;
    uint32_t mask;
    uint32_t shift;
    uint32_t n_engines;
};

static inline uint64_t root_key(const char *root, uint32_t len)
{
    uint64_t k = 0;
    memcpy(&k, root, len);
    return k;
}

static inline uint32_t slot_of(const omdp_fh_routes_t *t, uint64_t key)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> t->shift) & t->mask;
}

/* Length of a NUL padded root of at most `cap` bytes. */
static uint32_t padded_len(const char *root, uint32_t cap)
{
    uint32_t n = 0;
    while (n < cap && root[n])
        n++;
    return n;
}

omdp_fh_routes_t *omdp_fh_routes_new(const omdp_fh_route_t *routes, uint32_t n, uint32_t n_engines, char *err,
                                     size_t errlen)
{
    if (n_engines == 0 || n_engines > OMDP_FH_MAX_ENGINES) {
        snprintf(err, errlen, "n_engines %u outside 1..%u", n_engines, OMDP_FH_MAX_ENGINES);
        return NULL;
    }
    if (n > (1u << 28) || (n && !routes)) {
        snprintf(err, errlen, "routes: %u entries %s", n, routes ? "are too many" : "without an array");
        return NULL;
    }
    omdp_fh_routes_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint32_t cap = 16, bits = 4;
    while (cap < 2 * (uint64_t)n) {
        cap <<= 1;
        bits++;
    }
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) {
        free(t);
        snprintf(err, errlen, "out of memory (%u route slots)", cap);
        return NULL;
    }
    t->mask = cap - 1;
    t->shift = 64 - bits;
    t->n_engines = n_engines;
    for (uint32_t i = 0; i < n; i++) {
        const omdp_fh_route_t *r = &routes[i];
        uint32_t len = padded_len(r->root, OMDP_FH_ROOT_KEY);
        const char *why = NULL;
        if (len == 0)
            why = "empty root";
        else if (len > OMDP_OPRA_ROOT_MAX)
            why = "root longer than 6 bytes";
        else if (r->engine >= n_engines)
            why = "engine out of range";
        for (uint32_t k = len; !why && k < OMDP_FH_ROOT_KEY; k++)
            if (r->root[k])
                why = "bytes after the root's NUL padding";
        uint64_t key = why ? 0 : root_key(r->root, len);
        uint32_t s = why ? 0 : slot_of(t, key);
        while (!why && t->slots[s].key) {
            if (t->slots[s].key == key)
                why = "root given twice";
            s = (s + 1) & t->mask;
        }
        if (why) {
            snprintf(err, errlen, "route %u (root %.8s, engine %u): %s", i, len ? r->root : "", r->engine, why);
            omdp_fh_routes_free(t);
            return NULL;
        }
        t->slots[s] = (slot_t){key, r->underlying_id, r->engine};
    }
    return t;
}

void omdp_fh_routes_free(omdp_fh_routes_t *t)
{
    if (!t)
        return;
    free(t->slots);
    free(t);
}

int omdp_fh_routes_lookup(const omdp_fh_routes_t *t, const char *root, uint32_t root_len, uint32_t *underlying_id,
                          uint32_t *engine)
{
    if (root_len > OMDP_OPRA_ROOT_MAX)
        root_len = OMDP_OPRA_ROOT_MAX;
    root_len = padded_len(root, root_len);
    while (root_len > 0 && root[root_len - 1] == ' ')
        root_len--; /* roots are sent padded with spaces to a fixed width */
    return omdp_fh_routes_lookup_key(t, root_key(root, root_len), underlying_id, engine);
}

int omdp_fh_routes_lookup_key(const omdp_fh_routes_t *t, uint64_t key, uint32_t *underlying_id, uint32_t *engine)
{
    if (key == 0) {
        *underlying_id = OMDP_NO_UNDERLYING;
        return -1;
    }
    for (uint32_t s = slot_of(t, key);; s = (s + 1) & t->mask) {
        const slot_t *e = &t->slots[s];
        if (e->key == key) {
            *underlying_id = e->underlying_id;
            *engine = e->engine;
            return 1;
        }
        if (e->key == 0)
            break;
    }
    *underlying_id = OMDP_NO_UNDERLYING;
    *engine = (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) % t->n_engines;
    return 0;
}
