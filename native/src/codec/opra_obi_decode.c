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

#if defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__BMI2__)
/* Quotes ('k', 'q'), nearly every message of the feed, by byte permutation where the CPU has
 * AVX-512 VBMI: the message (at most 63 bytes with its appendages) is read with one masked
 * load that touches only its own bytes, and the record's last two cache lines are each one
 * vpermb of it - every wire field that lands in them, big-endian integers turned around and
 * widened, bytes copied - ORed over the block's template (constants and block fields), then
 * stored whole; the values that need arithmetic (prices, the expiry date, sequence number,
 * fields) are stored after. One permutation per quote kind and appendage set ("class": bit
 * 0 a best-bid appendage, bit 1 a best-offer one), built once at load. Elsewhere the
 * per-field code below (decode_message) does the same work; the tests pin both to the
 * same records. */
#include <immintrin.h>

#define OBI_QUOTE_SIMD 1

typedef struct quote_perm {
    uint8_t idx[2][64]; /* record bytes 128-191 and 192-255: source byte in the message */
    uint64_t take[2];   /* which of them come from the message (the rest: 0, then the template) */
} quote_perm_t;

static quote_perm_t quote_perms[2][4]; /* ['q' == 0, 'k' == 1][class] */

/* Record bytes [at, at + width) from the big-endian field of `src_width` bytes at src,
 * zero-extended (width >= src_width). */
static void perm_be(quote_perm_t *p, size_t at, unsigned src, unsigned src_width)
{
    for (unsigned j = 0; j < src_width; j++) {
        size_t d = at + j - 128;
        p->idx[d / 64][d % 64] = (uint8_t)(src + src_width - 1 - j);
        p->take[d / 64] |= 1ull << (d % 64);
    }
}

static void perm_bytes(quote_perm_t *p, size_t at, unsigned src, unsigned n)
{
    for (unsigned j = 0; j < n; j++) {
        size_t d = at + j - 128;
        p->idx[d / 64][d % 64] = (uint8_t)(src + j);
        p->take[d / 64] |= 1ull << (d % 64);
    }
}

__attribute__((constructor)) static void build_quote_perms(void)
{
    for (int kind = 0; kind < 2; kind++) {
        for (unsigned cls = 0; cls < 4; cls++) {
            quote_perm_t *p = &quote_perms[kind][cls];
            memset(p, 0, sizeof *p);
            unsigned w = kind ? 4 : 2, body = kind ? 43 : 29;
            if (kind) { /* 7.4 */
                perm_be(p, offsetof(omdp_opra_msg_t, strike), 22, 4);
                perm_be(p, offsetof(omdp_opra_msg_t, bid), 27, 4);
                perm_be(p, offsetof(omdp_opra_msg_t, bid_size), 31, 4);
                perm_be(p, offsetof(omdp_opra_msg_t, offer), 35, 4);
                perm_be(p, offsetof(omdp_opra_msg_t, offer_size), 39, 4);
                perm_bytes(p, offsetof(omdp_opra_msg_t, month_code), 18, 3);
                perm_bytes(p, offsetof(omdp_opra_msg_t, strike_den), 21, 1);
                perm_bytes(p, offsetof(omdp_opra_msg_t, premium_den), 26, 1);
                perm_bytes(p, offsetof(omdp_opra_msg_t, root), 12, 5);
            } else { /* 7.5 */
                perm_be(p, offsetof(omdp_opra_msg_t, strike), 19, w);
                perm_be(p, offsetof(omdp_opra_msg_t, bid), 21, w);
                perm_be(p, offsetof(omdp_opra_msg_t, bid_size), 23, w);
                perm_be(p, offsetof(omdp_opra_msg_t, offer), 25, w);
                perm_be(p, offsetof(omdp_opra_msg_t, offer_size), 27, w);
                perm_bytes(p, offsetof(omdp_opra_msg_t, month_code), 16, 3);
                perm_bytes(p, offsetof(omdp_opra_msg_t, root), 12, 4);
            }
            perm_bytes(p, offsetof(omdp_opra_msg_t, msg_type), 2, 1);
            perm_bytes(p, offsetof(omdp_opra_msg_t, participant), 0, 1);
            perm_bytes(p, offsetof(omdp_opra_msg_t, bbo_ind), 3, 1);
            unsigned a = body; /* 7.6: the bid appendage first when both */
            if (cls & 1) {
                perm_bytes(p, offsetof(omdp_opra_msg_t, best_bid_part), a, 2);
                perm_be(p, offsetof(omdp_opra_msg_t, best_bid), a + 2, 4);
                perm_be(p, offsetof(omdp_opra_msg_t, best_bid_size), a + 6, 4);
                a += 10;
            }
            if (cls & 2) {
                perm_bytes(p, offsetof(omdp_opra_msg_t, best_offer_part), a, 2);
                perm_be(p, offsetof(omdp_opra_msg_t, best_offer), a + 2, 4);
                perm_be(p, offsetof(omdp_opra_msg_t, best_offer_size), a + 6, 4);
            }
        }
    }
}

/* The block's template: record lines 0 and 2 and, per quote kind, line 3 (line 1 is all
 * computed values). Built in registers from constants (no narrow stores read back wide). */
typedef struct quote_tmpl {
    __m512i line0, line2, line3[2];
} quote_tmpl_t;

#define L3(f) (offsetof(omdp_opra_msg_t, f) - 192)
static const uint8_t quote_line3[2][64] __attribute__((aligned(64))) = {
    {[L3(category)] = 'k', [L3(strike_den)] = 'A', [L3(premium_den)] = 'B', [L3(root_len)] = 5,
     [L3(root) + 4] = ' ', [L3(wire)] = OMDP_OBI_WIRE_SHORT},
    {[L3(category)] = 'k', [L3(root_len)] = 5},
};

static inline void quote_template(quote_tmpl_t *t, uint64_t block_seq, uint32_t time, uint8_t retrans,
                                  uint8_t session, uint8_t wire)
{
    const uint8_t *blank = (const uint8_t *)&blank_record;
    t->line0 = _mm512_mask_set1_epi64(_mm512_loadu_si512((const void *)blank), 1u << 7, (long long)block_seq);
    t->line2 = _mm512_mask_set1_epi32(_mm512_loadu_si512((const void *)(blank + 128)), 1u << 2, (int)time);
    __m512i blk = _mm512_mask_set1_epi8(_mm512_setzero_si512(), 1ull << L3(retrans), (char)retrans);
    blk = _mm512_mask_set1_epi8(blk, 1ull << L3(session), (char)session);
    blk = _mm512_mask_set1_epi8(blk, 1ull << L3(wire), (char)wire);
    for (int k = 0; k < 2; k++)
        t->line3[k] = _mm512_or_si512(blk, _mm512_load_si512((const void *)quote_line3[k]));
}

/* The record of quote m (ml bytes, checked; kind 1 'k', 0 'q'). */
static inline void quote_simd(omdp_opra_msg_t *o, const quote_tmpl_t *t, const uint8_t *m, uint32_t ml, int kind,
                              uint64_t msg_seq, uint16_t index, int64_t mult_a, int64_t mult_b)
{
    uint8_t ind = m[3];
    unsigned hb = (unsigned)obi_has_bid_app(ind), ho = (unsigned)obi_has_offer_app(ind);
    const quote_perm_t *p = &quote_perms[kind][hb | ho << 1];
    __m512i msg = _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, ml), m);
    uint8_t *r = (uint8_t *)o;
    _mm512_storeu_si512((void *)r, t->line0);
    _mm512_storeu_si512((void *)(r + 128),
                        _mm512_or_si512(t->line2, _mm512_maskz_permutexvar_epi8(
                                                      p->take[0], _mm512_loadu_si512((const void *)p->idx[0]), msg)));
    _mm512_storeu_si512((void *)(r + 192),
                        _mm512_or_si512(t->line3[kind], _mm512_maskz_permutexvar_epi8(
                                                            p->take[1], _mm512_loadu_si512((const void *)p->idx[1]), msg)));
    int64_t strike_px, bid_px, offer_px;
    if (kind) {
        strike_px = px(m[21], (int32_t)obi_rd32(m + 22));
        bid_px = px(m[26], (int32_t)obi_rd32(m + 27));
        offer_px = px(m[26], (int32_t)obi_rd32(m + 35));
    } else {
        strike_px = (int64_t)obi_rd16(m + 19) * mult_a;
        bid_px = (int64_t)obi_rd16(m + 21) * mult_b;
        offer_px = (int64_t)obi_rd16(m + 25) * mult_b;
    }
    const uint8_t *a = m + (kind ? 43 : 29);
    int64_t best_bid_px = 0, best_offer_px = 0;
    if (hb) {
        best_bid_px = px(a[1], (int32_t)obi_rd32(a + 2));
        a += 10;
    }
    if (ho)
        best_offer_px = px(a[1], (int32_t)obi_rd32(a + 2));
    o->msg_seq = msg_seq;
    o->fields = OBI_F_K | (hb ? OBI_F_BEST_BID : 0) | (ho ? OBI_F_BEST_OFFER : 0);
    o->underlying_raw = 0;
    o->strike_px = strike_px;
    o->bid_px = bid_px;
    o->offer_px = offer_px;
    o->premium_px = 0;
    o->best_bid_px = best_bid_px;
    o->best_offer_px = best_offer_px;
    o->index = index;
    const uint8_t *e = m + (kind ? 18 : 16);
    uint32_t mo = omdp_opra_month[e[0]], day = e[1], year = e[2];
    if (mo && day >= 1 && day <= 31 && year <= 99) {
        o->expiry = (2000u + year) * 10000u + mo * 100u + day;
        o->put_call = omdp_opra_put_call[e[0]];
    }
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
    info->checksum_calc = omdp_obi_checksum(blk, size);
    if (UNLIKELY(info->checksum_calc != info->checksum)) {
        info->status |= OMDP_OBI_BLK_CHECKSUM_BAD;
        /* Spec Q1: the live path counts the mismatch and drops the block (the other stream
         * or a retransmission has it); a viewer may keep it, flagged. */
        if (!(options & OMDP_OBI_KEEP_BAD_CHECKSUM))
            return info->error = fail(err, packet_index, OMDP_OBI_E_CHECKSUM, 19, -1, -1);
    }
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
        return info->error = fail(err, packet_index, OMDP_OBI_E_CAPACITY, 10, -1, -1);
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
    quote_tmpl_t qt;
    quote_template(&qt, seq, time, info->retrans, info->session, wire);
    int64_t mult_a = omdp_opra_den_mult['A'], mult_b = omdp_opra_den_mult['B'];
#endif
    uint32_t off = OMDP_OBI_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *m = blk + off;
        uint32_t rem = size - off;
        omdp_opra_msg_t *o = &out[i];
#ifdef OBI_QUOTE_SIMD
        /* a quote's length is its form's and its indicator's: checked once, then no further
         * test on the way but the (rare) extras */
        uint8_t cat = rem >= 4 ? m[1] : 0;
        if (LIKELY(cat == 'q' || cat == 'k')) {
            int kind = cat == 'k';
            uint32_t ml = (kind ? 43u : 29u) + omdp_obi_app_len[m[3]];
            if (UNLIKELY(ml > rem))
                return info->error = fail(err, packet_index, OMDP_OBI_E_MSG_PAST_BLOCK, off, (int)i, cat);
            quote_simd(o, &qt, m, ml, kind, seq + i, (uint16_t)i, mult_a, mult_b);
            if (UNLIKELY(obi_rd64(m + 4) != 0) && UNLIKELY(!put_extras(D, o, m, ml, 0)))
                return info->error = fail(err, packet_index, OMDP_OBI_E_CAPACITY, off, (int)i, cat);
            off += ml;
            continue;
        }
#endif
        int ml = message_length(m, rem);
        if (UNLIKELY(ml < 0))
            return info->error = fail(err, packet_index, ml, off, (int)i, rem >= 2 ? m[1] : -1);
        *o = blank_record;
        o->block_seq = seq;
        o->msg_seq = seq + i;
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
            return info->error = fail(err, packet_index, OMDP_OBI_E_CAPACITY, off, (int)i, m[1]);
        off += (uint32_t)ml;
    }
    /* What follows the last message: nothing, or one pad byte of 0 (4.1). */
    uint32_t rest = size - off;
    if (rest == 1 && blk[off] == 0)
        info->status |= OMDP_OBI_BLK_PAD;
    else if (UNLIKELY(rest != 0))
        return info->error = fail(err, packet_index, OMDP_OBI_E_TRAILING_BYTES, off, -1, -1);
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
