/* The decision engine's hot path: one batch of OPRA message records, per message in C.
 *
 * The batch is read-only (operator.h lends it): what the engine says about a message goes
 * into the records it appends. Per message: count, and for a 'k' quote
 * find or insert its series, store the exchange's quote, recompute the NBBO over every
 * participant exchange, check it against the feed's BBO indicator and appendages, check the quote
 * against its price band, the NBBO for crossed/locked and - when the quote moved the NBBO, or
 * new limits arrived with this batch - the call/put pair for parity;
 * forward 1 in N messages and every signal. de_in (the batch's arrival, read once) and
 * de_out (read once when the batch is done) are written into every record it appended.
 *
 * Signal policy (one anomaly, one signal): a quote outside its band raises OFF_SMILE and no
 * crossed/locked signal for the NBBO it distorts; otherwise the NBBO raises CROSSED or
 * LOCKED when it leaves the normal state (a locked market that then crosses, or the reverse,
 * is the same condition going on). A pair raises PARITY when it enters a break. States are
 * kept per series so a persisting condition is reported once.
 */
#include "engine_internal.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "omdp/clock.h"
#include "omdp/stamp_clock.h"

/* Software pipeline over the batch (see omdp_engine_process_batch): while message i is
 * processed, the series of message i + AHEAD_TWIN has its pair's line requested, the table
 * entry of message i + AHEAD_SLOT is read and its series lines requested, and the key of
 * message i + AHEAD_KEY is computed and its table entry requested - so each miss has a few
 * messages' worth of work to land in. PIPE slots hold the messages in flight. */
#define AHEAD_KEY 12
#define AHEAD_SLOT 8
#define AHEAD_TWIN 4
#define PIPE 16
_Static_assert(AHEAD_TWIN < AHEAD_SLOT && AHEAD_SLOT < AHEAD_KEY && AHEAD_KEY < PIPE && (PIPE & (PIPE - 1)) == 0,
               "pipeline stages in order and within the ring");

/* BBO indicator: 'A'..'P' = 4 x 4 (bid part, offer part), OPRA's table. */
enum { BID_NO_CHANGE, BID_CONTAINS, BID_NONE, BID_APPENDAGE };
enum { OFFER_NO_CHANGE, OFFER_CONTAINS, OFFER_APPENDAGE, OFFER_NONE };

typedef struct batch {
    struct omdp_engine *e;
    const omdp_series_ref_t *refs;
    uint8_t *out;
    uint32_t pos;
    int64_t t_in;        /* de_in of every record of this batch */
    uint32_t signaled;   /* signals raised by the current message */
    int refs_changed;    /* this batch took a new publish: re-check pairs whose NBBO stands */
    uint32_t front;      /* pricing buffer this batch reads */
    uint64_t c[C_COUNT];
} batch_t;

typedef struct nbbo {
    int64_t bid, ask;
    uint32_t bid_sz, ask_sz;
    uint8_t bid_ex, ask_ex;
} nbbo_t;

static uint32_t insert_series(batch_t *b, const omdp_opra_msg_t *m, uint64_t k0, uint64_t k1, uint64_t h,
                              uint32_t pos)
{
    struct omdp_engine *e = b->e;
    uint32_t slot = atomic_load_explicit(&e->n_series, memory_order_relaxed);
    if (slot >= e->cfg.max_series) {
        b->c[C_TABLE_FULL]++;
        return OMDP_ENGINE_NO_SLOT;
    }
    eng_series_t *s = &e->series[slot];
    s->k0 = k0;
    s->k1 = k1;
    atomic_store_explicit(&s->nb_px, ENG_NONE_BID, memory_order_relaxed);
    atomic_store_explicit(&s->no_px, ENG_NONE_ASK, memory_order_relaxed);
    atomic_store_explicit(&s->nb_sz, 0, memory_order_relaxed);
    atomic_store_explicit(&s->no_sz, 0, memory_order_relaxed);
    atomic_store_explicit(&s->nb_ex, ENG_NO_EXCH, memory_order_relaxed);
    atomic_store_explicit(&s->no_ex, ENG_NO_EXCH, memory_order_relaxed);
    atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
    s->state = 0;
    s->is_put = (uint8_t)(k1 >> 63);
    for (int x = 0; x < ENG_LANES; x++) {
        ENG_BID(s, x) = ENG_NONE_BID;
        ENG_ASK(s, x) = ENG_NONE_ASK;
        ENG_BID_SZ(s, x) = 0;
        ENG_ASK_SZ(s, x) = 0;
    }
    eng_series_describe(e, slot, m->strike_px, m->expiry, m->underlying_id, m->put_call, m->root_len, m->root);
    s->group = eng_group_find_or_add(e, m->underlying_id, m->expiry);
    if (s->group == OMDP_ENGINE_NO_SLOT)
        b->c[C_GROUPS_FULL]++;
    eng_series_link(e, slot, h, pos);
    atomic_store_explicit(&e->n_series, slot + 1u, memory_order_release);
    return slot;
}

static inline void read_nbbo(const eng_series_t *s, nbbo_t *o)
{
    o->bid = atomic_load_explicit(&s->nb_px, memory_order_relaxed);
    o->ask = atomic_load_explicit(&s->no_px, memory_order_relaxed);
    o->bid_sz = atomic_load_explicit(&s->nb_sz, memory_order_relaxed);
    o->ask_sz = atomic_load_explicit(&s->no_sz, memory_order_relaxed);
    o->bid_ex = atomic_load_explicit(&s->nb_ex, memory_order_relaxed);
    o->ask_ex = atomic_load_explicit(&s->no_ex, memory_order_relaxed);
}

/* The NBBO from every exchange's quote, exchange x's taken as (bid, bsz, ask, asz) (the book
 * is only read: quote_update stores the quote). Best bid: highest price, then largest size,
 * then first exchange in the table's order (engine_exchanges.c); best offer: lowest price,
 * same ties. A missing side never wins: when every exchange's side is missing the NBBO's is
 * too (price ENG_NONE_*, size 0, ENG_NO_EXCH).
 *
 * Recomputed from all lanes without a branch: the quote is merged into the lanes as they are
 * loaded, and one maximum over a tie key (size << 5 | (31 - k), below 2^37; 0 never beats a
 * lane at the price) picks the exchange among those at the best price. */
#if defined(__AVX512F__)
/* Eight exchanges a vector, ENG_LANES / 8 vectors a field: a vector's bids (offers) are the
 * first (second) halves of two price lines; sizes widened to 64 bits in registers so that
 * the tie key is one vector per eight exchanges. */
#define ENG_VECS (ENG_LANES / 8)
static inline void quote_nbbo(const eng_series_t *s, uint32_t x, int64_t bid, uint32_t bsz, int64_t ask, uint32_t asz,
                              nbbo_t *o)
{
    const uint32_t at = 1u << x;
    const __m512i bids = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0), asks = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    __m512i b[ENG_VECS], a[ENG_VECS], bs[ENG_VECS], as[ENG_VECS];
    __m512i bmax = _mm512_set1_epi64(ENG_NONE_BID), amin = _mm512_set1_epi64(ENG_NONE_ASK);
    for (int v = 0; v < ENG_VECS; v++) {
        __mmask8 m = (__mmask8)(at >> (8 * v));
        __m512i lo = _mm512_load_si512((const void *)&s->px[2 * v]), hi = _mm512_load_si512((const void *)&s->px[2 * v + 1]);
        b[v] = _mm512_mask_set1_epi64(_mm512_permutex2var_epi64(lo, bids, hi), m, bid);
        a[v] = _mm512_mask_set1_epi64(_mm512_permutex2var_epi64(lo, asks, hi), m, ask);
        bs[v] = _mm512_mask_set1_epi64(_mm512_cvtepu32_epi64(_mm256_load_si256((const void *)s->sz[v].bid)), m,
                                       (long long)bsz);
        as[v] = _mm512_mask_set1_epi64(_mm512_cvtepu32_epi64(_mm256_load_si256((const void *)s->sz[v].ask)), m,
                                       (long long)asz);
        bmax = _mm512_max_epi64(bmax, b[v]);
        amin = _mm512_min_epi64(amin, a[v]);
    }
    int64_t bp = _mm512_reduce_max_epi64(bmax), ap = _mm512_reduce_min_epi64(amin);
    const __m512i bpv = _mm512_set1_epi64(bp), apv = _mm512_set1_epi64(ap);
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    __m512i bk = _mm512_setzero_si512(), ak = _mm512_setzero_si512();
    for (int v = 0; v < ENG_VECS; v++) {
        __m512i first = _mm512_sub_epi64(_mm512_set1_epi64(31 - 8 * v), lane);
        bk = _mm512_mask_max_epu64(bk, _mm512_cmpeq_epi64_mask(b[v], bpv), bk,
                                   _mm512_or_si512(_mm512_slli_epi64(bs[v], 5), first));
        ak = _mm512_mask_max_epu64(ak, _mm512_cmpeq_epi64_mask(a[v], apv), ak,
                                   _mm512_or_si512(_mm512_slli_epi64(as[v], 5), first));
    }
    uint64_t br = _mm512_reduce_max_epu64(bk), ar = _mm512_reduce_max_epu64(ak);
    o->bid = bp;
    o->bid_sz = (uint32_t)(br >> 5);
    o->bid_ex = bp == ENG_NONE_BID ? ENG_NO_EXCH : (uint8_t)(31u - (unsigned)(br & 31u));
    o->ask = ap;
    o->ask_sz = (uint32_t)(ar >> 5);
    o->ask_ex = ap == ENG_NONE_ASK ? ENG_NO_EXCH : (uint8_t)(31u - (unsigned)(ar & 31u));
}
#elif defined(__AVX2__)
/* Four 64-bit lanes a vector (a price line's bids, or its offers), eight 32-bit lanes a size
 * vector. AVX2 has no 64-bit maximum or minimum: a compare and a blend. */
static inline __m256i max64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
}

static inline __m256i min64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b));
}

/* every lane the maximum (minimum) of v's four: halves swapped, then pairs */
static inline __m256i all_max64(__m256i v)
{
    v = max64(v, _mm256_permute2x128_si256(v, v, 0x01));
    return max64(v, _mm256_shuffle_epi32(v, 0x4E));
}

static inline __m256i all_min64(__m256i v)
{
    v = min64(v, _mm256_permute2x128_si256(v, v, 0x01));
    return min64(v, _mm256_shuffle_epi32(v, 0x4E));
}

/* The tie key (size << 5 | (31 - k)) of the eight exchanges of size vector sz (lanes
 * 8v .. 8v + 7) where their price (lo: the first four, hi: the last four) equals best, else
 * 0; the larger of the two halves' keys lane by lane. */
static inline __m256i tie_keys(__m256i sz, int v, __m256i lo, __m256i hi, __m256i best)
{
    const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0);
    __m256i first_lo = _mm256_sub_epi64(_mm256_set1_epi64x(31 - 8 * v), lane);
    __m256i first_hi = _mm256_sub_epi64(_mm256_set1_epi64x(27 - 8 * v), lane);
    __m256i klo = _mm256_or_si256(_mm256_slli_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(sz)), 5), first_lo);
    __m256i khi = _mm256_or_si256(_mm256_slli_epi64(_mm256_cvtepu32_epi64(_mm256_extracti128_si256(sz, 1)), 5), first_hi);
    klo = _mm256_and_si256(klo, _mm256_cmpeq_epi64(lo, best));
    khi = _mm256_and_si256(khi, _mm256_cmpeq_epi64(hi, best));
    return max64(klo, khi);
}

static inline void quote_nbbo(const eng_series_t *s, uint32_t x, int64_t bid, uint32_t bsz, int64_t ask, uint32_t asz,
                              nbbo_t *o)
{
    const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0), x64 = _mm256_set1_epi64x((long long)x);
    const __m256i bidv = _mm256_set1_epi64x(bid), askv = _mm256_set1_epi64x(ask);
    __m256i b[ENG_LANES / 4], a[ENG_LANES / 4];
    __m256i bmax = _mm256_set1_epi64x(ENG_NONE_BID), amin = _mm256_set1_epi64x(ENG_NONE_ASK);
    for (int v = 0; v < ENG_LANES / 4; v++) {
        __m256i at = _mm256_cmpeq_epi64(_mm256_add_epi64(lane, _mm256_set1_epi64x(4 * v)), x64);
        b[v] = _mm256_blendv_epi8(_mm256_load_si256((const void *)s->px[v].bid), bidv, at);
        a[v] = _mm256_blendv_epi8(_mm256_load_si256((const void *)s->px[v].ask), askv, at);
        bmax = max64(bmax, b[v]);
        amin = min64(amin, a[v]);
    }
    __m256i bp = all_max64(bmax), ap = all_min64(amin);
    const __m256i lane32 = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), x32 = _mm256_set1_epi32((int)x);
    __m256i bk = _mm256_setzero_si256(), ak = _mm256_setzero_si256();
    for (int v = 0; v < ENG_LANES / 8; v++) {
        __m256i at = _mm256_cmpeq_epi32(_mm256_add_epi32(lane32, _mm256_set1_epi32(8 * v)), x32);
        __m256i bs = _mm256_blendv_epi8(_mm256_load_si256((const void *)s->sz[v].bid), _mm256_set1_epi32((int)bsz), at);
        __m256i as = _mm256_blendv_epi8(_mm256_load_si256((const void *)s->sz[v].ask), _mm256_set1_epi32((int)asz), at);
        bk = max64(bk, tie_keys(bs, v, b[2 * v], b[2 * v + 1], bp));
        ak = max64(ak, tie_keys(as, v, a[2 * v], a[2 * v + 1], ap));
    }
    /* keys are below 2^37, so a signed maximum serves */
    uint64_t br = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(all_max64(bk)));
    uint64_t ar = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(all_max64(ak)));
    o->bid = _mm_cvtsi128_si64(_mm256_castsi256_si128(bp));
    o->bid_sz = (uint32_t)(br >> 5);
    o->bid_ex = o->bid == ENG_NONE_BID ? ENG_NO_EXCH : (uint8_t)(31u - (unsigned)(br & 31u));
    o->ask = _mm_cvtsi128_si64(_mm256_castsi256_si128(ap));
    o->ask_sz = (uint32_t)(ar >> 5);
    o->ask_ex = o->ask == ENG_NONE_ASK ? ENG_NO_EXCH : (uint8_t)(31u - (unsigned)(ar & 31u));
}
#else
/* Without AVX-512 or AVX2: the same steps as plain loops over the lanes. */
static inline void quote_nbbo(const eng_series_t *s, uint32_t x, int64_t bid, uint32_t bsz, int64_t ask, uint32_t asz,
                              nbbo_t *o)
{
    int64_t bp = ENG_NONE_BID, ap = ENG_NONE_ASK;
    for (uint32_t k = 0; k < ENG_LANES; k++) {
        int64_t p = k == x ? bid : ENG_BID(s, k), q = k == x ? ask : ENG_ASK(s, k);
        bp = p > bp ? p : bp;
        ap = q < ap ? q : ap;
    }
    uint64_t br = 0, ar = 0;
    for (uint32_t k = 0; k < ENG_LANES; k++) {
        int64_t p = k == x ? bid : ENG_BID(s, k), q = k == x ? ask : ENG_ASK(s, k);
        uint32_t psz = k == x ? bsz : ENG_BID_SZ(s, k), qsz = k == x ? asz : ENG_ASK_SZ(s, k);
        uint64_t kb = p == bp ? ((uint64_t)psz << 5 | (31u - k)) : 0;
        uint64_t ka = q == ap ? ((uint64_t)qsz << 5 | (31u - k)) : 0;
        br = kb > br ? kb : br;
        ar = ka > ar ? ka : ar;
    }
    o->bid = bp;
    o->bid_sz = (uint32_t)(br >> 5);
    o->bid_ex = bp == ENG_NONE_BID ? ENG_NO_EXCH : (uint8_t)(31u - (unsigned)(br & 31u));
    o->ask = ap;
    o->ask_sz = (uint32_t)(ar >> 5);
    o->ask_ex = ap == ENG_NONE_ASK ? ENG_NO_EXCH : (uint8_t)(31u - (unsigned)(ar & 31u));
}
#endif

/* The quote of exchange x stored and the NBBO brought up to date from the one before, reading
 * only the lines of lane x - unless x held a side of the NBBO and now offers less there, when
 * the side's next best can be on any exchange and quote_nbbo recomputes it from every lane.
 * Why: with today's series count (half a million an engine) the books live in memory, not in
 * cache, and a quote that read every exchange's lanes waited on all ten lines of its book;
 * this one waits on three (line 0 and lane x's price and size lines; stage_slot requests
 * them) and on the others only for the holder's retreat. An incremental update was tried
 * before the branch-free recompute and lost to it on the model market, whose books were in
 * cache: it branched on "is this quote better", a coin toss. This one selects that, and
 * branches only on the holder's retreat (rarer, and its lines requested ahead by the twin
 * stage). The NBBO is the maximum of a key over the lanes (bid: price, then size, then the first
 * exchange; offer: the lowest price, then size, then the first exchange), so a lane other
 * than the holder's moves it only by beating it, and a missing side never wins. */
static inline int bid_beats(int64_t p, uint32_t sz, uint32_t x, const nbbo_t *o)
{
    return (p != ENG_NONE_BID) & ((p > o->bid) | ((p == o->bid) & ((sz > o->bid_sz) | ((sz == o->bid_sz) & (x < o->bid_ex)))));
}

static inline int ask_beats(int64_t p, uint32_t sz, uint32_t x, const nbbo_t *o)
{
    return (p != ENG_NONE_ASK) & ((p < o->ask) | ((p == o->ask) & ((sz > o->ask_sz) | ((sz == o->ask_sz) & (x < o->ask_ex)))));
}

static inline void quote_update(eng_series_t *s, uint32_t x, int64_t bid, uint32_t bsz, int64_t ask, uint32_t asz,
                                const nbbo_t *before, nbbo_t *o)
{
    int bid_new = bid_beats(bid, bsz, x, before), ask_new = ask_beats(ask, asz, x, before);
    /* the holder keeps its side when its quote there is as good as before (equal or better) */
    int bid_kept = bid_new | ((bid == before->bid) & (bsz == before->bid_sz));
    int ask_kept = ask_new | ((ask == before->ask) & (asz == before->ask_sz));
    if (__builtin_expect(((x == before->bid_ex) & !bid_kept) | ((x == before->ask_ex) & !ask_kept), 0)) {
        quote_nbbo(s, x, bid, bsz, ask, asz, o); /* reads the book before the stores below */
    } else {
        /* selects, not branches: whether a quote beats the NBBO is a coin toss */
        o->bid = bid_new ? bid : before->bid;
        o->bid_sz = bid_new ? bsz : before->bid_sz;
        o->bid_ex = bid_new ? (uint8_t)x : before->bid_ex;
        o->ask = ask_new ? ask : before->ask;
        o->ask_sz = ask_new ? asz : before->ask_sz;
        o->ask_ex = ask_new ? (uint8_t)x : before->ask_ex;
    }
    ENG_BID(s, x) = bid;
    ENG_ASK(s, x) = ask;
    ENG_BID_SZ(s, x) = bsz;
    ENG_ASK_SZ(s, x) = asz;
}

static inline int nbbo_bid_equal(const nbbo_t *a, const nbbo_t *b)
{
    return (a->bid == b->bid) & (a->bid_sz == b->bid_sz) & (a->bid_ex == b->bid_ex);
}

static inline int nbbo_ask_equal(const nbbo_t *a, const nbbo_t *b)
{
    return (a->ask == b->ask) & (a->ask_sz == b->ask_sz) & (a->ask_ex == b->ask_ex);
}

/* The NBBO under the series' seqlock, and the new sequence beside the twin in the dense
 * array (what a mirror scans; its line is in cache since the twin stage). */
static inline void write_nbbo(struct omdp_engine *e, uint32_t slot, const nbbo_t *n)
{
    eng_series_t *s = &e->series[slot];
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 1u, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->nb_px, n->bid, memory_order_relaxed);
    atomic_store_explicit(&s->no_px, n->ask, memory_order_relaxed);
    atomic_store_explicit(&s->nb_sz, n->bid_sz, memory_order_relaxed);
    atomic_store_explicit(&s->no_sz, n->ask_sz, memory_order_relaxed);
    atomic_store_explicit(&s->nb_ex, n->bid_ex, memory_order_relaxed);
    atomic_store_explicit(&s->no_ex, n->ask_ex, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 2u, memory_order_release);
    atomic_store_explicit(&e->dense[slot].seq, q + 2u, memory_order_release);
}

/* Does our NBBO agree with what the feed says about the best bid and offer after this quote? */
static void check_bbo(batch_t *b, const omdp_opra_msg_t *m, int x, int64_t bid, uint32_t bsz, int64_t ask,
                      uint32_t asz, const nbbo_t *before, const nbbo_t *now)
{
    uint8_t ind = m->bbo_ind;
    if (ind == ' ' || ind == 0)
        return;
    if (ind < 'A' || ind > 'P') {
        b->c[C_BBO_BAD_INDICATOR]++;
        return;
    }
    b->c[C_BBO_CHECKED]++;
    int bp = (ind - 'A') >> 2, op = (ind - 'A') & 3;
    int ok;
    switch (bp) {
    case BID_NO_CHANGE:
        ok = nbbo_bid_equal(before, now);
        break;
    case BID_CONTAINS:
        ok = bid != ENG_NONE_BID && now->bid == bid && now->bid_sz == bsz && now->bid_ex == x;
        break;
    case BID_NONE:
        ok = now->bid == ENG_NONE_BID;
        break;
    default: {
        int px = eng_exch_of[m->best_bid_part] - 1;
        if (px < 0)
            b->c[C_BBO_BAD_INDICATOR]++;
        ok = px >= 0 && now->bid == m->best_bid_px && now->bid_sz == m->best_bid_size && now->bid_ex == px;
        break;
    }
    }
    if (!ok)
        b->c[C_BBO_BID_MISMATCH]++;
    switch (op) {
    case OFFER_NO_CHANGE:
        ok = nbbo_ask_equal(before, now);
        break;
    case OFFER_CONTAINS:
        ok = ask != ENG_NONE_ASK && now->ask == ask && now->ask_sz == asz && now->ask_ex == x;
        break;
    case OFFER_NONE:
        ok = now->ask == ENG_NONE_ASK;
        break;
    default: {
        int px = eng_exch_of[m->best_offer_part] - 1;
        if (px < 0)
            b->c[C_BBO_BAD_INDICATOR]++;
        ok = px >= 0 && now->ask == m->best_offer_px && now->ask_sz == m->best_offer_size && now->ask_ex == px;
        break;
    }
    }
    if (!ok)
        b->c[C_BBO_OFFER_MISMATCH]++;
}

static void emit_signal(batch_t *b, const omdp_opra_msg_t *m, uint8_t kind, int64_t bid, int64_t ask, int64_t lo,
                        int64_t hi, int64_t beyond, uint8_t bid_part, uint8_t offer_part)
{
    omdp_signal_t *sg = (omdp_signal_t *)(void *)(b->out + b->pos);
    memset(sg, 0, sizeof *sg);
    sg->hdr.type = OMDP_RT_SIGNAL;
    sg->hdr.length = OMDP_SIGNAL_SIZE;
    sg->hdr.flags = OMDP_RF_SIGNAL;
    sg->hdr.stamps = m->hdr.stamps;
    sg->hdr.stamps.de_in = b->t_in;
    sg->block_seq = m->block_seq;
    sg->msg_seq = m->msg_seq;
    sg->strike_px = m->strike_px;
    sg->bid_px = bid;
    sg->offer_px = ask;
    sg->ref_lo = lo;
    sg->ref_hi = hi;
    sg->value = (double)beyond / (double)OMDP_PRICE_SCALE;
    sg->time = m->time;
    sg->expiry = m->expiry;
    sg->underlying_id = m->underlying_id;
    sg->line = m->line;
    sg->engine = b->e->cfg.engine_id;
    sg->kind = kind;
    sg->put_call = m->put_call;
    sg->participant = m->participant;
    sg->root_len = m->root_len <= 6 ? m->root_len : 6;
    memcpy(sg->root, m->root, sizeof sg->root);
    sg->bid_part = bid_part;
    sg->offer_part = offer_part;
    b->pos += OMDP_SIGNAL_SIZE;
    b->signaled++;
    b->c[C_SIGNALS]++;
    b->c[kind == OMDP_SIG_CROSSED ? C_SIG_CROSSED : kind == OMDP_SIG_LOCKED ? C_SIG_LOCKED
         : kind == OMDP_SIG_OFF_SMILE ? C_SIG_OFF_SMILE : C_SIG_PARITY]++;
}

/* The call/put pair's parity check, when `gate` (the quote moved this series' NBBO, or new
 * limits arrived with this batch). Both legs' NBBOs and the pair's limits are read for every
 * quote and the gate applied to the result: on a random feed "did the NBBO move" is a coin
 * toss, and a branch on it cost more than the loads (their lines were requested ahead). */
static inline void check_parity(batch_t *b, const omdp_opra_msg_t *m, eng_series_t *s, uint32_t slot, int gate)
{
    struct omdp_engine *e = b->e;
    uint32_t tw = atomic_load_explicit(&s->twin, memory_order_relaxed);
    if (tw == OMDP_ENGINE_NO_SLOT)
        return;
    /* the call and the put of the pair by arithmetic on the slots: written as selects,
     * gcc branched on is_put, and which leg a quote is for is a coin toss (perf: a
     * mispredicted branch on every other quote) */
    uint32_t put_mask = 0u - (uint32_t)s->is_put;
    uint32_t cslot = slot ^ ((slot ^ tw) & put_mask);
    uint32_t pslot = tw ^ ((tw ^ slot) & put_mask);
    eng_series_t *c = &e->series[cslot];
    eng_series_t *p = &e->series[pslot];
    int64_t cb = atomic_load_explicit(&c->nb_px, memory_order_relaxed);
    int64_t ca = atomic_load_explicit(&c->no_px, memory_order_relaxed);
    int64_t pb = atomic_load_explicit(&p->nb_px, memory_order_relaxed);
    int64_t pa = atomic_load_explicit(&p->no_px, memory_order_relaxed);
    /* no check while either leg is crossed or locked or misses a side */
    int live = gate & !((c->state | p->state) & (ENG_ST_CROSSED | ENG_ST_LOCKED)) & (cb != ENG_NONE_BID) &
               (pb != ENG_NONE_BID) & (ca != ENG_NONE_ASK) & (pa != ENG_NONE_ASK);
    const omdp_series_ref_t *r = &b->refs[cslot];
    int64_t syn_bid = cb - pa, syn_ask = ca - pb;
    int broken = (syn_bid > r->parity_hi) | (syn_ask < r->parity_lo);
    uint8_t was = c->state;
    uint8_t now = broken ? (uint8_t)(was | ENG_ST_PARITY) : (uint8_t)(was & ~ENG_ST_PARITY);
    c->state = live ? now : was;
    if (__builtin_expect(live & broken & !(was & ENG_ST_PARITY), 0)) {
        int64_t beyond = syn_bid > r->parity_hi ? syn_bid - r->parity_hi : r->parity_lo - syn_ask;
        emit_signal(b, m, OMDP_SIG_PARITY, syn_bid, syn_ask, r->parity_lo, r->parity_hi, beyond, 0, 0);
    }
}

/* What a quote's series key needs, computed ahead of processing so the table entry and the
 * series' lines can be requested messages before they are used. */
typedef struct pending {
    uint64_t k0, k1, h;
    uint32_t slot;       /* OMDP_ENGINE_NO_SLOT until looked up / inserted */
    int8_t x;            /* exchange index */
    uint8_t verdict;     /* V_* */
} pending_t;

enum { V_NOT_QUOTE, V_QUOTE, V_BAD_PARTICIPANT, V_UNROUTED, V_BAD_SERIES };

static inline void key_of(const omdp_opra_msg_t *m, pending_t *q)
{
    q->slot = OMDP_ENGINE_NO_SLOT;
    if (m->hdr.type != OMDP_RT_OPRA_MSG || m->hdr.length != OMDP_OPRA_MSG_SIZE || m->category != 'k') {
        q->verdict = V_NOT_QUOTE;
        return;
    }
    q->x = (int8_t)(eng_exch_of[m->participant] - 1);
    if (q->x < 0) {
        q->verdict = V_BAD_PARTICIPANT;
        return;
    }
    if (m->underlying_id == OMDP_NO_UNDERLYING) {
        q->verdict = V_UNROUTED;
        return;
    }
    uint8_t pc = m->put_call;
    int32_t code = eng_expiry_code(m->expiry);
    if ((pc != 'C' && pc != 'P') || m->strike_px <= 0 || code < 0) {
        q->verdict = V_BAD_SERIES;
        return;
    }
    q->k0 = eng_root_bits(m->root) | ((uint64_t)code << 48);
    q->k1 = (uint64_t)m->strike_px | ((uint64_t)(pc == 'P') << 63);
    q->h = eng_hash(q->k0, q->k1);
    q->verdict = V_QUOTE;
}

static void process_quote(batch_t *b, const omdp_opra_msg_t *m, pending_t *q)
{
    struct omdp_engine *e = b->e;
    switch (q->verdict) {
    case V_BAD_PARTICIPANT:
        b->c[C_BAD_PARTICIPANT]++;
        return;
    case V_UNROUTED:
        b->c[C_UNROUTED]++;
        return;
    case V_BAD_SERIES:
        b->c[C_BAD_SERIES]++;
        return;
    default:
        break;
    }
    int x = q->x;
    uint32_t slot = q->slot;
    if (slot == OMDP_ENGINE_NO_SLOT || e->series[slot].k0 != q->k0 || e->series[slot].k1 != q->k1) {
        /* the guess missed (another key, not yet inserted, or inserted since by an earlier
         * message in flight): the full lookup */
        uint32_t pos = 0;
        slot = eng_lookup(e, q->k0, q->k1, q->h, &pos);
        if (slot == OMDP_ENGINE_NO_SLOT) {
            slot = insert_series(b, m, q->k0, q->k1, q->h, pos);
            if (slot == OMDP_ENGINE_NO_SLOT)
                return;
            eng_price_new_series(e, b->front, slot);
        }
    }
    b->c[C_QUOTES]++;
    eng_series_t *s = &e->series[slot];

    int64_t bid = ENG_NONE_BID, ask = ENG_NONE_ASK;
    uint32_t bsz = 0, asz = 0;
    if (m->bid_px > OMDP_ENGINE_MAX_PX || m->offer_px > OMDP_ENGINE_MAX_PX)
        b->c[C_BAD_PRICE]++;
    if (m->bid_px > 0 && m->bid_px <= OMDP_ENGINE_MAX_PX && m->bid_size > 0) {
        bid = m->bid_px;
        bsz = m->bid_size;
    }
    if (m->offer_px > 0 && m->offer_px <= OMDP_ENGINE_MAX_PX && m->offer_size > 0) {
        ask = m->offer_px;
        asz = m->offer_size;
    }
    nbbo_t before, now;
    read_nbbo(s, &before);
    quote_update(s, (uint32_t)x, bid, bsz, ask, asz, &before, &now);
    int changed = !nbbo_bid_equal(&before, &now) | !nbbo_ask_equal(&before, &now);
    write_nbbo(e, slot, &now); /* unconditional: a branch on `changed` is a coin toss on a random feed */
    if (__builtin_expect(b->e->nbbo_log != NULL, 0) && changed)
        eng_nbbo_append(b->e, m, slot, (uint8_t)x, now.bid, now.bid_sz, now.bid_ex, now.ask, now.ask_sz, now.ask_ex);
    check_bbo(b, m, x, bid, bsz, ask, asz, &before, &now);

    const omdp_series_ref_t *r = &b->refs[slot];
    int off_bid = bid != ENG_NONE_BID && bid > r->band_hi;
    int off_ask = ask != ENG_NONE_ASK && ask < r->band_lo;

    uint8_t book = 0;
    if (now.bid != ENG_NONE_BID && now.ask != ENG_NONE_ASK)
        book = now.bid > now.ask ? ENG_ST_CROSSED : now.bid == now.ask ? ENG_ST_LOCKED : 0;
    uint8_t was = s->state & (ENG_ST_CROSSED | ENG_ST_LOCKED);
    s->state = (uint8_t)((s->state & ~(ENG_ST_CROSSED | ENG_ST_LOCKED)) | book);

    if (off_bid || off_ask) {
        int64_t beyond_bid = off_bid ? bid - r->band_hi : 0;
        int64_t beyond_ask = off_ask ? r->band_lo - ask : 0;
        emit_signal(b, m, OMDP_SIG_OFF_SMILE, bid == ENG_NONE_BID ? 0 : bid, ask == ENG_NONE_ASK ? 0 : ask,
                    r->band_lo, r->band_hi, beyond_bid > beyond_ask ? beyond_bid : beyond_ask, 0, 0);
    } else if (book && !was) {
        emit_signal(b, m, book == ENG_ST_CROSSED ? OMDP_SIG_CROSSED : OMDP_SIG_LOCKED, now.bid, now.ask, 0, 0,
                    now.bid - now.ask, eng_exch_code_of(now.bid_ex), eng_exch_code_of(now.ask_ex));
    }
    check_parity(b, m, s, slot, changed | b->refs_changed);
}

/* Pipeline stage 1: the message's key, and a request for its table entry (and for the
 * records a little further on). */
static inline void stage_key(const struct omdp_engine *e, const omdp_opra_msg_t *m, const omdp_opra_msg_t *ahead,
                             pending_t *q)
{
    if (ahead) {
        const char *r = (const char *)ahead;
        __builtin_prefetch(r, 0, 3);
        __builtin_prefetch(r + 64, 0, 3);
        __builtin_prefetch(r + 128, 0, 3);
        __builtin_prefetch(r + 192, 0, 3);
    }
    key_of(m, q);
    if (q->verdict == V_QUOTE)
        __builtin_prefetch((const void *)&e->table[(uint32_t)q->h & e->table_mask], 0, 3);
}

/* Stage 2: the slot of the first table entry with the key's tag, probing from home as the
 * lookup does (a key displaced by a collision is found here, not by a dependent lookup when
 * its message is processed), as a guess that process_quote checks against the key; and
 * requests for the lines this quote reads and writes: the series' line 0, its exchange's
 * price line and size line (quote_update), and its limits. */
static inline void stage_slot(const struct omdp_engine *e, const omdp_series_ref_t *refs, pending_t *q)
{
    if (q->verdict != V_QUOTE)
        return;
    uint32_t i = (uint32_t)q->h & e->table_mask, tag = (uint32_t)(q->h >> 32);
    uint64_t ent;
    for (;;) {
        ent = atomic_load_explicit(&e->table[i], memory_order_acquire);
        if (ent == 0)
            return;
        if ((uint32_t)(ent >> 32) == tag)
            break;
        i = (i + 1u) & e->table_mask;
    }
    uint32_t slot = (uint32_t)ent - 1u;
    q->slot = slot;
    const eng_series_t *s = &e->series[slot];
    uint32_t x = (uint32_t)q->x;
    __builtin_prefetch(s, 1, 3);
    __builtin_prefetch(&s->px[x >> 2], 1, 3);
    __builtin_prefetch(&s->sz[x >> 3], 1, 3);
    __builtin_prefetch(&refs[slot], 0, 3);
    __builtin_prefetch(&e->dense[slot], 0, 3); /* the twin stage reads it next */
}

/* Stage 3: the other leg's line 0 and the pair's limits, which the parity check reads (the
 * twin from the dense copy, requested by stage 2 beside the series' line 0), and the rest of
 * the book when the quote's exchange holds a side of the NBBO. */
static inline void stage_twin(const struct omdp_engine *e, const omdp_series_ref_t *refs, pending_t *q)
{
    if (q->slot == OMDP_ENGINE_NO_SLOT)
        return;
    /* a quote from the exchange that holds a side of the NBBO may recompute it from every
     * lane (quote_update): the rest of its book is requested now. Without it the model
     * market of `omdp bench engine` (six exchanges, so a quote's exchange often holds a side)
     * waited on those lines: 92 ns a message against 72 for the whole-book request before */
    const eng_series_t *s = &e->series[q->slot];
    uint8_t x = (uint8_t)q->x;
    if ((x == atomic_load_explicit(&s->nb_ex, memory_order_relaxed)) |
        (x == atomic_load_explicit(&s->no_ex, memory_order_relaxed)))
        for (size_t line = 64; line < sizeof *s; line += 64)
            __builtin_prefetch((const char *)s + line, 0, 3);
    uint32_t tw = atomic_load_explicit(&e->dense[q->slot].twin, memory_order_relaxed);
    if (tw == OMDP_ENGINE_NO_SLOT)
        return;
    __builtin_prefetch(&e->series[tw], 1, 3);
    /* the pair's limits are on the call's slot: the twin's for a put, its own (requested by
     * stage 2) for a call; chosen without a branch, put or call being a coin toss */
    uint32_t put_mask = 0u - (uint32_t)(q->k1 >> 63);
    __builtin_prefetch(&refs[q->slot ^ ((q->slot ^ tw) & put_mask)], 0, 3);
}

/* Message j of the batch: msgs[j], or msgs[idx[j]] for a gathered one. */
#define MSG_AT(j) (idx ? &msgs[idx[j]] : &msgs[j])

/* The batch loop over msgs[0..n), or over msgs[idx[0..n)] when idx is given (arguments
 * checked by the callers); inlined into each so the plain one does no index loads. */
static inline __attribute__((always_inline)) int32_t run_batch(omdp_engine_t *e, const omdp_opra_msg_t *msgs,
                                                               const uint32_t *idx, uint32_t n, uint8_t *out,
                                                               uint32_t out_cap, uint32_t *out_len)
{
    int64_t t_in = omdp_stamp_ns();

    batch_t b;
    memset(b.c, 0, sizeof b.c);
    b.e = e;
    b.t_in = t_in;
    b.out = out;
    b.pos = *out_len;
    uint32_t front = atomic_load_explicit(&e->refs_front, memory_order_acquire);
    b.refs_changed = front != e->refs_in_use;
    if (b.refs_changed) {
        e->refs_in_use = front;
        atomic_store_explicit(&e->refs_seen, front, memory_order_release);
        b.c[C_REFS_PUBLISHED]++;
    }
    b.refs = e->refs[front];
    b.front = front;
    uint32_t start = b.pos;
    uint32_t every = e->cfg.sample_every;
    uint32_t sample_left = e->sample_left; /* a local: a store through any pointer could alias the field */

    pending_t q[PIPE];
    const uint32_t mask = PIPE - 1;
    for (uint32_t j = 0; j < n && j < AHEAD_KEY; j++)
        stage_key(e, MSG_AT(j), j + AHEAD_KEY < n ? MSG_AT(j + AHEAD_KEY) : NULL, &q[j & mask]);
    for (uint32_t j = 0; j < n && j < AHEAD_SLOT; j++)
        stage_slot(e, b.refs, &q[j & mask]);
    for (uint32_t j = 0; j < n && j < AHEAD_TWIN; j++)
        stage_twin(e, b.refs, &q[j & mask]);
    uint32_t i = 0;
    for (; i < n; i++) {
        if (i + AHEAD_KEY < n)
            stage_key(e, MSG_AT(i + AHEAD_KEY), i + 2 * AHEAD_KEY < n ? MSG_AT(i + 2 * AHEAD_KEY) : NULL,
                      &q[(i + AHEAD_KEY) & mask]);
        if (i + AHEAD_SLOT < n)
            stage_slot(e, b.refs, &q[(i + AHEAD_SLOT) & mask]);
        if (i + AHEAD_TWIN < n)
            stage_twin(e, b.refs, &q[(i + AHEAD_TWIN) & mask]);
        if (out_cap - b.pos < OMDP_ENGINE_MAX_OUT_PER_MSG) {
            b.c[C_OUT_FULL_STOPS]++;
            break;
        }
        const omdp_opra_msg_t *m = MSG_AT(i);
        if (m->hdr.type != OMDP_RT_OPRA_MSG || m->hdr.length != OMDP_OPRA_MSG_SIZE) {
            b.c[C_BAD_RECORD]++;
            continue;
        }
        b.c[C_PROCESSED]++;
        b.signaled = 0;
        if (m->category == 'k')
            process_quote(&b, m, &q[i & mask]);
        else
            b.c[C_OTHER]++;
        if (every && --sample_left == 0) {
            sample_left = every;
            omdp_opra_msg_t *copy = (omdp_opra_msg_t *)(void *)(out + b.pos);
            memcpy(copy, m, OMDP_OPRA_MSG_SIZE);
            copy->hdr.flags |= OMDP_RF_SAMPLED | (b.signaled ? OMDP_RF_SIGNAL : 0u);
            copy->hdr.stamps.de_in = t_in;
            b.pos += OMDP_OPRA_MSG_SIZE;
            b.c[C_SAMPLED]++;
        }
    }
    e->sample_left = sample_left;
    if (b.pos != start) {
        int64_t t_out = omdp_stamp_ns();
        for (uint32_t p = start; p < b.pos;) {
            omdp_record_header_t *h = (omdp_record_header_t *)(void *)(out + p);
            h->stamps.de_out = t_out;
            p += h->length;
        }
    }
    if (i)
        b.c[C_BATCHES]++;
    *out_len = b.pos;
    for (int k = 0; k < C_COUNT; k++)
        if (b.c[k])
            eng_count(e, k, b.c[k]);
    return (int32_t)i;
}

static int args_ok(const omdp_engine_t *e, const omdp_opra_msg_t *msgs, uint32_t n, const uint8_t *out,
                   uint32_t out_cap, const uint32_t *out_len)
{
    return e && (msgs || !n) && out && out_len && *out_len <= out_cap && !((uintptr_t)msgs & 7u) &&
           !((uintptr_t)out & 7u) && !(*out_len & 7u) && n <= INT32_MAX;
}

int32_t omdp_engine_process_batch(omdp_engine_t *e, const omdp_opra_msg_t *msgs, uint32_t n, uint8_t *out,
                                  uint32_t out_cap, uint32_t *out_len)
{
    if (!args_ok(e, msgs, n, out, out_cap, out_len))
        return OMDP_ENGINE_EINVAL;
    if (out_cap < OMDP_ENGINE_MAX_OUT_PER_MSG)
        return OMDP_ENGINE_EOUTSMALL;
    return run_batch(e, msgs, NULL, n, out, out_cap, out_len);
}

int32_t omdp_engine_process_gather(omdp_engine_t *e, const omdp_opra_msg_t *msgs, uint32_t n_msgs,
                                   const uint32_t *idx, uint32_t n, uint8_t *out, uint32_t out_cap,
                                   uint32_t *out_len)
{
    if (!args_ok(e, msgs, n_msgs, out, out_cap, out_len) || (!idx && n) || n > INT32_MAX)
        return OMDP_ENGINE_EINVAL;
    for (uint32_t j = 0; j < n; j++)
        if (idx[j] >= n_msgs)
            return OMDP_ENGINE_EINVAL;
    if (out_cap < OMDP_ENGINE_MAX_OUT_PER_MSG)
        return OMDP_ENGINE_EOUTSMALL;
    if (!n)
        return 0;
    return run_batch(e, msgs, idx, n, out, out_cap, out_len);
}
