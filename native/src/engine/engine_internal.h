/* Private layout of the decision engine (engine.h is the contract; this is how it is kept).
 *
 * Series live in a preallocated array of 640-byte, cache-aligned books: line 0 holds the key,
 * the links and the NBBO (what every message touches), lines 1-9 the per-exchange quotes -
 * lines 1-6 the prices of four exchanges each (their bids, then their offers), lines 7-9
 * the sizes of eight each (bid sizes, then offer sizes) - so a quote reads and writes three
 * lines (line 0, its exchange's price line and size line) and the NBBO, when it must be
 * recomputed from every exchange, is whole vectors (engine_batch.c). The
 * hash table maps a 128-bit series key to a slot: open addressing, linear probing, at most
 * half full, entries (tag << 32 | slot + 1) so a probe compares a key only on a tag match.
 *
 * Fields another thread reads while the hot path runs (NBBO, twin links, table entries,
 * counts, counters) are C11 atomics used with relaxed or acquire/release order: plain moves
 * on x86, defined behaviour everywhere.
 */
#ifndef OMDP_ENGINE_INTERNAL_H
#define OMDP_ENGINE_INTERNAL_H

#include <stdalign.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "omdp/engine.h"
#include "omdp/engine_nbbo.h"
#include "omdp/relaxed_counter.h"

#define ENG_NONE_BID INT64_MIN /* no bid on this exchange / in the NBBO */
#define ENG_NONE_ASK INT64_MAX
#define ENG_NO_EXCH 0xFFu

/* series state bits */
#define ENG_ST_CROSSED 0x1u
#define ENG_ST_LOCKED 0x2u
#define ENG_ST_PARITY 0x4u     /* on the call's slot: the pair is in a parity break */

/* Exchange slots per field in a book's quote lines: OPRA's participants and the lanes up to
 * a multiple of 8 that always hold a missing quote (ENG_NONE_BID / ENG_NONE_ASK, size 0), so
 * a field is whole vectors and the price fields whole cache lines. */
#define ENG_LANES 24

/* The participant table (spec 8.1), in one place (engine_exchanges.c): participant byte ->
 * exchange index + 1 (0: not a participant exchange; 'O', OPRA itself, is not one), and
 * exchange index -> participant byte. The index order is the NBBO's tie order. */
extern const uint8_t eng_exch_of[256];
extern const uint8_t eng_exch_code[OMDP_ENGINE_EXCHANGES];

/* participant byte of exchange index ex, 0 for ENG_NO_EXCH or any index outside the table */
static inline uint8_t eng_exch_code_of(uint8_t ex)
{
    return ex < OMDP_ENGINE_EXCHANGES ? eng_exch_code[ex] : 0;
}

/* The prices of exchanges 4p .. 4p + 3 (one cache line) and the sizes of 8w .. 8w + 7 (one
 * line): a quote's price and size each on one line, where a field per line put them on four. */
typedef struct eng_px4 {
    int64_t bid[4];
    int64_t ask[4];
} eng_px4_t;

typedef struct eng_sz8 {
    uint32_t bid[8];
    uint32_t ask[8];
} eng_sz8_t;

typedef struct eng_series {
    /* cache line 0 */
    uint64_t k0;                 /* root (48 bits) | expiry code << 48 */
    uint64_t k1;                 /* strike_px | put << 63 */
    _Atomic int64_t nb_px;       /* NBBO bid, ENG_NONE_BID if none */
    _Atomic int64_t no_px;       /* NBBO offer, ENG_NONE_ASK if none */
    _Atomic uint32_t nb_sz;
    _Atomic uint32_t no_sz;
    _Atomic uint32_t seq;        /* seqlock over the NBBO fields: odd while writing */
    _Atomic uint32_t twin;       /* slot of the other leg, OMDP_ENGINE_NO_SLOT until seen */
    uint32_t group;              /* (underlying, expiry) group or OMDP_ENGINE_NO_SLOT */
    _Atomic uint8_t nb_ex;       /* exchange index of the NBBO bid, ENG_NO_EXCH if none */
    _Atomic uint8_t no_ex;
    uint8_t state;               /* ENG_ST_* */
    uint8_t is_put;
    uint8_t pad0[4];
    /* cache lines 1-9: exchange x's quote, read and written through ENG_BID .. ENG_ASK_SZ; a
     * missing side is ENG_NONE_BID / ENG_NONE_ASK with size 0; x >= OMDP_ENGINE_EXCHANGES
     * always missing */
    alignas(64) eng_px4_t px[ENG_LANES / 4];
    eng_sz8_t sz[ENG_LANES / 8];
} eng_series_t;

#define ENG_BID(s, x) ((s)->px[(x) >> 2].bid[(x) & 3])
#define ENG_ASK(s, x) ((s)->px[(x) >> 2].ask[(x) & 3])
#define ENG_BID_SZ(s, x) ((s)->sz[(x) >> 3].bid[(x) & 7])
#define ENG_ASK_SZ(s, x) ((s)->sz[(x) >> 3].ask[(x) & 7])

/* Written once when the series is first seen, before it is published; read by snapshots. */
typedef struct eng_series_meta {
    int64_t strike_px;
    uint32_t expiry;
    uint32_t underlying_id;
    uint8_t put_call;
    uint8_t root_len;
    char root[6];
} eng_series_meta_t;

/* A series' twin and NBBO sequence side by side, in a dense array: the batch pipeline's
 * twin stage reads the twin without waiting for the series' line 0, so when the quote
 * stores the sequence its line is already in cache; a mirror (omdp_engine_snapshot_update)
 * scans these 8 bytes a series, in order, to find the series that moved, instead of each
 * series' line 0. */
typedef struct eng_dense {
    _Atomic uint32_t twin;       /* eng_series_t.twin */
    _Atomic uint32_t seq;        /* eng_series_t.seq as of its last write (even) */
} eng_dense_t;

/* Counter indices: the order of the fields of omdp_engine_counters_t. */
enum {
    C_BATCHES, C_PROCESSED, C_QUOTES, C_OTHER, C_BAD_RECORD, C_BAD_SERIES, C_BAD_PARTICIPANT,
    C_BAD_PRICE, C_UNROUTED, C_TABLE_FULL, C_GROUPS_FULL, C_SERIES, C_GROUPS, C_SAMPLED, C_SIGNALS,
    C_SIG_CROSSED, C_SIG_LOCKED, C_SIG_OFF_SMILE, C_SIG_PARITY, C_BBO_CHECKED,
    C_BBO_BID_MISMATCH, C_BBO_OFFER_MISMATCH, C_BBO_BAD_INDICATOR, C_OUT_FULL_STOPS,
    C_REFS_PUBLISHED, C_COUNT
};

struct omdp_engine {
    omdp_engine_config_t cfg;
    /* hot path */
    eng_series_t *series;
    eng_series_meta_t *meta;
    eng_dense_t *dense;          /* each slot's twin and sequence, dense (eng_dense_t) */
    _Atomic uint64_t *table;
    uint32_t table_mask;
    _Atomic uint32_t n_series;
    uint32_t sample_left;        /* messages until the next sample */
    uint32_t refs_in_use;        /* buffer the hot path reads (its copy of refs_seen) */
    omdp_series_ref_t *refs[2];
    omdp_group_ref_t *grefs[2];  /* with refs: the same front/back */
    /* groups */
    _Atomic uint64_t *gtable;
    uint32_t gtable_mask;
    _Atomic uint32_t n_groups;
    omdp_engine_group_info_t *groups;
    /* pricing double buffer: front written by the refresher, seen by the hot path */
    alignas(64) _Atomic uint32_t refs_front;
    alignas(64) _Atomic uint32_t refs_seen;
    int refs_begun;              /* refresher side only: a begin awaits its publish */
    _Atomic uint32_t owners;     /* omdp_engine_retain / release */
    /* NBBO-change log (engine_nbbo.h), hot path's thread only; NULL: off */
    omdp_engine_nbbo_t *nbbo_log;
    uint32_t nbbo_cap;
    uint32_t nbbo_n;
    uint64_t nbbo_dropped;
    alignas(64) _Atomic uint64_t counters[C_COUNT];
};

_Static_assert(OMDP_ENGINE_EXCHANGES <= ENG_LANES, "every exchange has a lane");
_Static_assert(ENG_LANES % 8 == 0, "a field's lanes are whole vectors");
_Static_assert(sizeof(eng_px4_t) == 64 && sizeof(eng_sz8_t) == 64 && offsetof(eng_series_t, px) == 64 &&
                   offsetof(eng_series_t, sz) == 448,
               "an exchange's prices on one cache line, its sizes on one");
_Static_assert(sizeof(eng_series_t) == 640, "a series book is ten cache lines");
_Static_assert(sizeof(omdp_engine_counters_t) == C_COUNT * sizeof(uint64_t), "counter enum matches struct");
_Static_assert(sizeof(omdp_signal_t) == OMDP_SIGNAL_SIZE, "signal record size");
_Static_assert(sizeof(omdp_engine_series_info_t) == 64, "series info size");
_Static_assert(sizeof(omdp_series_ref_t) == 32, "series ref size");
_Static_assert(sizeof(omdp_group_ref_t) == 104, "group ref size");

static inline uint64_t eng_hash(uint64_t k0, uint64_t k1)
{
    uint64_t h = (k0 ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    h ^= (k1 + 0x632BE59BD9B4E019ull) * 0x94D049BB133111EBull;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

/* The 6 root bytes of a record as the low 48 bits (NUL padding included, as received).
 * Two loads combined in registers: a 6-byte memcpy into a zeroed 8-byte local is two
 * stores and one wider load, which cannot be forwarded from them (a store-forwarding
 * stall of ~12 cycles per message; perf put 7-9% of the engine's time on it). */
static inline uint64_t eng_root_bits(const char root[6])
{
    uint32_t lo;
    uint16_t hi;
    memcpy(&lo, root, 4);
    memcpy(&hi, root + 4, 2);
    return (uint64_t)lo | ((uint64_t)hi << 32);
}

/* 16-bit code of a YYYYMMDD date in 1970..2139, or -1 when it is not one. */
static inline int32_t eng_expiry_code(uint32_t yyyymmdd)
{
    uint32_t y = yyyymmdd / 10000u;
    uint32_t md = yyyymmdd - y * 10000u;
    uint32_t m = md / 100u;
    uint32_t d = md - m * 100u;
    if (y < 1970u || y > 2139u || m < 1u || m > 12u || d < 1u || d > 31u)
        return -1;
    return (int32_t)(((y - 1970u) * 12u + (m - 1u)) * 32u + (d - 1u));
}

/* Slot of key (k0, k1), or OMDP_ENGINE_NO_SLOT; *pos is the probe position where it would go. */
static inline uint32_t eng_lookup(const struct omdp_engine *e, uint64_t k0, uint64_t k1, uint64_t h,
                                  uint32_t *pos)
{
    uint32_t i = (uint32_t)h & e->table_mask;
    uint32_t tag = (uint32_t)(h >> 32);
    for (;;) {
        uint64_t ent = atomic_load_explicit(&e->table[i], memory_order_acquire);
        if (ent == 0) {
            *pos = i;
            return OMDP_ENGINE_NO_SLOT;
        }
        if ((uint32_t)(ent >> 32) == tag) {
            uint32_t slot = (uint32_t)ent - 1u;
            const eng_series_t *s = &e->series[slot];
            if (s->k0 == k0 && s->k1 == k1)
                return slot;
        }
        i = (i + 1u) & e->table_mask;
    }
}

/* engine_slots.c: the group (underlying, expiry), added when new (OMDP_ENGINE_NO_SLOT when
 * the groups are full: the caller counts it); a new slot's description (meta); and the slot,
 * its keys already set, linked to its twin both ways and published in the table at pos. */
uint32_t eng_group_find_or_add(struct omdp_engine *e, uint32_t underlying_id, uint32_t expiry);
void eng_series_describe(struct omdp_engine *e, uint32_t slot, int64_t strike_px, uint32_t expiry,
                         uint32_t underlying_id, uint8_t put_call, uint8_t root_len, const char root[6]);
void eng_series_link(struct omdp_engine *e, uint32_t slot, uint64_t h, uint32_t pos);

/* engine_price.c: limits of a just-inserted series from its group's model (front buffer) */
void eng_price_new_series(struct omdp_engine *e, uint32_t front, uint32_t slot);
/* engine_nbbo.c: one NBBO change into the log (which is set); full: counted dropped. */
void eng_nbbo_append(struct omdp_engine *e, const omdp_opra_msg_t *m, uint32_t slot, uint8_t quote_ex, int64_t bid,
                     uint32_t bid_sz, uint8_t bid_ex, int64_t ask, uint32_t ask_sz, uint8_t ask_ex);

static inline void eng_count(struct omdp_engine *e, int which, uint64_t by)
{
    omdp_counter_add(&e->counters[which], by);
}

/* The engine's arrays (engine_mem.c): from 2 MiB on, fresh zero mappings (2 MiB aligned, huge
 * pages asked for), below it zeroed heap memory; freed with the size they were asked for;
 * prefault touches every page now so a live hot path takes no first-touch fault later. */
void *eng_map_zeroed(size_t bytes);
void eng_unmap(void *p, size_t bytes);
void eng_prefault(void *p, size_t bytes);

#endif /* OMDP_ENGINE_INTERNAL_H */
