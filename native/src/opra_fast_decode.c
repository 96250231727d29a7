/* OPRA FAST V2 decoder (spec sections 2-6): packets -> omdp_opra_msg_t records.
 *
 * The dictionary is itself a record: each slot's COPY value lives in the record field the
 * slot decodes to, so a message is decoded by writing its present fields into the
 * dictionary and then emitting the dictionary ANDed with its layout's byte mask (fields of
 * other categories cleared). Absent integers are checked against the set of slots the
 * packet has given a value once per message, not per field. Integers and pmaps are read
 * with one unaligned 8-byte load, a stop-bit scan and a bit compaction, no per-byte loop;
 * loads never pass the packet's end (the last bytes are copied into a zeroed word).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __BMI2__
#include <immintrin.h>
#endif

#include "opra_fast_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the OPRA decoder's word loads assume a little-endian machine"
#endif

#define STOPS 0x8080808080808080ULL

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
    omdp_opra_msg_t rec;     /* the dictionary's integer slots and root */
    uint64_t have;           /* slots given a value since the packet began */
    uint32_t ycount[2];      /* slots 39, 40 */
    uint32_t text_off, text_len; /* slot 48, as stored in side */
    uint32_t def_off, def_len;   /* slot 49 */
    ystr_t ys[7];            /* slots 41..47 (46 and 47 keep their number in b) */
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
#define U8(slot, field) READ_INT(slot, 0xFFu, d->field = (uint8_t)v_)
#define U32(slot, field) READ_INT(slot, 0xFFFFFFFFu, d->field = (uint32_t)v_)
#define U64(slot, field) READ_INT(slot, ~0ULL, d->field = v_)

static inline int64_t px(uint8_t den, uint32_t v) {
    int64_t m = omdp_opra_den_mult[den];
    return m ? (int64_t)v * m : OMDP_UNDEF_PRICE;
}

/* Decode one message [p, me) into o. Returns 0 or a negative code. */
static int decode_message(dec_t *D, const uint8_t *p, const uint8_t *me, omdp_opra_msg_t *o) {
    const uint8_t *pe = D->pe;
    omdp_opra_msg_t *d = &D->rec;

    /* presence map */
    uint64_t x = load8(p, pe);
    size_t avail = (size_t)(me - p);
    uint64_t stops = x & STOPS & lowmask[min_sz(avail, 8)];
    if (UNLIKELY(!stops)) return fail(D, avail >= 8 ? OMDP_OPRA_E_PMAP_TOO_LONG : OMDP_OPRA_E_FIELD_PAST_MSG, -1, p);
    int nb = (__builtin_ctzll(stops) >> 3) + 1;
    x &= lowmask[nb];
    uint64_t pm = 0;
    for (int i = 0; i < 8; i++) pm |= (uint64_t)omdp_opra_rev7[(x >> (8 * i)) & 0x7F] << (7 * i);
    p += nb;
    const uint8_t *fields_at = p;

    U8(0, category);
    if (UNLIKELY(!((pm | D->have) & SLOT(0)))) return fail(D, OMDP_OPRA_E_NO_DICT_VALUE, 0, p);

    int L;
    uint64_t allowed;
    switch (d->category) {
    case 'k': L = L_K; allowed = omdp_opra_layout_slots[L_K_BOTH]; break;
    case 'a': L = L_A; allowed = omdp_opra_layout_slots[L_A]; break;
    case 'd': L = L_D; allowed = omdp_opra_layout_slots[L_D]; break;
    case 'f': L = L_F; allowed = omdp_opra_layout_slots[L_F]; break;
    case 'C':
    case 'H': L = L_TEXT; allowed = omdp_opra_layout_slots[L_TEXT]; break;
    case 'Y': L = L_Y_SPACE; allowed = S_HDR | SLOT(39) | SLOT(40) | S_Y_ENTRY; break;
    case '?': L = L_DEFAULT; allowed = omdp_opra_layout_slots[L_DEFAULT]; break;
    default: return fail(D, OMDP_OPRA_E_UNKNOWN_CATEGORY, 0, fields_at);
    }
    uint64_t need = d->category == 'Y' ? S_HDR : omdp_opra_layout_slots[L];
    int rc = check_slots(D, pm, need, allowed, p);
    if (UNLIKELY(rc)) return rc;

    uint64_t fields = omdp_opra_layout_slots[L];
    uint32_t var_off = 0, var_len = 0, y_count = 0;

    if (LIKELY(L != L_DEFAULT)) {
        U8(1, msg_type);
        U8(2, participant);
        U8(3, retrans);
        if (pm & SLOT(4)) {
            U64(4, msg_seq);
        } else {
            d->msg_seq += 1;
        }
        U32(5, time);
    }

    switch (L) {
    case L_K:
    case L_A:
    case L_D:
    case L_F:
        if (pm & SLOT(6)) {
            ystr_t r;
            int n = rd_sstr(p, me, pe, OMDP_OPRA_ROOT_MAX, &r);
            if (UNLIKELY(n < 0)) return fail(D, n, 6, p);
            memcpy(d->root, &r.b, OMDP_OPRA_ROOT_MAX);
            d->root_len = r.len;
            p += n;
        }
        U8(7, month_code);
        U8(8, expiry_day);
        U8(9, expiry_year);
        U8(10, strike_den);
        U32(11, strike);
        U8(12, strike_code);
        if (L == L_K) {
            U8(15, premium_den);
            U32(25, bid);
            U32(26, bid_size);
            U32(27, offer);
            U32(28, offer_size);
            U8(29, session);
            U8(30, bbo_ind);
            int kind = omdp_opra_bbo_kind[d->bbo_ind];
            if (kind) {
                L = L_K + kind;
                fields = omdp_opra_layout_slots[L];
            }
            rc = check_slots(D, pm, fields, fields, p);
            if (UNLIKELY(rc)) return rc;
            if (kind & 1) {
                U8(31, best_bid_part);
                U8(32, best_bid_den);
                U32(33, best_bid);
                U32(34, best_bid_size);
            }
            if (kind & 2) {
                U8(35, best_offer_part);
                U8(36, best_offer_den);
                U32(37, best_offer);
                U32(38, best_offer_size);
            }
        } else if (L == L_A) {
            U32(13, volume);
            U8(15, premium_den);
            U32(16, premium);
            U8(29, session);
        } else if (L == L_D) {
            U32(14, open_interest);
        } else {
            U32(13, volume);
            U32(14, open_interest);
            U8(15, premium_den);
            U32(17, open);
            U32(18, high);
            U32(19, low);
            U32(20, last);
            U8(21, net_change_ind);
            U32(22, net_change);
            U8(23, underlying_den);
            U64(24, underlying_raw);
            U32(25, bid);
            U32(27, offer);
        }
        break;
    case L_TEXT:
        if (pm & SLOT(48)) {
            int n = rd_text(D, p, me, 48, &D->text_off, &D->text_len);
            if (n < 0) return n;
            p += n;
        }
        var_off = D->text_len ? D->text_off : 0;
        var_len = D->text_len;
        break;
    case L_DEFAULT:
        if (pm & SLOT(49)) {
            int n = rd_text(D, p, me, 49, &D->def_off, &D->def_len);
            if (n < 0) return n;
            p += n;
        }
        var_off = D->def_len ? D->def_off : 0;
        var_len = D->def_len;
        break;
    default: { /* 'Y' */
        int yl = y_layout(d->msg_type);
        if (yl < 0) return fail(D, OMDP_OPRA_E_Y_TYPE, 1, p);
        L = yl;
        fields = omdp_opra_layout_slots[L];
        int cslot = L == L_Y_FC ? 40 : 39;
        rc = check_slots(D, pm, fields & ~S_Y_ENTRY, fields, p);
        if (UNLIKELY(rc)) return rc;
        READ_INT(cslot, OMDP_OPRA_Y_MAX, D->ycount[cslot - 39] = (uint32_t)v_);
        y_count = D->ycount[cslot - 39];
        if (y_count == 0) {
            fields &= ~S_Y_ENTRY;
            break;
        }
        rc = check_slots(D, pm, fields, fields, p);
        if (UNLIKELY(rc)) return rc;
        uint32_t start = (D->side_pos + 7u) & ~7u;
        uint32_t bytes = y_count * (uint32_t)sizeof(omdp_opra_y_entry_t);
        if ((uint64_t)start + bytes > D->side_cap) return fail(D, OMDP_OPRA_E_CAPACITY, cslot, p);
        static const uint8_t y_slots[3][3] = {{41, 42, 0}, {41, 43, 44}, {45, 46, 47}};
        const uint8_t *slots = y_slots[L - L_Y_SPACE];
        for (uint32_t e = 0; e < y_count; e++) {
            omdp_opra_y_entry_t en;
            memset(&en, 0, sizeof en);
            for (int k = 0; k < 3 && slots[k]; k++) {
                int s = slots[k];
                ystr_t *ys = &D->ys[s - 41];
                if (pm & SLOT(s)) {
                    int n;
                    if (s == 46 || s == 47) {
                        uint64_t v;
                        n = rd_uint(p, me, pe, &v);
                        if (UNLIKELY(n < 0)) return fail(D, n, s, p);
                        if (UNLIKELY(v > (s == 46 ? 0xFFu : 0xFFFFFFFFu))) return fail(D, OMDP_OPRA_E_VALUE_RANGE, s, p);
                        ys->b = v;
                    } else {
                        n = rd_sstr(p, me, pe, omdp_opra_slots[s].cap, ys);
                        if (UNLIKELY(n < 0)) return fail(D, n, s, p);
                    }
                    p += n;
                }
                switch (s) {
                case 41:
                case 45: memcpy(en.symbol, &ys->b, 4); en.symbol_len = ys->len; break;
                case 42:
                case 43: memcpy(en.value, &ys->b, 8); en.value_len = ys->len; break;
                case 44: memcpy(en.offer, &ys->b, 8); en.offer_len = ys->len; break;
                case 46: en.decimals = (uint8_t)ys->b; break;
                default: en.spot = (uint32_t)ys->b; break;
                }
            }
            memcpy(D->side + start + e * sizeof en, &en, sizeof en);
        }
        D->side_pos = start + bytes;
        var_off = start;
        var_len = bytes;
        break;
    }
    }
    if (UNLIKELY(p != me)) return fail(D, OMDP_OPRA_E_TRAILING_BYTES, -1, p);
    D->have |= fields;

    /* emit: the dictionary's fields of this layout, then the derived values */
    const uint64_t *mk = omdp_opra_layout_mask[L];
    const uint64_t *src = (const uint64_t *)(const void *)d;
    uint64_t *dst = (uint64_t *)(void *)o;
    for (int i = 0; i < OMDP_OPRA_MSG_SIZE / 8; i++) dst[i] = src[i] & mk[i];
    o->hdr.type = OMDP_RT_OPRA_MSG;
    o->hdr.length = OMDP_OPRA_MSG_SIZE;
    o->block_seq = D->block_seq;
    o->fields = fields;
    o->underlying_id = OMDP_NO_UNDERLYING;
    o->index = (uint16_t)D->msg_index;
    o->var_off = var_off;
    o->var_len = (uint16_t)var_len;
    o->y_count = (uint16_t)y_count;
    if (fields & SLOT(11)) {
        o->strike_px = px(d->strike_den, d->strike);
        uint8_t mo = omdp_opra_month[d->month_code];
        o->put_call = omdp_opra_put_call[d->month_code];
        if (mo && d->expiry_day >= 1 && d->expiry_day <= 31 && d->expiry_year <= 99)
            o->expiry = (2000u + d->expiry_year) * 10000u + mo * 100u + d->expiry_day;
        if (fields & SLOT(25)) {
            o->bid_px = px(d->premium_den, d->bid);
            o->offer_px = px(d->premium_den, d->offer);
        }
        if (fields & SLOT(16)) o->premium_px = px(d->premium_den, d->premium);
        if (fields & SLOT(33)) o->best_bid_px = px(d->best_bid_den, d->best_bid);
        if (fields & SLOT(37)) o->best_offer_px = px(d->best_offer_den, d->best_offer);
    }
    return 0;
}

static uint64_t parse_block_seq(const uint8_t *s) {
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v;
}

/* Decode the packet [pkt, pkt+len) into out; D->side/side_cap/side_pos set by the caller. */
static int decode_one(dec_t *D, const uint8_t *pkt, size_t len, omdp_opra_msg_t *out, uint64_t out_cap) {
    D->pkt = pkt;
    D->pe = pkt + len;
    D->msg_index = -1;
    if (len < OMDP_OPRA_HEADER_SIZE + 1) return fail(D, OMDP_OPRA_E_TRUNCATED, -1, pkt + len);
    if (pkt[0] != 0x01) return fail(D, OMDP_OPRA_E_BAD_SOH, -1, pkt);
    if (pkt[1] != OMDP_OPRA_VERSION) return fail(D, OMDP_OPRA_E_BAD_VERSION, -1, pkt + 1);
    if (pkt[len - 1] != 0x03) return fail(D, OMDP_OPRA_E_BAD_ETX, -1, pkt + len - 1);
    uint32_t count = 0;
    for (int i = 12; i < 15; i++) {
        if (pkt[i] < '0' || pkt[i] > '9') return fail(D, OMDP_OPRA_E_BAD_COUNT, -1, pkt + i);
        count = count * 10 + (uint32_t)(pkt[i] - '0');
    }
    if (count > out_cap) return fail(D, OMDP_OPRA_E_CAPACITY, -1, pkt + 12);
    D->block_seq = parse_block_seq(pkt + 2);

    /* the per-packet dictionary reset */
    memset(&D->rec, 0, sizeof D->rec);
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
        int rc = decode_message(D, p, me, &out[i]);
        if (UNLIKELY(rc)) return rc;
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
    omdp_opra_tables_init();
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
    omdp_opra_tables_init();
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
