/* OBI decoder (spec sections 4-8): blocks -> omdp_opra_msg_t records.
 *
 * Every message has a fixed layout chosen by its category (plus the BBO indicator for
 * quotes and the text length for 'C'), so a message's length is known before any field
 * is read, checked against the block once, and every field is then a load at a fixed
 * offset (big-endian, unaligned: memcpy and a byte swap). No state runs from one message
 * to the next. Nothing reads outside the datagram: the header needs 21 bytes, each
 * message's length is checked against block_size, and block_size against the datagram.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "opra_obi_internal.h"

typedef struct obi_dec {
    uint8_t *side;
    uint32_t side_cap, side_pos;
} obi_dec_t;

/* The Eastern HHMMSS x 1000 of the last block time seen by this thread: block times change
 * once a second on a line, so the calendar arithmetic runs once a second, not per block. */
static _Thread_local uint32_t cached_sec = UINT32_MAX;
static _Thread_local uint32_t cached_hhmmss000 = UINT32_MAX;

static int fail(omdp_obi_error_t *err, uint64_t packet_index, int code, size_t offset, int msg, int category)
{
    if (err) {
        err->packet_index = packet_index;
        err->code = code;
        err->offset = (uint32_t)offset;
        err->message_index = msg;
        err->category = category;
    }
    return code;
}

/* A raw price with its denominator code in OMDP_PRICE_SCALE units: exact (|raw| < 2^63 /
 * 10^9 for every i32), or OMDP_UNDEF_PRICE for a code outside 'A'..'I' (spec 8.2: the
 * field is flagged, the message kept). */
static inline int64_t px(uint8_t den, int64_t raw)
{
    int64_t m = omdp_opra_den_mult[den];
    return m ? raw * m : OMDP_UNDEF_PRICE;
}

static const omdp_opra_msg_t blank_record = {
    .hdr = {.type = OMDP_RT_OPRA_MSG, .length = OMDP_OPRA_MSG_SIZE},
    .underlying_id = OMDP_NO_UNDERLYING,
};

/* The expiration block (8.3). Spec Q14: a month code outside 'A'..'X', a day outside 1..31
 * or a year above 99 keeps the raw bytes and leaves call/put and the date unknown; the
 * message is not dropped. */
static inline void put_expiry(omdp_opra_msg_t *o, const uint8_t *e)
{
    uint8_t mc = e[0], day = e[1], year = e[2];
    o->month_code = mc;
    o->expiry_day = day;
    o->expiry_year = year;
    uint32_t mo = omdp_opra_month[mc];
    if (mo && day >= 1 && day <= 31 && year <= 99) {
        o->expiry = (2000u + year) * 10000u + mo * 100u + day;
        o->put_call = omdp_opra_put_call[mc];
    }
}

/* The symbol: its wire bytes (w of them) then spaces up to 5, root_len 5, so a 'q' symbol
 * (4 bytes) and the same series sent as 'k' give the same root, and both match FAST V2's
 * 5-byte space-padded roots. */
static inline void put_symbol(omdp_opra_msg_t *o, const uint8_t *s, int w)
{
    memcpy(o->root, s, 4);
    o->root[4] = w == 5 ? (char)s[4] : ' ';
    o->root_len = 5;
}

/* Spec Q11: strikes are read signed (i32; u16 in 'q'); real ones are never negative. */
static inline void put_strike(omdp_opra_msg_t *o, uint8_t den, uint32_t raw)
{
    o->strike_den = den;
    o->strike = raw;
    o->strike_px = px(den, (int32_t)raw);
}

/* One appendage (7.6) at a: participant, denominator, price (i32), size. */
static inline void put_best_bid(omdp_opra_msg_t *o, const uint8_t *a)
{
    o->best_bid_part = a[0];
    o->best_bid_den = a[1];
    o->best_bid = obi_rd32(a + 2);
    o->best_bid_size = obi_rd32(a + 6);
    o->best_bid_px = px(a[1], (int32_t)o->best_bid);
}

static inline void put_best_offer(omdp_opra_msg_t *o, const uint8_t *a)
{
    o->best_offer_part = a[0];
    o->best_offer_den = a[1];
    o->best_offer = obi_rd32(a + 2);
    o->best_offer_size = obi_rd32(a + 6);
    o->best_offer_px = px(a[1], (int32_t)o->best_offer);
}

/* The appendages after a quote body at a, by indicator: bid first when both ('O'). */
static inline uint64_t put_appendages(omdp_opra_msg_t *o, uint8_t ind, const uint8_t *a)
{
    uint64_t f = 0;
    if (obi_has_bid_app(ind)) {
        put_best_bid(o, a);
        a += 10;
        f |= OBI_F_BEST_BID;
    }
    if (obi_has_offer_app(ind)) {
        put_best_offer(o, a);
        f |= OBI_F_BEST_OFFER;
    }
    return f;
}

/* Write the record of the message at m (mlen bytes, all inside the block). Returns the
 * message's trade identifier ('a'; 0 otherwise) for the extras. */
static inline uint32_t decode_message(omdp_opra_msg_t *o, const uint8_t *m, uint32_t mlen)
{
    uint8_t cat = m[1];
    uint32_t trade_id = 0;
    uint64_t f;
    switch (cat) {
    case 'k': { /* 7.4 */
        put_symbol(o, m + 12, 5);
        put_expiry(o, m + 18);
        put_strike(o, m[21], obi_rd32(m + 22));
        uint8_t den = m[26];
        o->premium_den = den;
        o->bid = obi_rd32(m + 27);
        o->bid_size = obi_rd32(m + 31);
        o->offer = obi_rd32(m + 35);
        o->offer_size = obi_rd32(m + 39);
        o->bid_px = px(den, (int32_t)o->bid);
        o->offer_px = px(den, (int32_t)o->offer);
        f = OBI_F_K | put_appendages(o, m[3], m + 43);
        break;
    }
    case 'q': /* 7.5: one quote record with 'k'; denominators implied, filled in */
        o->category = 'k';
        o->wire |= OMDP_OBI_WIRE_SHORT;
        put_symbol(o, m + 12, 4);
        put_expiry(o, m + 16);
        put_strike(o, 'A', obi_rd16(m + 19));
        o->premium_den = 'B';
        o->bid = obi_rd16(m + 21);
        o->bid_size = obi_rd16(m + 23);
        o->offer = obi_rd16(m + 25);
        o->offer_size = obi_rd16(m + 27);
        o->bid_px = px('B', o->bid);
        o->offer_px = px('B', o->offer);
        /* Spec Q4: 'O' on a short quote carries both appendages (20 bytes), as on 'k'. */
        f = OBI_F_K | put_appendages(o, m[3], m + 29);
        break;
    case 'a': /* 7.1 */
        put_symbol(o, m + 12, 5);
        put_expiry(o, m + 18);
        put_strike(o, m[21], obi_rd32(m + 22));
        o->volume = obi_rd32(m + 26);
        o->premium_den = m[30];
        o->premium = obi_rd32(m + 31);
        o->premium_px = px(m[30], (int32_t)o->premium);
        trade_id = obi_rd32(m + 35); /* Q12: "future use", carried raw */
        f = OBI_F_A;
        break;
    case 'd': /* 7.2 */
        put_symbol(o, m + 12, 5);
        put_expiry(o, m + 18);
        put_strike(o, m[21], obi_rd32(m + 22));
        o->open_interest = obi_rd32(m + 26);
        f = OBI_F_D;
        break;
    case 'f': { /* 7.3 */
        put_symbol(o, m + 12, 5);
        put_expiry(o, m + 18);
        put_strike(o, m[21], obi_rd32(m + 22));
        o->volume = obi_rd32(m + 26);
        o->open_interest = obi_rd32(m + 30);
        uint8_t den = m[34];
        o->premium_den = den;
        o->open = obi_rd32(m + 35);
        o->high = obi_rd32(m + 39);
        o->low = obi_rd32(m + 43);
        o->last = obi_rd32(m + 47);
        /* net change: signed on the wire, magnitude and sign in the record as FAST V2 has it */
        int32_t nc = (int32_t)obi_rd32(m + 51);
        o->net_change = nc < 0 ? 0u - (uint32_t)nc : (uint32_t)nc;
        o->net_change_ind = nc < 0 ? '-' : nc > 0 ? '+' : ' ';
        o->underlying_den = m[55];
        o->underlying_raw = obi_rd64(m + 56); /* i64's bits: exact beyond 2^53 */
        o->bid = obi_rd32(m + 64);
        o->offer = obi_rd32(m + 68);
        o->bid_px = px(den, (int32_t)o->bid);
        o->offer_px = px(den, (int32_t)o->offer);
        f = OBI_F_F;
        break;
    }
    case 'C': /* 7.7: the text is placed by the caller */
        f = OBI_F_C;
        break;
    case 'H': /* 7.8: the header is the message */
        f = OBI_F_H;
        break;
    case 'R': /* 7.9: the 128 reserved bytes are ignored */
        put_symbol(o, m + 12, 5);
        put_expiry(o, m + 17);
        put_strike(o, m[20], obi_rd32(m + 21));
        o->volume = obi_rd16(m + 25); /* mapped_line */
        f = OBI_F_R;
        break;
    default: /* 'Y', 7.10. Spec Q6: index_den covers every value of the message. A type
              * other than 'I' is read as the last-sale form (same length, spec section 6). */
        put_symbol(o, m + 12, 5);
        o->underlying_den = m[18];
        if (m[2] == 'I') {
            o->bid = obi_rd32(m + 19);
            o->offer = obi_rd32(m + 23);
            o->bid_px = px(m[18], (int32_t)o->bid);
            o->offer_px = px(m[18], (int32_t)o->offer);
            f = OBI_F_Y_BBO;
        } else {
            o->underlying_raw = (uint64_t)(int64_t)(int32_t)obi_rd32(m + 19);
            f = OBI_F_Y_LAST;
        }
        break;
    }
    (void)mlen;
    o->fields = f;
    return trade_id;
}

#if defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__BMI2__)
/* Quotes ('k', 'q'), nearly every message of the feed, where the CPU has AVX-512 VBMI, in a
 * loop of their own (quote_run) with one inlined step per kind: the record is built in four
 * registers, one per cache line, and each line is stored once, whole (no field written twice,
 * no narrow store before a wide one). The message (at most 63 bytes with its appendages) is
 * read with one masked load that touches only its own bytes; lines 2 and 3 are each one two-
 * source byte permutation of it (big-endian fields turned and widened, bytes copied) and of
 * the values computed in scalar registers (the expiry date, call/put), ORed over the block's
 * template; the five prices are one more permutation into 64-bit lanes (the raw value and its
 * denominator code), scaled with one signed 32 x 32 -> 64 multiply by the denominator's power
 * of ten (a lane of a 16-entry table; a code outside 'A'..'I' gives OMDP_UNDEF_PRICE, as px()
 * does) and merged into lines 1 and 2. The sequence number and the message's index come from
 * counters kept in registers, and the block checksum is summed on the way from the bytes the
 * load holds. One form per quote kind and appendage set ("class": bit 0 a best-bid appendage,
 * bit 1 a best-offer one), built once at load. Elsewhere (and in the sanitizer build) the
 * per-field code above (decode_message) does the same work; the golden, round-trip, error and
 * fuzz tests pin both to the same records. */
#include <immintrin.h>

#define OBI_QUOTE_SIMD 1

/* Price lanes (64-bit lanes of one register; each: the raw value, little-endian and sign-
 * or zero-extended to 32 bits, in bytes 0-3, its denominator code in byte 4): placed where
 * the record wants them, so lines 1 and 2 take them with a masked OR, not a permutation. */
enum { PL_BEST_OFFER = 0, PL_STRIKE = 3, PL_BID = 4, PL_OFFER = 5, PL_BEST_BID = 7 };
#define PL_LINE1 ((1u << PL_STRIKE) | (1u << PL_BID) | (1u << PL_OFFER) | (1u << PL_BEST_BID))
#define PL_LINE2 (1u << PL_BEST_OFFER)

/* Every byte of a line or of the price lanes is one permutation of two registers: the
 * message (source bytes 0-63) and a second one (64-127). For lines 2 and 3 that is the values
 * computed in scalar registers: the expiry date, little-endian, then call/put, then zeros. For
 * the prices it is a constant: a zero, then the denominator codes a 'q' implies and 'I'
 * (x 10^9 of a raw 0) for lanes with no price. What a form leaves empty reads a zero there. */
enum { SRC_EXPIRY = 64, SRC_PUT_CALL = 68, SRC_ZERO = 72 };
enum { SRCP_ZERO = 64, SRCP_A, SRCP_B, SRCP_I };

typedef struct quote_form {
    uint8_t idx2[64], idx3[64]; /* record bytes 128-191 and 192-255: source byte (above) */
    uint8_t idxp[64];           /* price lanes: source byte (above) */
    uint64_t line1[8];          /* record bytes 64-127: the constant ones (fields) */
} quote_form_t;
_Static_assert(sizeof(quote_form_t) == 256, "forms are whole lines, 256 bytes apart");

static quote_form_t quote_forms[8] __attribute__((aligned(64))); /* kind ('q' 0, 'k' 1) x 4 + class */
static const uint8_t price_src[64] __attribute__((aligned(64))) = {0, 'A', 'B', 'I'}; /* SRCP_* - 64 */
static int64_t den_mult16[16] __attribute__((aligned(64)));   /* den - 'A' -> multiplier ('A'..'I') */
/* By kind and appendage indicator: the byte offset of the quote's form in quote_forms (spec
 * 7.6: i = ind - 'A', a best bid when i >> 2 == 3, a best offer when i & 3 == 2; only
 * 'A'..'P' have states). */
static uint16_t quote_form_at[2][256];
#define FORM_AT(at) ((const quote_form_t *)(const void *)((const uint8_t *)quote_forms + (at)))
/* By month code: 20,000,000 + month x 100 in bits 0-31, 'C' or 'P' in bits 32-39; 0 for no
 * month. Adding year x 10,000 + day makes the expiry date and call/put as lines 2-3 take them. */
static uint64_t month_pc[256];

/* Record bytes [at, at + width) of a line (base: the line's first record byte) from the big-
 * endian field of `src_width` bytes at src (the rest of the width stays SRC_ZERO). */
static void perm_be(uint8_t *idx, size_t at, size_t base, unsigned src, unsigned src_width)
{
    for (unsigned j = 0; j < src_width; j++)
        idx[at + j - base] = (uint8_t)(src + src_width - 1 - j);
}

static void perm_bytes(uint8_t *idx, size_t at, size_t base, unsigned src, unsigned n)
{
    for (unsigned j = 0; j < n; j++)
        idx[at + j - base] = (uint8_t)(src + j);
}

/* Record byte `at` of lines 2-3 from message byte src (n bytes). */
static void line_bytes(quote_form_t *f, size_t at, unsigned src, unsigned n)
{
    if (at >= 192)
        perm_bytes(f->idx3, at, 192, src, n);
    else
        perm_bytes(f->idx2, at, 128, src, n);
}

static void line_be(quote_form_t *f, size_t at, unsigned src, unsigned w)
{
    if (at >= 192)
        perm_be(f->idx3, at, 192, src, w);
    else
        perm_be(f->idx2, at, 128, src, w);
}

/* Price lane `lane`: a w-byte big-endian raw value at src and its denominator code from
 * den_src (a message byte, or SRCP_A / SRCP_B: the code a 'q' implies). Signed 32-bit values
 * are sign-extended by taking their top byte as is; 16-bit ones ('q') are zero-extended
 * (spec Q11). */
static void price_lane(quote_form_t *f, unsigned lane, unsigned src, unsigned w, unsigned den_src)
{
    perm_be(f->idxp, lane * 8, 0, src, w);
    f->idxp[lane * 8 + 4] = (uint8_t)den_src;
}

__attribute__((constructor)) static void build_quote_forms(void)
{
    for (unsigned d = 0; d < 16; d++)
        den_mult16[d] = d < 9 ? omdp_opra_den_mult['A' + d] : 0;
    for (unsigned c = 0; c < 256; c++) {
        unsigned cls = (unsigned)(obi_has_bid_app((uint8_t)c) | obi_has_offer_app((uint8_t)c) << 1);
        for (unsigned kind = 0; kind < 2; kind++)
            quote_form_at[kind][c] = (uint16_t)((kind * 4 + cls) * sizeof(quote_form_t));
        uint64_t month = omdp_opra_month[c];
        month_pc[c] = month ? (uint64_t)omdp_opra_put_call[c] << 32 | (20000000u + month * 100u) : 0;
    }
    for (int kind = 0; kind < 2; kind++) {
        for (unsigned cls = 0; cls < 4; cls++) {
            quote_form_t *f = &quote_forms[kind * 4 + cls];
            memset(f, 0, sizeof *f);
            memset(f->idx2, SRC_ZERO, sizeof f->idx2);
            memset(f->idx3, SRC_ZERO, sizeof f->idx3);
            memset(f->idxp, SRCP_ZERO, sizeof f->idxp);
            for (unsigned lane = 0; lane < 8; lane++)
                f->idxp[lane * 8 + 4] = SRCP_I;
            unsigned body = kind ? 43 : 29;
            if (kind) { /* 7.4 */
                line_be(f, offsetof(omdp_opra_msg_t, strike), 22, 4);
                line_be(f, offsetof(omdp_opra_msg_t, bid), 27, 4);
                line_be(f, offsetof(omdp_opra_msg_t, bid_size), 31, 4);
                line_be(f, offsetof(omdp_opra_msg_t, offer), 35, 4);
                line_be(f, offsetof(omdp_opra_msg_t, offer_size), 39, 4);
                line_bytes(f, offsetof(omdp_opra_msg_t, month_code), 18, 3);
                line_bytes(f, offsetof(omdp_opra_msg_t, strike_den), 21, 1);
                line_bytes(f, offsetof(omdp_opra_msg_t, premium_den), 26, 1);
                line_bytes(f, offsetof(omdp_opra_msg_t, root), 12, 5);
                price_lane(f, PL_STRIKE, 22, 4, 21);
                price_lane(f, PL_BID, 27, 4, 26);
                price_lane(f, PL_OFFER, 35, 4, 26);
            } else { /* 7.5: strike in 'A', premiums in 'B' (spec 7.5) */
                line_be(f, offsetof(omdp_opra_msg_t, strike), 19, 2);
                line_be(f, offsetof(omdp_opra_msg_t, bid), 21, 2);
                line_be(f, offsetof(omdp_opra_msg_t, bid_size), 23, 2);
                line_be(f, offsetof(omdp_opra_msg_t, offer), 25, 2);
                line_be(f, offsetof(omdp_opra_msg_t, offer_size), 27, 2);
                line_bytes(f, offsetof(omdp_opra_msg_t, month_code), 16, 3);
                line_bytes(f, offsetof(omdp_opra_msg_t, root), 12, 4);
                price_lane(f, PL_STRIKE, 19, 2, SRCP_A);
                price_lane(f, PL_BID, 21, 2, SRCP_B);
                price_lane(f, PL_OFFER, 25, 2, SRCP_B);
            }
            line_bytes(f, offsetof(omdp_opra_msg_t, msg_type), 2, 1);
            line_bytes(f, offsetof(omdp_opra_msg_t, participant), 0, 1);
            line_bytes(f, offsetof(omdp_opra_msg_t, bbo_ind), 3, 1);
            uint64_t fields = OBI_F_K;
            unsigned a = body; /* 7.6: the bid appendage first when both */
            if (cls & 1) {
                line_bytes(f, offsetof(omdp_opra_msg_t, best_bid_part), a, 2);
                line_be(f, offsetof(omdp_opra_msg_t, best_bid), a + 2, 4);
                line_be(f, offsetof(omdp_opra_msg_t, best_bid_size), a + 6, 4);
                price_lane(f, PL_BEST_BID, a + 2, 4, a + 1);
                fields |= OBI_F_BEST_BID;
                a += 10;
            }
            if (cls & 2) {
                line_bytes(f, offsetof(omdp_opra_msg_t, best_offer_part), a, 2);
                line_be(f, offsetof(omdp_opra_msg_t, best_offer), a + 2, 4);
                line_be(f, offsetof(omdp_opra_msg_t, best_offer_size), a + 6, 4);
                price_lane(f, PL_BEST_OFFER, a + 2, 4, a + 1);
                fields |= OBI_F_BEST_OFFER;
            }
            f->line1[(offsetof(omdp_opra_msg_t, fields) - 64) / 8] = fields;
            perm_bytes(f->idx2, offsetof(omdp_opra_msg_t, expiry), 128, SRC_EXPIRY, 4);
            perm_bytes(f->idx3, offsetof(omdp_opra_msg_t, put_call), 192, SRC_PUT_CALL, 1);
        }
    }
}

/* What a block's quotes share: the template lines (line 0 whole; lines 2 and 3 the bytes no
 * message fills) and block_seq where line 1 has msg_seq. */
typedef struct quote_block {
    __m512i line0, line2, line3[2], seq;
} quote_block_t;

#define L3(f) (offsetof(omdp_opra_msg_t, f) - 192)
static const uint8_t quote_line3[2][64] __attribute__((aligned(64))) = {
    {[L3(category)] = 'k', [L3(strike_den)] = 'A', [L3(premium_den)] = 'B', [L3(root_len)] = 5,
     [L3(root) + 4] = ' ', [L3(wire)] = OMDP_OBI_WIRE_SHORT},
    {[L3(category)] = 'k', [L3(root_len)] = 5},
};

/* Built in registers from constants (no narrow stores read back wide). */
static inline void quote_block_init(quote_block_t *q, uint64_t block_seq, uint32_t time, uint8_t retrans,
                                    uint8_t session, uint8_t wire)
{
    const uint8_t *blank = (const uint8_t *)&blank_record;
    q->line0 = _mm512_mask_set1_epi64(_mm512_loadu_si512((const void *)blank), 1u << 7, (long long)block_seq);
    q->line2 = _mm512_mask_set1_epi32(_mm512_loadu_si512((const void *)(blank + 128)), 1u << 2, (int)time);
    __m512i blk = _mm512_mask_set1_epi8(_mm512_setzero_si512(), 1ull << L3(retrans), (char)retrans);
    blk = _mm512_mask_set1_epi8(blk, 1ull << L3(session), (char)session);
    blk = _mm512_mask_set1_epi8(blk, 1ull << L3(wire), (char)wire);
    for (int k = 0; k < 2; k++)
        q->line3[k] = _mm512_or_si512(blk, _mm512_load_si512((const void *)quote_line3[k]));
    q->seq = _mm512_maskz_set1_epi64(1u << 0, (long long)block_seq);
}

/* The constants of a run of quotes, in registers. */
typedef struct quote_consts {
    __m512i mult_lo, mult_hi, undef, den_a, den_count, seq_step, index_step, price_src;
    __m512i line1_prices, line2_prices; /* the price lanes each line takes, all ones */
} quote_consts_t;

/* The record of quote m (ml bytes, checked; kind 1 'k', 0 'q'; f its form); seq and
 * index: its msg_seq in lane 0, its index at record byte 224. Returns sum with the message's
 * bytes added (the checksum's lanes). */
static inline __m512i quote_simd(omdp_opra_msg_t *o, const quote_block_t *q, const quote_consts_t *c,
                                 const uint8_t *m, uint32_t ml, int kind, const quote_form_t *f,
                                 __m512i seq, __m512i index, __m512i sum)
{
    __m512i msg = _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, ml), m);
    /* prices: raw x 10^(9 - places), or OMDP_UNDEF_PRICE for a code outside 'A'..'I' */
    __m512i pv = _mm512_permutex2var_epi8(msg, _mm512_load_si512((const void *)f->idxp), c->price_src);
    __m512i den = _mm512_sub_epi64(_mm512_srli_epi64(pv, 32), c->den_a);
    __mmask8 known = _mm512_cmplt_epu64_mask(den, c->den_count);
    __m512i mult = _mm512_permutex2var_epi64(c->mult_lo, den, c->mult_hi);
    __m512i prices = _mm512_mask_mov_epi64(c->undef, known, _mm512_mul_epi32(pv, mult));
    /* the expiration date (8.3, spec Q14: unknown unless month, day and year are all good) */
    const uint8_t *e = m + (kind ? 18 : 16);
    uint64_t mpc = month_pc[e[0]];
    uint32_t day = e[1], year = e[2];
    uint64_t computed = mpc + year * 10000u + day;
    if (UNLIKELY(mpc == 0) || UNLIKELY(day - 1u >= 31u) || UNLIKELY(year > 99u))
        computed = 0;
    __m512i comp = _mm512_castsi128_si512(_mm_cvtsi64_si128((long long)computed)); /* SRC_EXPIRY, SRC_PUT_CALL */

    /* line 1 and line 2's first lane have nothing but zeros where the prices go */
    __m512i l1 = _mm512_ternarylogic_epi64(_mm512_or_si512(_mm512_load_si512((const void *)f->line1), seq), prices,
                                           c->line1_prices, 0xF8); /* a | (b & c) */
    __m512i l2 = _mm512_permutex2var_epi8(msg, _mm512_load_si512((const void *)f->idx2), comp);
    l2 = _mm512_ternarylogic_epi64(_mm512_or_si512(q->line2, l2), prices, c->line2_prices, 0xF8);
    __m512i l3 = _mm512_permutex2var_epi8(msg, _mm512_load_si512((const void *)f->idx3), comp);
    l3 = _mm512_ternarylogic_epi64(q->line3[kind], index, l3, 0xFE); /* a | b | c */
    uint8_t *r = (uint8_t *)o;
    _mm512_storeu_si512((void *)r, q->line0);
    _mm512_storeu_si512((void *)(r + 64), l1);
    _mm512_storeu_si512((void *)(r + 128), l2);
    _mm512_storeu_si512((void *)(r + 192), l3);
    return _mm512_dpbusd_epi32(sum, msg, _mm512_set1_epi8(1)); /* the block checksum, on the way */
}

/* Quote m of the given kind (a constant where it is called) with rem bytes left in the
 * block: its record written and its length returned, or 0 when it does not fit the block
 * (nothing written). */
static inline __attribute__((always_inline)) uint32_t quote_step(omdp_opra_msg_t *o, const quote_block_t *q,
                                                                 const quote_consts_t *c, const uint8_t *m, size_t rem,
                                                                 int kind, __m512i seq, __m512i index, __m512i *acc)
{
    uint8_t ind = m[3];
    /* the next message's place waits on this length: two loads, one after the other */
    uint32_t ml = (kind ? 43u : 29u) + omdp_obi_app_len[ind];
    if (UNLIKELY(ml > rem))
        return 0;
    *acc = quote_simd(o, q, c, m, ml, kind, FORM_AT(quote_form_at[kind][ind]), seq, index, *acc);
    return ml;
}

/* Quotes from message i at byte *off, for as long as the messages are quotes that fit the
 * block: the loop a block's time is spent in, with nothing else in its registers. Stops
 * before the first message that is not one (the caller decodes it, or reports it) or after
 * a quote that has extras (the caller places them: *extras set, *last its offset). Returns
 * the index of the message after the last one written; *off is where it starts. */
static inline uint32_t quote_run(const quote_block_t *q, const uint8_t *blk, uint32_t size, uint32_t *offp,
                                 uint32_t *last, uint32_t i, uint32_t count, omdp_opra_msg_t *out, int *extras,
                                 __m512i *sum)
{
    const quote_consts_t c = {
        .mult_lo = _mm512_load_si512((const void *)den_mult16),
        .mult_hi = _mm512_load_si512((const void *)(den_mult16 + 8)),
        .undef = _mm512_set1_epi64(OMDP_UNDEF_PRICE),
        .den_a = _mm512_set1_epi64('A'),
        .den_count = _mm512_set1_epi64(9),
        .seq_step = _mm512_maskz_set1_epi64(1u << 0, 1),
        .index_step = _mm512_maskz_set1_epi16(1u << (L3(index) / 2), 1),
        .line1_prices = _mm512_maskz_set1_epi64(PL_LINE1, -1),
        .line2_prices = _mm512_maskz_set1_epi64(PL_LINE2, -1),
        .price_src = _mm512_load_si512((const void *)price_src),
    };
    __m512i seq = _mm512_add_epi64(q->seq, _mm512_maskz_set1_epi64(1u << 0, i));
    __m512i index = _mm512_maskz_set1_epi16(1u << (L3(index) / 2), (short)i);
    const uint8_t *m = blk + *offp, *end = blk + size;
    omdp_opra_msg_t *o = out + i, *o_end = out + count;
    __m512i acc = *sum;
    *extras = 0;
    while (o < o_end) {
        if (UNLIKELY(end - m < 4))
            break;
        uint8_t cat = m[1];
        uint32_t ml;
        /* one copy of the step per kind, so each is compiled for its own layout ('q', nearly
         * every message, first) */
        if (LIKELY(cat == 'q'))
            ml = quote_step(o, q, &c, m, (size_t)(end - m), 0, seq, index, &acc);
        else if (cat == 'k')
            ml = quote_step(o, q, &c, m, (size_t)(end - m), 1, seq, index, &acc);
        else
            break;
        if (UNLIKELY(ml == 0))
            break;
        seq = _mm512_add_epi64(seq, c.seq_step);
        index = _mm512_add_epi16(index, c.index_step);
        o++;
        m += ml;
        if (UNLIKELY(obi_rd64(m - ml + 4) != 0)) { /* transaction id or participant reference number */
            *extras = 1;
            *last = (uint32_t)(m - ml - blk);
            break;
        }
    }
    *offp = (uint32_t)(m - blk);
    *sum = acc;
    return (uint32_t)(o - out);
}

/* sum (the checksum's lanes) with the n bytes at p added; reads only those bytes. */
static inline __m512i sum_span(__m512i sum, const uint8_t *p, uint32_t n)
{
    for (uint32_t o = 0; o < n; o += 64) /* bzhi keeps every bit for n - o >= 64 */
        sum = _mm512_dpbusd_epi32(sum, _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, n - o), p + o), _mm512_set1_epi8(1));
    return sum;
}
#endif

/* The length of the message at m with rem bytes left in the block, or an error code. */
static inline int message_length(const uint8_t *m, uint32_t rem)
{
    if (rem < 2)
        return OMDP_OBI_E_MSG_PAST_BLOCK;
    uint8_t cat = m[1];
    uint32_t len = omdp_obi_base_len[cat];
    /* Spec Q9: a category not in 5.2 has no known length; the rest of the block is lost. */
    if (UNLIKELY(len == 0))
        return OMDP_OBI_E_UNKNOWN_CATEGORY;
    if (UNLIKELY(rem < len))
        return OMDP_OBI_E_MSG_PAST_BLOCK;
    if (cat == 'k' || cat == 'q') {
        len += omdp_obi_app_len[m[3]];
    } else if (cat == 'C') {
        uint32_t n = obi_rd16(m + 12);
        if (UNLIKELY(n > OMDP_OBI_TEXT_MAX))
            return OMDP_OBI_E_TEXT_TOO_LONG;
        len += n;
    }
    if (UNLIKELY(rem < len))
        return OMDP_OBI_E_MSG_PAST_BLOCK;
    return (int)len;
}

/* The side-buffer part of message m (ml bytes) decoded into o: a 'C' text, then the extras
 * when its transaction id, participant reference number or trade id is not zero. 0 when the
 * side buffer is short. */
static inline int put_extras(obi_dec_t *D, omdp_opra_msg_t *o, const uint8_t *m, uint32_t ml, uint32_t trade_id)
{
    uint32_t txn = obi_rd32(m + 4), prn = obi_rd32(m + 8);
    uint32_t need = (m[1] == 'C' ? ml - 14u : 0u) + ((txn | prn | trade_id) ? sizeof(omdp_obi_extra_t) : 0u);
    if (LIKELY(!need))
        return 1;
    if ((uint64_t)D->side_pos + need > D->side_cap)
        return 0;
    o->var_off = D->side_pos;
    if (m[1] == 'C') {
        o->var_len = (uint16_t)(ml - 14);
        memcpy(D->side + D->side_pos, m + 14, o->var_len);
        D->side_pos += o->var_len;
    }
    if (txn | prn | trade_id) {
        omdp_obi_extra_t x = {.txn_id = txn, .prn = prn, .trade_id = trade_id};
        memcpy(D->side + D->side_pos, &x, sizeof x);
        D->side_pos += sizeof x;
        o->wire |= OMDP_OBI_WIRE_EXTRA;
    }
    return 1;
}

#ifdef OBI_QUOTE_SIMD
/* out of the quote loop's way: the compiler keeps that loop's values in registers */
#define GENERAL_INLINE __attribute__((noinline))
#else
#define GENERAL_INLINE inline
#endif

/* Message i of a block (block_seq + i is its sequence number) by the per-field code, m with
 * rem bytes left in the block: its length, or an error code (OMDP_OBI_E_CAPACITY: the side
 * buffer is short). */
static GENERAL_INLINE int decode_general(obi_dec_t *D, omdp_opra_msg_t *o, const uint8_t *m, uint32_t rem,
                                         const omdp_obi_block_t *info, uint64_t msg_seq, uint32_t i, uint32_t time,
                                         uint8_t wire)
{
    int ml = message_length(m, rem);
    if (UNLIKELY(ml < 0))
        return ml;
    *o = blank_record;
    o->block_seq = info->block_seq;
    o->msg_seq = msg_seq;
    o->time = time;
    o->index = (uint16_t)i;
    o->participant = m[0];
    o->category = m[1];
    o->msg_type = m[2];
    o->bbo_ind = m[3]; /* the indicator byte as sent, whatever the category */
    o->retrans = info->retrans;
    /* Spec Q15: the block's session indicator applies to each of its messages. */
    o->session = info->session;
    o->wire = wire;
    uint32_t trade_id = decode_message(o, m, (uint32_t)ml);
    if (UNLIKELY(!put_extras(D, o, m, (uint32_t)ml, trade_id)))
        return OMDP_OBI_E_CAPACITY;
    return ml;
}

/* The checksum computed (spec Q1) against the one sent: 0, or the CHECKSUM error the live
 * path drops the block with (the other stream or a retransmission has it); a viewer may keep
 * the block, flagged. */
static int checksum_verdict(omdp_obi_block_t *info, uint16_t calc, uint32_t options, omdp_obi_error_t *err,
                            uint64_t packet_index)
{
    info->checksum_calc = calc;
    if (LIKELY(calc == info->checksum))
        return 0;
    if (options & OMDP_OBI_KEEP_BAD_CHECKSUM) {
        info->status |= OMDP_OBI_BLK_CHECKSUM_BAD;
        return 0;
    }
    info->status = OMDP_OBI_BLK_CHECKSUM_BAD; /* the block is not read: no other status */
    return info->error = fail(err, packet_index, OMDP_OBI_E_CHECKSUM, 19, -1, -1);
}

#ifdef OBI_QUOTE_SIMD
/* The checksum is summed on the way, with the messages' bytes (below). */
#define SUM_ON_THE_WAY 1
#else
#define SUM_ON_THE_WAY 0
#endif

/* A block error found after the header. Where the checksum is summed on the way it is not
 * known yet: it is computed now, and a mismatch is the block's error, as when it is checked
 * before any message (so every build reports the same error for the same block). */
static int block_fail(const uint8_t *blk, uint32_t size, uint32_t options, omdp_obi_block_t *info,
                      omdp_obi_error_t *err, uint64_t packet_index, int code, size_t offset, int msg, int category)
{
    if (SUM_ON_THE_WAY) {
        int bad = checksum_verdict(info, omdp_obi_checksum(blk, size), options, err, packet_index);
        if (bad)
            return bad;
    }
    return info->error = fail(err, packet_index, code, offset, msg, category);
}

static int decode_one(obi_dec_t *D, const uint8_t *blk, size_t len, uint64_t packet_index, uint32_t options,
                      omdp_opra_msg_t *out, uint64_t out_cap, omdp_obi_block_t *info, omdp_obi_error_t *err)
{
    memset(info, 0, sizeof *info);
    if (UNLIKELY(len < OMDP_OBI_HEADER_SIZE))
        return info->error = fail(err, packet_index, OMDP_OBI_E_TRUNCATED, len, -1, -1);
    /* Spec Q13: another version is rejected, not guessed at. */
    if (UNLIKELY(blk[0] != OMDP_OBI_VERSION))
        return info->error = fail(err, packet_index, OMDP_OBI_E_BAD_VERSION, 0, -1, -1);
    uint32_t size = obi_rd16(blk + 1);
    info->size = (uint16_t)size;
    info->feed = blk[3];
    info->retrans = blk[4];
    info->session = blk[5];
    info->block_seq = obi_rd32(blk + 6);
    info->msg_count = blk[10];
    info->ts_sec = obi_rd32(blk + 11);
    info->ts_nsec = obi_rd32(blk + 15);
    info->checksum = obi_rd16(blk + 19);
    if (UNLIKELY(size < OMDP_OBI_HEADER_SIZE || size > OMDP_OBI_MAX_BLOCK))
        return info->error = fail(err, packet_index, OMDP_OBI_E_BAD_SIZE, 1, -1, -1);
    if (UNLIKELY(size > len))
        return info->error = fail(err, packet_index, OMDP_OBI_E_SIZE_PAST_DATAGRAM, 1, -1, -1);
#if SUM_ON_THE_WAY
    /* the checksum's lanes: header bytes 0-18 now, the messages' on the way (19-20 are the
     * checksum itself) */
    __m512i sum = sum_span(_mm512_setzero_si512(), blk, 19);
#else
    int bad = checksum_verdict(info, omdp_obi_checksum(blk, size), options, err, packet_index);
    if (UNLIKELY(bad))
        return bad;
#endif
    uint8_t wire = OMDP_OBI_WIRE_OBI;
    /* Spec Q13: a feed indicator other than 'O' is decoded but flagged. */
    if (UNLIKELY(info->feed != 'O')) {
        info->status |= OMDP_OBI_BLK_FEED_FLAGGED;
        wire |= OMDP_OBI_WIRE_FEED;
    }
    uint32_t count = info->msg_count;
    /* Spec Q8: a block of no messages is accepted (it uses no sequence number), and counted. */
    if (count == 0)
        info->status |= OMDP_OBI_BLK_EMPTY;
    if (UNLIKELY(count > out_cap))
        return block_fail(blk, size, options, info, err, packet_index, OMDP_OBI_E_CAPACITY, 10, -1, -1);
    if (UNLIKELY(cached_sec != info->ts_sec || cached_hhmmss000 == UINT32_MAX)) {
        cached_hhmmss000 = omdp_obi_eastern_hhmmss(info->ts_sec) * 1000u;
        cached_sec = info->ts_sec;
    }
    /* FAST V2's time field, HHMMSSmmm Eastern, from the block time (milliseconds of a
     * nanosecond field outside 0..999,999,999 are kept as they come, never a fault) */
    uint32_t time = cached_hhmmss000 + info->ts_nsec / 1000000u;
    /* Spec Q2: block_seq is the first message's MSN; message i is block_seq + i. */
    uint64_t seq = info->block_seq;
#ifdef OBI_QUOTE_SIMD
    quote_block_t qb;
    quote_block_init(&qb, seq, time, info->retrans, info->session, wire);
#endif
    uint32_t off = OMDP_OBI_HEADER_SIZE;
    uint32_t i = 0;
    for (;;) {
#ifdef OBI_QUOTE_SIMD
        uint32_t last;
        int extras;
        i = quote_run(&qb, blk, size, &off, &last, i, count, out, &extras, &sum);
        if (UNLIKELY(extras)) {
            if (UNLIKELY(!put_extras(D, &out[i - 1], blk + last, off - last, 0)))
                return block_fail(blk, size, options, info, err, packet_index, OMDP_OBI_E_CAPACITY, last, (int)i - 1,
                                  blk[last + 1]);
            continue;
        }
#endif
        if (i >= count)
            break;
        const uint8_t *m = blk + off;
        uint32_t rem = size - off;
        int ml = decode_general(D, &out[i], m, rem, info, seq + i, i, time, wire);
        if (UNLIKELY(ml < 0))
            return block_fail(blk, size, options, info, err, packet_index, ml, off, (int)i, rem >= 2 ? m[1] : -1);
#if SUM_ON_THE_WAY
        sum = sum_span(sum, m, (uint32_t)ml);
#endif
        off += (uint32_t)ml;
        i++;
    }
    /* What follows the last message: nothing, or one pad byte of 0 (4.1). */
    uint32_t rest = size - off;
    if (rest == 1 && blk[off] == 0)
        info->status |= OMDP_OBI_BLK_PAD;
    else if (UNLIKELY(rest != 0))
        return block_fail(blk, size, options, info, err, packet_index, OMDP_OBI_E_TRAILING_BYTES, off, -1, -1);
#if SUM_ON_THE_WAY
    /* every byte is in the sum now (a pad byte is 0) */
    int bad = checksum_verdict(info, (uint16_t)_mm512_reduce_add_epi32(sum), options, err, packet_index);
    if (UNLIKELY(bad))
        return bad;
#endif
    if (count)
        out[count - 1].hdr.flags = OMDP_RF_LAST_IN_PACKET;
    info->count = (uint8_t)count;
    return (int)count;
}

static void count_block(omdp_obi_counters_t *c, const omdp_obi_block_t *b, int rc)
{
    if (!c || rc == OMDP_OBI_E_CAPACITY)
        return;
    c->packets++;
    if (rc < 0) {
        c->packets_bad++;
        c->errors[-rc]++;
        return;
    }
    c->packets_ok++;
    c->messages += (uint64_t)rc;
    c->empty += (b->status & OMDP_OBI_BLK_EMPTY) != 0;
    c->feed_flagged += (b->status & OMDP_OBI_BLK_FEED_FLAGGED) != 0;
    c->checksum_kept += (b->status & OMDP_OBI_BLK_CHECKSUM_BAD) != 0;
}

int omdp_obi_decode_block(const uint8_t *blk, size_t len, uint64_t packet_index, uint32_t options,
                          omdp_opra_msg_t *out, uint32_t out_cap,
                          uint8_t *side, uint32_t side_cap, uint32_t *side_used,
                          omdp_obi_block_t *info, omdp_obi_error_t *err, omdp_obi_counters_t *counters)
{
    obi_dec_t D = {.side = side, .side_cap = side_cap, .side_pos = *side_used};
    omdp_obi_block_t local;
    if (!info)
        info = &local;
    int rc = decode_one(&D, blk, len, packet_index, options, out, out_cap, info, err);
    if (rc >= 0)
        *side_used = D.side_pos;
    count_block(counters, info, rc);
    return rc;
}

int omdp_obi_decode_batch(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                          uint64_t npkts, uint64_t first_packet_index, uint32_t options,
                          omdp_opra_msg_t *out, uint64_t out_cap,
                          uint8_t *side, uint64_t side_cap, omdp_obi_block_t *blocks,
                          omdp_obi_error_t *errs, uint32_t err_cap,
                          omdp_obi_counters_t *counters, omdp_obi_batch_result_t *res)
{
    obi_dec_t D = {.side = side, .side_cap = side_cap > UINT32_MAX ? UINT32_MAX : (uint32_t)side_cap};
    omdp_obi_error_t e;
    omdp_obi_block_t local;
    uint64_t nout = 0, nerr = 0;
    uint32_t side_pos = 0;
    int status = 0;
    uint64_t i;
    if (out_cap > UINT32_MAX)
        out_cap = UINT32_MAX; /* first is 32-bit */
    for (i = 0; i < npkts; i++) {
        omdp_obi_block_t *b = blocks ? &blocks[i] : &local;
        D.side_pos = side_pos;
        int rc = decode_one(&D, buf + offsets[i], lengths[i], first_packet_index + i, options, out + nout,
                            out_cap - nout, b, &e);
        b->first = (uint32_t)nout;
        if (UNLIKELY(rc == OMDP_OBI_E_CAPACITY)) {
            status = rc;
            break;
        }
        count_block(counters, b, rc);
        if (UNLIKELY(rc < 0)) {
            b->count = 0;
            if (nerr < err_cap)
                errs[nerr] = e;
            nerr++;
            continue;
        }
        nout += (uint64_t)rc;
        side_pos = D.side_pos;
    }
    if (res) {
        res->packets_done = i;
        res->messages = nout;
        res->side_used = side_pos;
        res->errors = nerr;
    }
    return status;
}
