/* OPRA FAST V2 decoder (spec sections 2-6): packets -> omdp_opra_msg_t records.
 *
 * The dictionary is an array indexed by slot (the root keeps its bytes and, in the top
 * byte, its length), so COPY is "keep the entry" and INCREMENT "add one"; `have` is the set
 * of slots given a value since the packet began, checked once per message, not per field.
 * A message is decoded into the dictionary, then the record is written from it.
 *
 * Two paths give the same result. Quotes ('k', >= 99.9% of the feed) take a fast path:
 * the message (<= 64 bytes) is scanned once for stop bits, which mark the end of every
 * field, so field boundaries come from bit operations instead of a chain of dependent
 * varint reads. Where the build has AVX-512 VBMI/VBMI2 all fields are then extracted at
 * once (opra_fast_fields.h) and the record is written from vector registers
 * (opra_fast_quote_record.h); elsewhere values are read with one unaligned load and a bit
 * compaction each. Anything the fast path does not accept - other categories, long
 * messages, any irregularity - goes to the field-by-field path, which is also the one that
 * reports errors with their exact offset and slot. Nothing reads outside the packet.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "opra_fast_fields.h"
#include "opra_fast_internal.h"
#include "opra_fast_quote_record.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the OPRA decoder's word loads assume a little-endian machine"
#endif

#define STOPS 0x8080808080808080ULL
#define FAST_WINDOW 80 /* bytes the quote fast path may load from a message's start */
#define S_K_ANY (S_HDR | S_SERIES | SLOT(15) | SLOT(25) | SLOT(26) | SLOT(27) | SLOT(28) | SLOT(29) | SLOT(30) | \
                 S_BEST_BID | S_BEST_OFFER)

static const uint64_t lowmask[9] = {
    0, 0xFFULL, 0xFFFFULL, 0xFFFFFFULL, 0xFFFFFFFFULL, 0xFFFFFFFFFFULL, 0xFFFFFFFFFFFFULL,
    0xFFFFFFFFFFFFFFULL, ~0ULL,
};

/* A short string of the 'Y' dictionary: up to 8 bytes, zero padded. */
typedef struct ystr {
    uint64_t b;
    uint8_t len;
} ystr_t;

typedef struct dec {
    /* dictionary: slot -> value (slot 6: root bytes | length << 56); the quote path loads
     * and stores it 8 slots at a time: aligned, none of those splits a cache line. Entry 64
     * is a spare the scalar quote path writes past a message's last field. */
    _Alignas(64) uint64_t dv[72];
    uint64_t have;           /* slots given a value since the packet began */
    uint32_t text_off, text_len; /* slot 48, as stored in side */
    uint32_t def_off, def_len;   /* slot 49 */
    ystr_t ys[5];            /* string slots 41..45 */
    const uint8_t *tail_at;  /* the packet's last FAST_WINDOW bytes (or all, if shorter) ... */
    uint8_t tail[2 * FAST_WINDOW]; /* ... copied here, zeros after */
    const uint8_t *pkt;      /* packet start: error offsets are relative to it */
    const uint8_t *pe;       /* one past the packet's last byte */
    uint8_t *side;
    uint32_t side_cap, side_pos;
    uint64_t block_seq;
    uint64_t packet_index;
    int32_t msg_index;
    omdp_opra_error_t *err;
} dec_t;

static int fail(dec_t *D, int code, int slot, const uint8_t *at) {
    if (D->err) {
        D->err->packet_index = D->packet_index;
        D->err->code = code;
        D->err->offset = (uint32_t)(at - D->pkt);
        D->err->message_index = D->msg_index;
        D->err->slot = slot;
    }
    return code;
}

static inline uint64_t load8(const uint8_t *p, const uint8_t *pe) {
    uint64_t x = 0;
    if (LIKELY(pe - p >= 8)) memcpy(&x, p, 8);
    else memcpy(&x, p, (size_t)(pe - p));
    return x;
}

static inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* An unsigned integer at p of a message ending at me: bytes used (1..5) or an error. */
static inline int rd_uint(const uint8_t *p, const uint8_t *me, const uint8_t *pe, uint64_t *v) {
    uint64_t x = load8(p, pe);
    size_t avail = (size_t)(me - p);
    uint64_t stops = x & STOPS & lowmask[min_sz(avail, 5)];
    if (UNLIKELY(!stops)) return avail >= 5 ? OMDP_OPRA_E_OVERLONG_INT : OMDP_OPRA_E_FIELD_PAST_MSG;
    int n = (__builtin_ctzll(stops) >> 3) + 1;
    /* byte 0 holds the most significant group: reverse, keep n bytes, compact 7-bit groups */
    uint64_t y = (__builtin_bswap64(x) >> (64 - 8 * n)) & 0x7F7F7F7F7FULL;
#ifdef __BMI2__
    *v = _pext_u64(y, 0x7F7F7F7F7FULL);
#else
    *v = (y & 0x7FULL) | ((y >> 1) & 0x3F80ULL) | ((y >> 2) & 0x1FC000ULL) | ((y >> 3) & 0xFE00000ULL) |
         ((y >> 4) & 0x7F0000000ULL);
#endif
    return n;
}

/* A string of at most cap (<= 8) bytes: bytes used, or an error; s gets it zero padded. */
static inline int rd_sstr(const uint8_t *p, const uint8_t *me, const uint8_t *pe, unsigned cap, ystr_t *s) {
    uint64_t x = load8(p, pe);
    size_t avail = (size_t)(me - p);
    uint64_t stops = x & STOPS & lowmask[min_sz(avail, 8)];
    if (UNLIKELY(!stops)) return avail > cap ? OMDP_OPRA_E_STRING_TOO_LONG : OMDP_OPRA_E_FIELD_PAST_MSG;
    unsigned n = (unsigned)(__builtin_ctzll(stops) >> 3) + 1;
    if (UNLIKELY(n > cap)) return OMDP_OPRA_E_STRING_TOO_LONG;
    s->b = x & lowmask[n] & ~(0x80ULL << (8 * (n - 1)));
    s->len = (uint8_t)n;
    return (int)n;
}

/* Slot 48 or 49: up to 450 bytes copied to side with the stop bit cleared. */
static int rd_text(dec_t *D, const uint8_t *p, const uint8_t *me, int slot, uint32_t *off, uint32_t *len) {
    size_t avail = (size_t)(me - p);
    size_t lim = min_sz(avail, OMDP_OPRA_TEXT_MAX);
    size_t n = 0;
    while (n < lim && !(p[n] & 0x80)) n++;
    if (n == lim) return fail(D, avail > OMDP_OPRA_TEXT_MAX ? OMDP_OPRA_E_STRING_TOO_LONG : OMDP_OPRA_E_FIELD_PAST_MSG, slot, p);
    n++;
    if ((uint64_t)D->side_pos + n > D->side_cap) return fail(D, OMDP_OPRA_E_CAPACITY, slot, p);
    memcpy(D->side + D->side_pos, p, n);
    D->side[D->side_pos + n - 1] &= 0x7F;
    *off = D->side_pos;
    *len = (uint32_t)n;
    D->side_pos += (uint32_t)n;
    return (int)n;
}

/* Slots absent from the pmap whose dictionary entry is unset, or pmap bits outside the
 * layout: the first such slot is the error. */
static inline int check_slots(dec_t *D, uint64_t pm, uint64_t need, uint64_t allowed, const uint8_t *at) {
    uint64_t unused = pm & ~allowed;
    if (UNLIKELY(unused)) return fail(D, OMDP_OPRA_E_UNUSED_SLOT, __builtin_ctzll(unused), at);
    uint64_t missing = need & ~S_STRINGS & ~pm & ~D->have;
    if (UNLIKELY(missing)) {
        int s = __builtin_ctzll(missing);
        return fail(D, s == 4 ? OMDP_OPRA_E_NO_PREVIOUS : OMDP_OPRA_E_NO_DICT_VALUE, s, at);
    }
    return 0;
}

#define READ_INT(slot, max, store)                                                         \
    do {                                                                                   \
        if (pm & SLOT(slot)) {                                                             \
            uint64_t v_;                                                                   \
            int n_ = rd_uint(p, me, pe, &v_);                                              \
            if (UNLIKELY(n_ < 0)) return fail(D, n_, slot, p);                             \
            if (UNLIKELY(v_ > (max))) return fail(D, OMDP_OPRA_E_VALUE_RANGE, slot, p);    \
            store;                                                                         \
            p += n_;                                                                       \
        }                                                                                  \
    } while (0)
#define U8(slot) READ_INT(slot, 0xFFu, dv[slot] = v_)
#define U32(slot) READ_INT(slot, 0xFFFFFFFFu, dv[slot] = v_)
#define U64(slot) READ_INT(slot, ~0ULL, dv[slot] = v_)

static inline int64_t px(uint64_t den, uint64_t v) {
    int64_t m = omdp_opra_den_mult[den & 0xFF];
    return m ? (int64_t)v * m : OMDP_UNDEF_PRICE;
}

/* ---- writing a record from the dictionary ------------------------------------------- */

/* A record with everything but the message's own fields: copied whole, then filled in. */
static const omdp_opra_msg_t blank_record = {
    .hdr = {.type = OMDP_RT_OPRA_MSG, .length = OMDP_OPRA_MSG_SIZE},
    .underlying_id = OMDP_NO_UNDERLYING,
};

static inline void emit_start(const dec_t *D, omdp_opra_msg_t *o, uint64_t fields) {
    *o = blank_record;
    o->block_seq = D->block_seq;
    o->fields = fields;
    o->index = (uint16_t)D->msg_index;
    o->category = (uint8_t)D->dv[0];
}

static inline void emit_header(const uint64_t *dv, omdp_opra_msg_t *o) {
    o->msg_type = (uint8_t)dv[1];
    o->participant = (uint8_t)dv[2];
    o->retrans = (uint8_t)dv[3];
    o->msg_seq = dv[4];
    o->time = (uint32_t)dv[5];
}

static inline void emit_series(const uint64_t *dv, omdp_opra_msg_t *o) {
    memcpy(o->root, &dv[6], OMDP_OPRA_ROOT_MAX);
    o->root_len = (uint8_t)(dv[6] >> 56);
    uint8_t mc = (uint8_t)dv[7], day = (uint8_t)dv[8], year = (uint8_t)dv[9];
    o->month_code = mc;
    o->expiry_day = day;
    o->expiry_year = year;
    o->strike_den = (uint8_t)dv[10];
    o->strike = (uint32_t)dv[11];
    o->strike_code = (uint8_t)dv[12];
    o->strike_px = px(dv[10], dv[11]);
    uint32_t mo = omdp_opra_month[mc];
    o->put_call = omdp_opra_put_call[mc];
    if (mo && day >= 1 && day <= 31 && year <= 99) o->expiry = (2000u + year) * 10000u + mo * 100u + day;
}

static inline void emit_k(const uint64_t *dv, omdp_opra_msg_t *o, int kind) {
    o->premium_den = (uint8_t)dv[15];
    o->bid = (uint32_t)dv[25];
    o->bid_size = (uint32_t)dv[26];
    o->offer = (uint32_t)dv[27];
    o->offer_size = (uint32_t)dv[28];
    o->session = (uint8_t)dv[29];
    o->bbo_ind = (uint8_t)dv[30];
    o->bid_px = px(dv[15], dv[25]);
    o->offer_px = px(dv[15], dv[27]);
    if (kind & 1) {
        o->best_bid_part = (uint8_t)dv[31];
        o->best_bid_den = (uint8_t)dv[32];
        o->best_bid = (uint32_t)dv[33];
        o->best_bid_size = (uint32_t)dv[34];
        o->best_bid_px = px(dv[32], dv[33]);
    }
    if (kind & 2) {
        o->best_offer_part = (uint8_t)dv[35];
        o->best_offer_den = (uint8_t)dv[36];
        o->best_offer = (uint32_t)dv[37];
        o->best_offer_size = (uint32_t)dv[38];
        o->best_offer_px = px(dv[36], dv[37]);
    }
}

static void emit_body(const uint64_t *dv, omdp_opra_msg_t *o, int L) {
    switch (L) {
    case L_A:
        o->volume = (uint32_t)dv[13];
        o->premium_den = (uint8_t)dv[15];
        o->premium = (uint32_t)dv[16];
        o->session = (uint8_t)dv[29];
        o->premium_px = px(dv[15], dv[16]);
        break;
    case L_D:
        o->open_interest = (uint32_t)dv[14];
        break;
    case L_F:
        o->volume = (uint32_t)dv[13];
        o->open_interest = (uint32_t)dv[14];
        o->premium_den = (uint8_t)dv[15];
        o->open = (uint32_t)dv[17];
        o->high = (uint32_t)dv[18];
        o->low = (uint32_t)dv[19];
        o->last = (uint32_t)dv[20];
        o->net_change_ind = (uint8_t)dv[21];
        o->net_change = (uint32_t)dv[22];
        o->underlying_den = (uint8_t)dv[23];
        o->underlying_raw = dv[24];
        o->bid = (uint32_t)dv[25];
        o->offer = (uint32_t)dv[27];
        o->bid_px = px(dv[15], dv[25]);
        o->offer_px = px(dv[15], dv[27]);
        break;
    default:
        emit_k(dv, o, L - L_K);
        break;
    }
}

/* Bit k of the result = slot k, from the pmap bytes in x (already cut to their length). */
static inline uint64_t pmap_bits(uint64_t x) {
#if defined(__GFNI__) && defined(__BMI2__)
    /* reverse the bits of every byte, drop the stop bits, squeeze out the gaps */
    __m128i v = _mm_gf2p8affine_epi64_epi8(_mm_cvtsi64_si128((long long)x), _mm_set1_epi64x(0x8040201008040201LL), 0);
    return _pext_u64(((uint64_t)_mm_cvtsi128_si64(v) >> 1) & 0x7F7F7F7F7F7F7F7FULL, 0x7F7F7F7F7F7F7F7FULL);
#elif defined(__SSSE3__) && defined(__BMI2__)
    /* reverse the bits of every byte with two nibble lookups, then as above */
    const __m128i nib = _mm_setr_epi8(0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15);
    const __m128i lo4 = _mm_set1_epi8(0x0F);
    __m128i v = _mm_cvtsi64_si128((long long)x);
    __m128i r = _mm_or_si128(_mm_slli_epi16(_mm_shuffle_epi8(nib, _mm_and_si128(v, lo4)), 4),
                             _mm_shuffle_epi8(nib, _mm_and_si128(_mm_srli_epi16(v, 4), lo4)));
    return _pext_u64((uint64_t)_mm_cvtsi128_si64(r) >> 1, 0x7F7F7F7F7F7F7F7FULL);
#else
    uint64_t pm = 0;
    for (int i = 0; i < 8; i++) pm |= (uint64_t)omdp_opra_rev7[(x >> (8 * i)) & 0x7F] << (7 * i);
    return pm;
#endif
}

static inline unsigned tz64(uint64_t m) {
#ifdef __BMI__
    return (unsigned)_tzcnt_u64(m);
#else
    return m ? (unsigned)__builtin_ctzll(m) : 64u;
#endif
}

/* ---- the field-by-field path: every category, every error ---------------------------- */

/* What the record of a message is written from, besides the dictionary: its layout, the
 * slots it carries, and its variable part in side (text, or 'Y' entries). */
typedef struct msg_shape {
    int L;
    uint64_t fields;
    uint32_t var_off, var_len, y_count;
} msg_shape_t;

/* The parts of decode_message below read a message's fields from *pp on (the message ends
 * at me) into the dictionary and advance *pp past them: 0, or a negative code with the
 * error filled in. Always inlined: together they are one function, as fast as one. */
#define MSG_PART static inline __attribute__((always_inline))

/* The presence map at p: bytes used (its slot bits in *pm), or a negative code. */
MSG_PART int read_pmap(dec_t *D, const uint8_t *p, const uint8_t *me, uint64_t *pm) {
    uint64_t x = load8(p, D->pe);
    size_t avail = (size_t)(me - p);
    uint64_t stops = x & STOPS & lowmask[min_sz(avail, 8)];
    if (UNLIKELY(!stops)) return fail(D, avail >= 8 ? OMDP_OPRA_E_PMAP_TOO_LONG : OMDP_OPRA_E_FIELD_PAST_MSG, -1, p);
    int nb = (__builtin_ctzll(stops) >> 3) + 1;
    *pm = pmap_bits(x & lowmask[nb]);
    return nb;
}

/* Slot 0, the category: the message's layout and the slots it must and may carry. */
MSG_PART int read_category(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, msg_shape_t *s) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    const uint8_t *fields_at = p;
    U8(0);
    if (UNLIKELY(!((pm | D->have) & SLOT(0)))) return fail(D, OMDP_OPRA_E_NO_DICT_VALUE, 0, p);
    int L;
    uint64_t allowed;
    switch (dv[0]) {
    case 'k': L = L_K; allowed = S_K_ANY; break;
    case 'a': L = L_A; allowed = omdp_opra_layout_slots[L_A]; break;
    case 'd': L = L_D; allowed = omdp_opra_layout_slots[L_D]; break;
    case 'f': L = L_F; allowed = omdp_opra_layout_slots[L_F]; break;
    case 'C':
    case 'H': L = L_TEXT; allowed = omdp_opra_layout_slots[L_TEXT]; break;
    case 'Y': L = L_Y_SPACE; allowed = S_HDR | SLOT(39) | SLOT(40) | S_Y_ENTRY; break;
    case '?': L = L_DEFAULT; allowed = omdp_opra_layout_slots[L_DEFAULT]; break;
    default: return fail(D, OMDP_OPRA_E_UNKNOWN_CATEGORY, 0, fields_at);
    }
    uint64_t need = dv[0] == 'Y' ? S_HDR : omdp_opra_layout_slots[L];
    int rc = check_slots(D, pm, need, allowed, p);
    if (UNLIKELY(rc)) return rc;
    s->L = L;
    s->fields = omdp_opra_layout_slots[L];
    *pp = p;
    return 0;
}

/* Slots 1-5, the header of every category but the default one; an absent slot 4 (the
 * message sequence number) counts up from the previous message's. */
MSG_PART int read_header_fields(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    U8(1);
    U8(2);
    U8(3);
    if (pm & SLOT(4)) {
        U64(4);
    } else {
        dv[4] += 1;
    }
    U32(5);
    *pp = p;
    return 0;
}

/* Slots 6-12, the series: root, expiry, strike. */
MSG_PART int read_series_fields(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    if (pm & SLOT(6)) {
        ystr_t r;
        int n = rd_sstr(p, me, pe, OMDP_OPRA_ROOT_MAX, &r);
        if (UNLIKELY(n < 0)) return fail(D, n, 6, p);
        dv[6] = r.b | (uint64_t)r.len << 56;
        p += n;
    }
    U8(7);
    U8(8);
    U8(9);
    U8(10);
    U32(11);
    U8(12);
    *pp = p;
    return 0;
}

/* A quote's body: the bid and offer, then the best bid and offer its BBO indicator (slot
 * 30) says follow, which settles the layout. */
MSG_PART int read_quote_fields(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, msg_shape_t *s) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    U8(15);
    U32(25);
    U32(26);
    U32(27);
    U32(28);
    U8(29);
    U8(30);
    int kind = omdp_opra_bbo_kind[dv[30] & 0xFF];
    s->L = L_K + kind;
    s->fields = omdp_opra_layout_slots[s->L];
    int rc = check_slots(D, pm, s->fields, s->fields, p);
    if (UNLIKELY(rc)) return rc;
    if (kind & 1) {
        U8(31);
        U8(32);
        U32(33);
        U32(34);
    }
    if (kind & 2) {
        U8(35);
        U8(36);
        U32(37);
        U32(38);
    }
    *pp = p;
    return 0;
}

/* The body of a last sale ('a'), open interest ('d') or end-of-day summary ('f'). */
MSG_PART int read_value_fields(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, int L) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    if (L == L_A) {
        U32(13);
        U8(15);
        U32(16);
        U8(29);
    } else if (L == L_D) {
        U32(14);
    } else {
        U32(13);
        U32(14);
        U8(15);
        U32(17);
        U32(18);
        U32(19);
        U32(20);
        U8(21);
        U32(22);
        U8(23);
        U64(24);
        U32(25);
        U32(27);
    }
    *pp = p;
    return 0;
}

/* A message of a series: the series, then the body of its category. */
MSG_PART int read_series_message(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, msg_shape_t *s) {
    int rc = read_series_fields(D, pm, pp, me);
    if (UNLIKELY(rc)) return rc;
    if (s->L == L_K) return read_quote_fields(D, pm, pp, me, s);
    return read_value_fields(D, pm, pp, me, s->L);
}

/* A text message (slot 48, or 49 of the default category): the text, kept in side. */
MSG_PART int read_text_message(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, int slot, uint32_t *off,
                                    uint32_t *len, msg_shape_t *s) {
    if (pm & SLOT(slot)) {
        int n = rd_text(D, *pp, me, slot, off, len);
        if (n < 0) return n;
        *pp += n;
    }
    s->var_off = *len ? *off : 0;
    s->var_len = *len;
    return 0;
}

/* One 'Y' entry of a layout whose string and value slots are `slots` (0: none). */
MSG_PART int read_y_entry(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, const uint8_t *slots,
                               omdp_opra_y_entry_t *en) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    memset(en, 0, sizeof *en);
    for (int k = 0; k < 3 && slots[k]; k++) {
        int s = slots[k];
        if (s == 46 || s == 47) {
            READ_INT(s, s == 46 ? 0xFFu : 0xFFFFFFFFu, dv[s] = v_);
            if (s == 46) en->decimals = (uint8_t)dv[46];
            else en->spot = (uint32_t)dv[47];
            continue;
        }
        ystr_t *ys = &D->ys[s - 41];
        if (pm & SLOT(s)) {
            int n = rd_sstr(p, me, pe, omdp_opra_slots[s].cap, ys);
            if (UNLIKELY(n < 0)) return fail(D, n, s, p);
            p += n;
        }
        if (s == 41 || s == 45) {
            memcpy(en->symbol, &ys->b, 4);
            en->symbol_len = ys->len;
        } else if (s == 44) {
            memcpy(en->offer, &ys->b, 8);
            en->offer_len = ys->len;
        } else {
            memcpy(en->value, &ys->b, 8);
            en->value_len = ys->len;
        }
    }
    *pp = p;
    return 0;
}

/* A 'Y' message (underlying values): its type (slot 1) picks the layout; a count, then that
 * many entries, written to side as omdp_opra_y_entry_t. */
MSG_PART int read_y_message(dec_t *D, uint64_t pm, const uint8_t **pp, const uint8_t *me, msg_shape_t *s) {
    const uint8_t *p = *pp, *pe = D->pe;
    uint64_t *dv = D->dv;
    int yl = y_layout((uint8_t)dv[1]);
    if (yl < 0) return fail(D, OMDP_OPRA_E_Y_TYPE, 1, p);
    s->L = yl;
    s->fields = omdp_opra_layout_slots[s->L];
    int cslot = s->L == L_Y_FC ? 40 : 39;
    int rc = check_slots(D, pm, s->fields & ~S_Y_ENTRY, s->fields, p);
    if (UNLIKELY(rc)) return rc;
    READ_INT(cslot, OMDP_OPRA_Y_MAX, dv[cslot] = v_);
    s->y_count = (uint32_t)dv[cslot];
    if (s->y_count == 0) {
        s->fields &= ~S_Y_ENTRY;
        *pp = p;
        return 0;
    }
    rc = check_slots(D, pm, s->fields, s->fields, p);
    if (UNLIKELY(rc)) return rc;
    uint32_t start = (D->side_pos + 7u) & ~7u;
    uint32_t bytes = s->y_count * (uint32_t)sizeof(omdp_opra_y_entry_t);
    if ((uint64_t)start + bytes > D->side_cap) return fail(D, OMDP_OPRA_E_CAPACITY, cslot, p);
    static const uint8_t y_slots[3][3] = {{41, 42, 0}, {41, 43, 44}, {45, 46, 47}};
    const uint8_t *slots = y_slots[s->L - L_Y_SPACE];
    for (uint32_t e = 0; e < s->y_count; e++) {
        omdp_opra_y_entry_t en;
        rc = read_y_entry(D, pm, &p, me, slots, &en);
        if (rc) return rc;
        memcpy(D->side + start + e * sizeof en, &en, sizeof en);
    }
    D->side_pos = start + bytes;
    s->var_off = start;
    s->var_len = bytes;
    *pp = p;
    return 0;
}

/* The record of a decoded message, from the dictionary. */
MSG_PART void emit_record(const dec_t *D, omdp_opra_msg_t *o, const msg_shape_t *s) {
    const uint64_t *dv = D->dv;
    emit_start(D, o, s->fields);
    if (s->L == L_DEFAULT) {
        o->category = '?';
    } else {
        emit_header(dv, o);
    }
    if (s->fields & SLOT(11)) {
        emit_series(dv, o);
        emit_body(dv, o, s->L);
    }
    o->var_off = s->var_off;
    o->var_len = (uint16_t)s->var_len;
    o->y_count = (uint16_t)s->y_count;
}

/* Decode one message [p, me) into o. Returns 0 or a negative code. Kept out of the packet
 * loop (decode_one), which the quote fast path serves; its helpers are inlined here. */
static __attribute__((noinline)) int decode_message(dec_t *D, const uint8_t *p, const uint8_t *me, omdp_opra_msg_t *o) {
    uint64_t pm;
    int rc = read_pmap(D, p, me, &pm);
    if (UNLIKELY(rc < 0)) return rc;
    p += rc;
    msg_shape_t s = {.L = 0, .fields = 0, .var_off = 0, .var_len = 0, .y_count = 0};
    rc = read_category(D, pm, &p, me, &s);
    if (UNLIKELY(rc)) return rc;
    if (LIKELY(s.L != L_DEFAULT)) {
        rc = read_header_fields(D, pm, &p, me);
        if (UNLIKELY(rc)) return rc;
    }
    switch (s.L) {
    case L_K:
    case L_A:
    case L_D:
    case L_F: rc = read_series_message(D, pm, &p, me, &s); break;
    case L_TEXT: rc = read_text_message(D, pm, &p, me, 48, &D->text_off, &D->text_len, &s); break;
    case L_DEFAULT: rc = read_text_message(D, pm, &p, me, 49, &D->def_off, &D->def_len, &s); break;
    default: rc = read_y_message(D, pm, &p, me, &s); break;
    }
    if (UNLIKELY(rc)) return rc;
    if (UNLIKELY(p != me)) return fail(D, OMDP_OPRA_E_TRAILING_BYTES, -1, p);
    D->have |= s.fields;
    emit_record(D, o, &s);
    return 0;
}

/* ---- the quote fast path -------------------------------------------------------------- */

/* Bits a 'k' slot's value must not have to fit its record field (the root is a string;
 * 40..64 zero: the scalar path's spare slot 64 takes anything). */
#define HI8 (~0xFFULL)
#define HI32 (~0xFFFFFFFFULL)
static const uint64_t k_high[65] = {
    HI8, HI8, HI8, HI8, 0, HI32, 0, HI8, HI8, HI8, HI8, HI32, HI8, 0, 0, HI8, 0, 0, 0, 0,
    0, 0, 0, 0, 0, HI32, HI32, HI32, HI32, HI8, HI8, HI8, HI8, HI32, HI32, HI8, HI8, HI32, HI32, 0,
};

#include <stdatomic.h>
static atomic_int fast_path_enabled = 1;

int omdp_opra_set_fast_path(int enabled) {
    return atomic_exchange_explicit(&fast_path_enabled, enabled ? 1 : 0, memory_order_relaxed);
}


#ifdef OPRA_FAST_VECTOR_FIELDS
/* What the vector quote path keeps in registers for a packet. */
typedef struct fast_ctx {
    opra_field_consts_t fc;
    __m512i head; /* the records' first 64 bytes (quote_record_head) */
} fast_ctx_t;
#define FAST_CONSTS , const fast_ctx_t *fx
#define FAST_CONSTS_ARG , &fx
#else
#define FAST_CONSTS
#define FAST_CONSTS_ARG
#endif

#ifdef OPRA_FAST_VECTOR_FIELDS
/* The bits of a 'k' value that must be clear, by slot, for the slots 8c..8c+7 of chunk c
 * (k_high in vector form; chunk 2, slots 16-23, is never in a quote). */
static inline __m512i k_high_chunk(int c) {
    return _mm512_loadu_si512((const void *)(k_high + 8 * c));
}

/* The quote of len bytes at b (in the window), w its first 64 bytes, into the dictionary,
 * all fields at once (opra_fast_fields.h), and its record into o (opra_fast_quote_record.h).
 * `stops` has the message's stop bits, the pmap's included; the caller has checked that
 * every field after the pmap is 1..5 bytes.
 * Returns 0, or -1, leaving the dictionary and o untouched, when the message is not exactly
 * a well-formed quote (a field too many or too few, a value out of range, a slot outside its
 * layout or without a value): the field-by-field path then decodes it and says why. */
static inline __attribute__((always_inline)) int decode_quote_vector(dec_t *D, const fast_ctx_t *fx, const uint8_t *b, __m512i w,
                                                                    uint64_t stops, uint64_t pm, size_t len,
                                                                    omdp_opra_msg_t *o) {
    const opra_field_consts_t *fc = &fx->fc;
    unsigned nf = (unsigned)__builtin_popcountll(pm); /* <= 28: quote slots only */
    /* one stop per field after the pmap's, the last on the message's last byte (none after
     * it: stops holds the message's bytes only) */
    if (UNLIKELY(((unsigned)__builtin_popcountll(stops) ^ (nf + 1)) | (unsigned)!((stops >> (len - 1)) & 1))) return -1;
    __m512i w7 = _mm512_and_si512(w, _mm512_set1_epi8(0x7F));
    __m512i E = opra_stop_positions(fc, stops);
    uint64_t *dv = D->dv;
    unsigned r1 = (unsigned)__builtin_popcountll(pm & 0xFF);
    unsigned r3 = (unsigned)__builtin_popcountll(pm & 0xFFFFFF);
    unsigned r4 = r3 + (unsigned)__builtin_popcountll(pm & 0xFF000000ULL);
    /* the values of the slots 8-15, 24-31 and 32-39 start at fields r1, r3 and r4 */
    __m512i v0 = opra_field_group(fc, w7, E, 0), f1, f3, f4;
    if (LIKELY(nf <= 16)) {
        /* lanes that wrap around are past the last field: never expanded */
        __m512i v1 = opra_field_group(fc, w7, E, 1); /* zeros if none: cheaper than a mispredicted branch */
        f1 = opra_fields_from(v0, v1, r1);
        f3 = opra_fields_from(v0, v1, r3);
        f4 = opra_fields_from(v0, v1, r4);
    } else {
        __m512i v[5] = {v0, opra_field_group(fc, w7, E, 1), opra_field_group(fc, w7, E, 2), _mm512_setzero_si512(),
                        _mm512_setzero_si512()};
        if (nf > 24) v[3] = opra_field_group(fc, w7, E, 3);
        f1 = opra_fields_from(v[r1 >> 3], v[(r1 >> 3) + 1], r1 & 7);
        f3 = opra_fields_from(v[r3 >> 3], v[(r3 >> 3) + 1], r3 & 7);
        f4 = opra_fields_from(v[r4 >> 3], v[(r4 >> 3) + 1], r4 & 7);
    }
    __mmask8 k0 = (__mmask8)pm, k1 = (__mmask8)(pm >> 8), k3 = (__mmask8)(pm >> 24), k4 = (__mmask8)(pm >> 32);
    __m512i d0 = _mm512_mask_expand_epi64(_mm512_loadu_si512((const void *)dv), k0, v0);
    __m512i d1 = _mm512_mask_expand_epi64(_mm512_loadu_si512((const void *)(dv + 8)), k1, f1);
    __m512i d3 = _mm512_mask_expand_epi64(_mm512_loadu_si512((const void *)(dv + 24)), k3, f3);
    __m512i d4 = _mm512_mask_expand_epi64(_mm512_loadu_si512((const void *)(dv + 32)), k4, f4);
    __mmask8 bad = _mm512_mask_test_epi64_mask(k0, d0, k_high_chunk(0)) | _mm512_mask_test_epi64_mask(k1, d1, k_high_chunk(1)) |
                   _mm512_mask_test_epi64_mask(k3, d3, k_high_chunk(3)) | _mm512_mask_test_epi64_mask(k4, d4, k_high_chunk(4));
    uint64_t bbo = (uint64_t)_mm_cvtsi128_si64(_mm512_extracti64x2_epi64(d3, 3)); /* slot 30: lane 6 */
    int kind = omdp_opra_bbo_kind[bbo & 0xFF];
    uint64_t fields = omdp_opra_layout_slots[L_K + kind];
    if (UNLIKELY(bad | (pm & ~fields) | (fields & ~S_STRINGS & ~pm & ~D->have))) return -1;
    {
        /* the root is a string: its bytes as sent, the stop bit cleared, its length on top;
         * worked out whether sent or not (a branch here was mispredicted), kept if sent */
        unsigned r6 = (unsigned)__builtin_popcountll(pm & 0x3F);
        unsigned start = tz64(_pdep_u64(1ULL << r6, stops)) + 1, end = tz64(_pdep_u64(2ULL << r6, stops));
        unsigned n = (end - start + 1) & 7; /* 1..5 when sent */
        uint64_t rw;
        memcpy(&rw, b + (start & 63), 8); /* inside the 80-byte window */
        uint64_t root = (rw & lowmask[n] & ~(0x80ULL << ((8 * (n - 1)) & 63))) | (uint64_t)n << 56;
        d0 = _mm512_mask_set1_epi64(d0, (__mmask8)(pm & SLOT(6)), (int64_t)root);
    }
    d0 = _mm512_mask_add_epi64(d0, (__mmask8)(~pm & SLOT(4)), d0, _mm512_set1_epi64(1)); /* INCREMENT when not sent */
    _mm512_storeu_si512((void *)dv, d0);
    _mm512_storeu_si512((void *)(dv + 8), d1);
    _mm512_storeu_si512((void *)(dv + 24), d3);
    _mm512_storeu_si512((void *)(dv + 32), d4);
    D->have |= fields;
    quote_record_write(o, fx->head, d0, d1, d3, d4, kind, fields, (uint16_t)D->msg_index);
    return 0;
}
#endif

/* What the quote fast path checks before it reads any field, from the message's stop bits
 * M (bit i: byte i of the message [p, p + len)) and its first 8 bytes x: the pmap fits in
 * 8 bytes, no field is longer than 5 bytes, the category is 'k' (sent or copied), the
 * pmap names only quote slots and every slot a quote needs has a value. Returns 1 with the
 * pmap's slot bits in *pm_out, or 0 when the message is not for the fast path. */
static inline int quote_pmap(const dec_t *D, const uint8_t *p, size_t len, uint64_t M, uint64_t x, uint64_t *pm_out) {
    uint64_t in_msg = len < 64 ? (1ULL << len) - 1 : ~0ULL;
    unsigned nb = tz64(M) + 1;
    if (UNLIKELY(nb > 8)) return 0;
    /* a run of 5 bytes without a stop bit after the pmap: a field of 6+ bytes, not for us */
    uint64_t C = ~M & in_msg & ~((2ULL << (nb - 1)) - 1);
    if (UNLIKELY(C & (C >> 1) & (C >> 2) & (C >> 3) & (C >> 4))) return 0;
    uint64_t pm = pmap_bits(x & lowmask[nb]);
    uint64_t cat = D->dv[0];
    if (pm & 1) {
        if (nb >= len || !(p[nb] & 0x80)) return 0;
        cat = p[nb] & 0x7F;
    } else if (!(D->have & 1)) {
        return 0;
    }
    if ((cat ^ 'k') | (pm & ~S_K_ANY) | (omdp_opra_layout_slots[L_K] & ~S_STRINGS & ~pm & ~D->have)) return 0;
    *pm_out = pm;
    return 1;
}

#ifdef OPRA_FAST_VECTOR_FIELDS
/* Decode a 'k' message [p, me) into o. Returns 0 when done; 1 when the message is not for
 * this path, the dictionary untouched (the field-by-field path takes it, and reports the
 * error if it is malformed). */
static int decode_quote_fast(dec_t *D, const uint8_t *p, const uint8_t *me, omdp_opra_msg_t *o FAST_CONSTS) {
    size_t len = (size_t)(me - p);
    if (UNLIKELY(len > 64 || len == 0)) return 1;
    const uint8_t *b = p;
    if ((size_t)(D->pe - p) < FAST_WINDOW) b = D->tail + (p - D->tail_at); /* near the end: the padded copy */
    /* (a masked load of just the message's bytes, which needs no copy, measured slower) */
    __m512i w = _mm512_loadu_si512((const void *)b);
    uint64_t M = (uint64_t)_mm512_movepi8_mask(w) & (len < 64 ? (1ULL << len) - 1 : ~0ULL);
    uint64_t pm;
    if (!quote_pmap(D, p, len, M, (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(w)), &pm)) return 1;
    return decode_quote_vector(D, fx, b, w, M, pm, len, o) < 0 ? 1 : 0;
}
#else
/* The value of a field of n (1..5) bytes, from the 8 bytes at its start byte swapped (its
 * first byte, the most significant 7-bit group, on top): one pext where the build has it. */
static inline uint64_t field_value(uint64_t top_first, unsigned n) {
#ifdef __BMI2__
    static const uint64_t top_groups[8] = {
        0, 0x7F00000000000000ULL, 0x7F7F000000000000ULL, 0x7F7F7F0000000000ULL, 0x7F7F7F7F00000000ULL,
        0x7F7F7F7F7F000000ULL, 0x7F7F7F7F7F7F0000ULL, 0x7F7F7F7F7F7F7F00ULL,
    };
    return _pext_u64(top_first, top_groups[n & 7]);
#else
    uint64_t y = (top_first >> ((64 - 8 * n) & 63)) & 0x7F7F7F7F7FULL;
    return (y & 0x7FULL) | ((y >> 1) & 0x3F80ULL) | ((y >> 2) & 0x1FC000ULL) | ((y >> 3) & 0xFE00000ULL) |
           ((y >> 4) & 0x7F0000000ULL);
#endif
}

/* The position of the k-th (from 0) set bit of m; 64 when m has no more than k. */
static inline unsigned nth_bit(unsigned k, uint64_t m) {
#ifdef __BMI2__
    return tz64(_pdep_u64(1ULL << k, m));
#else
    while (k-- && m) m &= m - 1;
    return tz64(m);
#endif
}

/* Bit i set when byte i of the 64 at b has its top (stop) bit set. */
static inline uint64_t stop_bits64(const uint8_t *b) {
#if defined(__AVX512BW__)
    return _mm512_movepi8_mask(_mm512_loadu_si512((const void *)b));
#elif defined(__AVX2__)
    uint64_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_loadu_si256((const __m256i *)(const void *)b));
    uint64_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(b + 32)));
    return lo | hi << 32;
#elif defined(__SSE2__)
    uint64_t m = 0;
    for (int i = 0; i < 4; i++)
        m |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(b + 16 * i))) << (16 * i);
    return m;
#else
    uint64_t m = 0;
    for (int i = 0; i < 64; i++) m |= (uint64_t)(b[i] >> 7) << i;
    return m;
#endif
}

/* Decode a 'k' message [p, me) into o. Returns 0 when done; 1 when the message is not
 * for this path (the dictionary is untouched: the field-by-field path takes it); 2 when it
 * turned out malformed after the dictionary was written (the packet is decoded again by
 * the field-by-field path alone, which then reports the error). Every field ends at a stop
 * bit, so the stop bits of the whole message give all field boundaries at once. */
static int decode_quote_fast(dec_t *D, const uint8_t *p, const uint8_t *me, omdp_opra_msg_t *o FAST_CONSTS) {
    size_t len = (size_t)(me - p);
    if (UNLIKELY(len > 64 || len == 0)) return 1;
    const uint8_t *b = p;
    if ((size_t)(D->pe - p) < FAST_WINDOW) b = D->tail + (p - D->tail_at); /* near the end: the padded copy */
    uint64_t in_msg = len < 64 ? (1ULL << len) - 1 : ~0ULL;
    uint64_t M = stop_bits64(b) & in_msg;
    uint64_t x;
    memcpy(&x, b, 8);
    uint64_t pm;
    if (!quote_pmap(D, p, len, M, x, &pm)) return 1;
    const uint64_t M0 = M;
    unsigned start = tz64(M) + 1;
    M &= M - 1;
    uint64_t *dv = D->dv;
    uint64_t bad = 0;
    uint64_t bits = pm;
    /* Four fields a round, without a test per field: a quote has 5 to 8 fields most often,
     * and a loop that stops after exactly the last one mispredicted its exit on most
     * messages. Rounds past the last field read slot 64 (tzcnt of no bits), the spare entry
     * dv[64], and leave the stops spent; whether the message was well formed is decided
     * from the stops themselves below. A field whose stops ran out (end 64) starts at
     * most at byte 65: its 8-byte load stays inside the 80-byte window. */
    do {
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            unsigned s = tz64(bits);
            unsigned end = tz64(M);
            M &= M - 1;
            unsigned n = end - start + 1; /* 1..5 for a real field (the run check) */
            uint64_t w;
            memcpy(&w, b + start, 8);
            /* the field's first byte (its most significant group) to the top: its n bytes
             * are the word's top n, whose 7-bit groups one pext squeezes together */
            uint64_t v = field_value(__builtin_bswap64(w), n);
            bad |= v & k_high[s];
            dv[s] = v;
            start = end + 1;
            bits &= bits - 1;
        }
    } while (bits);
    if (pm & SLOT(6)) {
        /* the root is a string: its bytes as sent, the stop bit cleared, its length on top */
        unsigned r6 = (unsigned)__builtin_popcountll(pm & 0x3F) + 1;
        unsigned rs = nth_bit(r6 - 1, M0) + 1, re = nth_bit(r6, M0);
        unsigned n = (re - rs + 1) & 7; /* 1..5: every field is */
        uint64_t rw;
        memcpy(&rw, b + (rs & 63), 8);
        dv[6] = (rw & lowmask[n] & ~(0x80ULL << ((8 * (n - 1)) & 63))) | (uint64_t)n << 56;
    }
    int kind = omdp_opra_bbo_kind[dv[30] & 0xFF];
    uint64_t fields = omdp_opra_layout_slots[L_K + kind];
    /* well formed: one stop per field after the pmap's, the last on the message's last
     * byte (so no field ran out of bytes and none is left over) */
    uint64_t shape_bad = (uint64_t)(__builtin_popcountll(M0) != __builtin_popcountll(pm) + 1) | (uint64_t)(M0 >> (len - 1) != 1);
    if (UNLIKELY(bad | shape_bad | (pm & ~fields) | (fields & ~S_STRINGS & ~pm & ~D->have)))
        return 2; /* the dictionary now holds a bad message: the packet must be decoded again */
    if (!(pm & SLOT(4))) dv[4] += 1;
    D->have |= fields;
    quote_record_write_words(o, dv, D->block_seq, kind, fields, (uint16_t)D->msg_index);
    return 0;
}
#endif

/* The block sequence: 10 ASCII digits at p, or 0 when any is not a digit (as
 * omdp_opra_header_digits), 8 of them at a time in one word. */
static inline uint64_t block_seq_digits(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t d = w - 0x3030303030303030ULL;
    /* a byte below '0' sets its top bit in d, one above '9' in w + 0x46 (the lowest such
     * byte at least: no borrow or carry reaches it from below) */
    if (((w + 0x4646464646464646ULL) | d) & 0x8080808080808080ULL) return 0;
    if (p[8] < '0' || p[8] > '9' || p[9] < '0' || p[9] > '9') return 0;
    /* pairs, then fours, then eight (the first digit is the most significant: byte 0) */
    d = d * 10 + (d >> 8);
    d = (((d & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((d >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
    return d * 100 + (uint64_t)(p[8] - '0') * 10 + (uint64_t)(p[9] - '0');
}

/* The per-packet reset of the slot dictionary: constant-size vector stores, not the
 * `rep stos` a 512-byte memset becomes (its start-up dominated the reset). */
static inline void clear_dictionary(uint64_t *dv) {
#if defined(__AVX512F__)
    /* written out: gcc turns a loop of these back into the memset */
    const __m512i z = _mm512_setzero_si512();
    _mm512_storeu_si512((void *)dv, z);
    _mm512_storeu_si512((void *)(dv + 8), z);
    _mm512_storeu_si512((void *)(dv + 16), z);
    _mm512_storeu_si512((void *)(dv + 24), z);
    _mm512_storeu_si512((void *)(dv + 32), z);
    _mm512_storeu_si512((void *)(dv + 40), z);
    _mm512_storeu_si512((void *)(dv + 48), z);
    _mm512_storeu_si512((void *)(dv + 56), z);
#elif defined(__AVX2__)
    const __m256i z = _mm256_setzero_si256();
    _mm256_store_si256((__m256i *)(void *)dv, z);
    _mm256_store_si256((__m256i *)(void *)(dv + 4), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 8), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 12), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 16), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 20), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 24), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 28), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 32), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 36), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 40), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 44), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 48), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 52), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 56), z);
    _mm256_store_si256((__m256i *)(void *)(dv + 60), z);
#else
    memset(dv, 0, 64 * sizeof *dv);
#endif
}

/* Decode the packet [pkt, pkt+len) into out; D->side/side_cap/side_pos set by the caller. */
static int decode_one(dec_t *D, const uint8_t *pkt, size_t len, omdp_opra_msg_t *out, uint64_t out_cap) {
    D->pkt = pkt;
    D->pe = pkt + len;
    D->msg_index = -1;
    if (len < OMDP_OPRA_HEADER_SIZE + 1) return fail(D, OMDP_OPRA_E_TRUNCATED, -1, pkt + len);
    if (len > OMDP_OPRA_MAX_PACKET) return fail(D, OMDP_OPRA_E_PACKET_TOO_BIG, -1, pkt + OMDP_OPRA_MAX_PACKET);
    if (pkt[0] != 0x01) return fail(D, OMDP_OPRA_E_BAD_SOH, -1, pkt);
    if (pkt[1] != OMDP_OPRA_VERSION) return fail(D, OMDP_OPRA_E_BAD_VERSION, -1, pkt + 1);
    if (pkt[len - 1] != 0x03) return fail(D, OMDP_OPRA_E_BAD_ETX, -1, pkt + len - 1);
    uint32_t count = 0;
    for (int i = 12; i < 15; i++) {
        if (pkt[i] < '0' || pkt[i] > '9') return fail(D, OMDP_OPRA_E_BAD_COUNT, -1, pkt + i);
        count = count * 10 + (uint32_t)(pkt[i] - '0');
    }
    if (count > out_cap) return fail(D, OMDP_OPRA_E_CAPACITY, -1, pkt + 12);
    D->block_seq = block_seq_digits(pkt + 2);

    uint32_t side_start = D->side_pos;
    int fast = atomic_load_explicit(&fast_path_enabled, memory_order_relaxed);
#ifdef OPRA_FAST_VECTOR_FIELDS
    const fast_ctx_t fx = {.fc = opra_field_consts(), .head = quote_record_head(&blank_record, D->block_seq)};
#endif
    /* The fast path loads FAST_WINDOW bytes from a message's start: near the packet's end it
     * reads a zero-padded copy of the packet's tail, made once here. */
    if (LIKELY(len >= FAST_WINDOW)) {
        /* constant sizes: a few vector moves, not a `rep movs` whose start-up perf showed
         * as 7% of the decoder's time */
        D->tail_at = pkt + len - FAST_WINDOW;
        memcpy(D->tail, D->tail_at, FAST_WINDOW);
        memset(D->tail + FAST_WINDOW, 0, sizeof D->tail - FAST_WINDOW);
    } else {
        D->tail_at = pkt;
        memcpy(D->tail, pkt, len);
        memset(D->tail + len, 0, sizeof D->tail - len);
    }
restart:
    /* the per-packet dictionary reset */
    clear_dictionary(D->dv);
    D->have = 0;
    D->text_len = D->def_len = 0;
    D->text_off = D->def_off = 0;
    memset(D->ys, 0, sizeof D->ys);

    const uint8_t *p = pkt + OMDP_OPRA_HEADER_SIZE;
    const uint8_t *etx = pkt + len - 1;
    uint32_t i = 0;
    while (p < etx) {
        D->msg_index = (int32_t)i;
        if (UNLIKELY(i >= count)) return fail(D, OMDP_OPRA_E_COUNT_MISMATCH, -1, p);
        unsigned ml = *p++;
        const uint8_t *me;
        if (ml == 0xFF) {
            me = etx;
        } else {
            if (UNLIKELY(ml > (size_t)(etx - p))) return fail(D, OMDP_OPRA_E_MSG_PAST_PACKET, -1, p - 1);
            me = p + ml;
        }
        int how = fast ? decode_quote_fast(D, p, me, &out[i] FAST_CONSTS_ARG) : 1;
        if (UNLIKELY(how == 2)) {
            fast = 0;
            D->side_pos = side_start;
            goto restart;
        }
        if (how) {
            int rc = decode_message(D, p, me, &out[i]);
            if (UNLIKELY(rc)) return rc;
        }
        p = me;
        i++;
    }
    D->msg_index = -1;
    if (UNLIKELY(i != count)) return fail(D, OMDP_OPRA_E_COUNT_MISMATCH, -1, p);
    if (i) out[i - 1].hdr.flags = OMDP_RF_LAST_IN_PACKET;
    return (int)i;
}

int omdp_opra_decode_packet(const uint8_t *pkt, size_t len, uint64_t packet_index,
                            omdp_opra_msg_t *out, uint32_t out_cap,
                            uint8_t *side, uint32_t side_cap, uint32_t *side_used,
                            omdp_opra_error_t *err) {
    dec_t D;
    D.side = side;
    D.side_cap = side_cap;
    D.side_pos = *side_used;
    D.packet_index = packet_index;
    D.err = err;
    int rc = decode_one(&D, pkt, len, out, out_cap);
    if (rc >= 0) *side_used = D.side_pos;
    return rc;
}

int omdp_opra_decode_batch(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                           uint64_t npkts, uint64_t first_packet_index,
                           omdp_opra_msg_t *out, uint64_t out_cap,
                           uint8_t *side, uint64_t side_cap,
                           uint32_t *pkt_first, uint32_t *pkt_count,
                           omdp_opra_error_t *errs, uint32_t err_cap,
                           omdp_opra_counters_t *counters, omdp_opra_batch_result_t *res) {
    dec_t D;
    omdp_opra_error_t e;
    D.side = side;
    D.side_cap = side_cap > UINT32_MAX ? UINT32_MAX : (uint32_t)side_cap;
    D.err = &e;
    uint64_t nout = 0, nerr = 0, good = 0, bad = 0;
    uint32_t side_pos = 0;
    int status = 0;
    uint64_t i;
    if (out_cap > UINT32_MAX) out_cap = UINT32_MAX; /* pkt_first is 32-bit */
    for (i = 0; i < npkts; i++) {
        D.side_pos = side_pos;
        D.packet_index = first_packet_index + i;
        int rc = decode_one(&D, buf + offsets[i], lengths[i], out + nout, out_cap - nout);
        if (UNLIKELY(rc < 0)) {
            if (rc == OMDP_OPRA_E_CAPACITY) {
                status = rc;
                break;
            }
            pkt_first[i] = (uint32_t)nout;
            pkt_count[i] = 0;
            if (nerr < err_cap) errs[nerr] = e;
            nerr++;
            bad++;
            if (counters) counters->errors[-rc]++;
            continue;
        }
        pkt_first[i] = (uint32_t)nout;
        pkt_count[i] = (uint32_t)rc;
        nout += (uint64_t)rc;
        side_pos = D.side_pos;
        good++;
    }
    if (counters) {
        counters->packets += good + bad;
        counters->packets_ok += good;
        counters->packets_bad += bad;
        counters->messages += nout;
    }
    if (res) {
        res->packets_done = i;
        res->messages = nout;
        res->side_used = side_pos;
        res->errors = nerr;
    }
    return status;
}
