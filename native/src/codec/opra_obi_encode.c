/* OBI encoder: omdp_opra_msg_t records -> one block (spec sections 4-7), the inverse of
 * opra_obi_decode.c's field map, so encode(decode(b)) == b for every well-formed block whose
 * reserved bytes are zero (the decoder ignores reserved bytes, spec section 3; the encoder
 * writes them as 0). Every value is checked against its wire field; nothing is truncated
 * silently. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "opra_obi_internal.h"

static int fail(omdp_obi_error_t *err, int code, int msg, int category)
{
    if (err) {
        err->packet_index = 0;
        err->code = code;
        err->offset = 0;
        err->message_index = msg;
        err->category = category;
    }
    return code;
}

/* The wire category of a record: a 'k' record flagged short travels as 'q' (a record built
 * with category 'q' does too). */
static inline uint8_t wire_category(const omdp_opra_msg_t *m)
{
    return m->category == 'k' && (m->wire & OMDP_OBI_WIRE_SHORT) ? 'q' : m->category;
}

int omdp_obi_message_length(const omdp_opra_msg_t *m)
{
    uint8_t cat = wire_category(m);
    int len = omdp_obi_base_len[cat];
    if (len == 0)
        return OMDP_OBI_E_CATEGORY;
    if (cat == 'k' || cat == 'q')
        len += omdp_obi_app_len[m->bbo_ind];
    else if (cat == 'C') {
        if (m->var_len > OMDP_OBI_TEXT_MAX)
            return OMDP_OBI_E_TEXT_TOO_LONG;
        len += m->var_len;
    }
    return len;
}

/* The symbol in w bytes: the root's bytes, spaces after root_len; bytes of the root beyond
 * w must be spaces (the padding the decoder adds), or the record does not fit. */
static inline int put_symbol(uint8_t *p, const omdp_opra_msg_t *m, int w)
{
    int n = m->root_len < OMDP_OPRA_ROOT_MAX ? m->root_len : OMDP_OPRA_ROOT_MAX;
    for (int j = 0; j < w; j++)
        p[j] = j < n ? (uint8_t)m->root[j] : ' ';
    for (int j = w; j < n; j++)
        if (m->root[j] != ' ')
            return -1;
    return 0;
}

static inline void put_expiry(uint8_t *p, const omdp_opra_msg_t *m)
{
    p[0] = m->month_code;
    p[1] = m->expiry_day;
    p[2] = m->expiry_year;
}

static inline uint8_t *put_app(uint8_t *p, uint8_t part, uint8_t den, uint32_t price, uint32_t size)
{
    p[0] = part;
    p[1] = den;
    obi_wr32(p + 2, price);
    obi_wr32(p + 6, size);
    return p + 10;
}

static inline void put_appendages(uint8_t *p, const omdp_opra_msg_t *m)
{
    if (obi_has_bid_app(m->bbo_ind))
        p = put_app(p, m->best_bid_part, m->best_bid_den, m->best_bid, m->best_bid_size);
    if (obi_has_offer_app(m->bbo_ind))
        put_app(p, m->best_offer_part, m->best_offer_den, m->best_offer, m->best_offer_size);
}

/* Write the message of record m at p (len bytes, zeroed by the caller). 0 or an error. */
static int put_message(uint8_t *p, const omdp_opra_msg_t *m, const uint8_t *side, uint64_t side_len)
{
    uint8_t cat = wire_category(m);
    omdp_obi_extra_t x = {0};
    if (m->wire & OMDP_OBI_WIRE_EXTRA) {
        uint64_t at = (uint64_t)m->var_off + m->var_len;
        if (at + sizeof x > side_len)
            return OMDP_OBI_E_VAR_OUTSIDE;
        memcpy(&x, side + at, sizeof x);
    }
    p[0] = m->participant;
    p[1] = cat;
    p[2] = m->msg_type;
    p[3] = m->bbo_ind;
    obi_wr32(p + 4, x.txn_id);
    obi_wr32(p + 8, x.prn);
    switch (cat) {
    case 'k':
        if (put_symbol(p + 12, m, 5))
            return OMDP_OBI_E_VALUE_RANGE;
        put_expiry(p + 18, m);
        p[21] = m->strike_den;
        obi_wr32(p + 22, m->strike);
        p[26] = m->premium_den;
        obi_wr32(p + 27, m->bid);
        obi_wr32(p + 31, m->bid_size);
        obi_wr32(p + 35, m->offer);
        obi_wr32(p + 39, m->offer_size);
        put_appendages(p + 43, m);
        break;
    case 'q':
        /* the implied denominators and 16-bit fields of 7.5, or the record is not a 'q' */
        if (put_symbol(p + 12, m, 4) || m->strike_den != 'A' || m->premium_den != 'B' || m->strike > 0xFFFF ||
            m->bid > 0xFFFF || m->bid_size > 0xFFFF || m->offer > 0xFFFF || m->offer_size > 0xFFFF)
            return OMDP_OBI_E_SHORT_RANGE;
        put_expiry(p + 16, m);
        obi_wr16(p + 19, m->strike);
        obi_wr16(p + 21, m->bid);
        obi_wr16(p + 23, m->bid_size);
        obi_wr16(p + 25, m->offer);
        obi_wr16(p + 27, m->offer_size);
        put_appendages(p + 29, m);
        break;
    case 'a':
        if (put_symbol(p + 12, m, 5))
            return OMDP_OBI_E_VALUE_RANGE;
        put_expiry(p + 18, m);
        p[21] = m->strike_den;
        obi_wr32(p + 22, m->strike);
        obi_wr32(p + 26, m->volume);
        p[30] = m->premium_den;
        obi_wr32(p + 31, m->premium);
        obi_wr32(p + 35, x.trade_id);
        break;
    case 'd':
        if (put_symbol(p + 12, m, 5))
            return OMDP_OBI_E_VALUE_RANGE;
        put_expiry(p + 18, m);
        p[21] = m->strike_den;
        obi_wr32(p + 22, m->strike);
        obi_wr32(p + 26, m->open_interest);
        break;
    case 'f': {
        if (put_symbol(p + 12, m, 5))
            return OMDP_OBI_E_VALUE_RANGE;
        int64_t nc = m->net_change_ind == '-' ? -(int64_t)m->net_change : (int64_t)m->net_change;
        if (nc < INT32_MIN || nc > INT32_MAX)
            return OMDP_OBI_E_VALUE_RANGE;
        put_expiry(p + 18, m);
        p[21] = m->strike_den;
        obi_wr32(p + 22, m->strike);
        obi_wr32(p + 26, m->volume);
        obi_wr32(p + 30, m->open_interest);
        p[34] = m->premium_den;
        obi_wr32(p + 35, m->open);
        obi_wr32(p + 39, m->high);
        obi_wr32(p + 43, m->low);
        obi_wr32(p + 47, m->last);
        obi_wr32(p + 51, (uint32_t)(int32_t)nc);
        p[55] = m->underlying_den;
        obi_wr64(p + 56, m->underlying_raw);
        obi_wr32(p + 64, m->bid);
        obi_wr32(p + 68, m->offer);
        break;
    }
    case 'C':
        if ((uint64_t)m->var_off + m->var_len > side_len)
            return OMDP_OBI_E_VAR_OUTSIDE;
        obi_wr16(p + 12, m->var_len);
        if (m->var_len)
            memcpy(p + 14, side + m->var_off, m->var_len);
        break;
    case 'H':
        break;
    case 'R':
        if (put_symbol(p + 12, m, 5) || m->volume > 0xFFFF)
            return OMDP_OBI_E_VALUE_RANGE;
        put_expiry(p + 17, m);
        p[20] = m->strike_den;
        obi_wr32(p + 21, m->strike);
        obi_wr16(p + 25, m->volume); /* mapped_line */
        break;
    default: /* 'Y' */
        if (put_symbol(p + 12, m, 5))
            return OMDP_OBI_E_VALUE_RANGE;
        p[18] = m->underlying_den;
        if (m->msg_type == 'I') {
            obi_wr32(p + 19, m->bid);
            obi_wr32(p + 23, m->offer);
        } else {
            int64_t v = (int64_t)m->underlying_raw;
            if (v < INT32_MIN || v > INT32_MAX)
                return OMDP_OBI_E_VALUE_RANGE;
            obi_wr32(p + 19, (uint32_t)(int32_t)v);
        }
        break;
    }
    return 0;
}

int64_t omdp_obi_encode_block(const omdp_obi_block_t *hdr, const omdp_opra_msg_t *msgs, uint32_t n,
                              const uint8_t *side, uint64_t side_len,
                              uint8_t *out, uint64_t cap, omdp_obi_error_t *err)
{
    /* no records is an empty block (spec Q8), which decoders accept */
    if (n > OMDP_OBI_MAX_MESSAGES)
        return fail(err, OMDP_OBI_E_MSG_COUNT, -1, -1);
    uint32_t off = OMDP_OBI_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        const omdp_opra_msg_t *m = &msgs[i];
        /* 4.1: administrative and control messages travel alone */
        if (n > 1 && (m->category == 'C' || m->category == 'H'))
            return fail(err, OMDP_OBI_E_NOT_ALONE, (int)i, m->category);
        int len = omdp_obi_message_length(m);
        if (len < 0)
            return fail(err, len, (int)i, m->category);
        if (off + (uint32_t)len > OMDP_OBI_MAX_BLOCK)
            return fail(err, OMDP_OBI_E_BLOCK_TOO_BIG, (int)i, m->category);
        if (off + (uint64_t)len + 1 > cap)
            return fail(err, OMDP_OBI_E_CAPACITY, (int)i, m->category);
        memset(out + off, 0, (size_t)len);
        int rc = put_message(out + off, m, side, side_len);
        if (rc)
            return fail(err, rc, (int)i, m->category);
        off += (uint32_t)len;
    }
    if (off & 1u) /* the pad byte: present exactly when 21 + the messages is odd */
        out[off++] = 0;
    if (off > OMDP_OBI_MAX_BLOCK)
        return fail(err, OMDP_OBI_E_BLOCK_TOO_BIG, (int)n - 1, n ? msgs[n - 1].category : -1);
    out[0] = OMDP_OBI_VERSION;
    obi_wr16(out + 1, off);
    out[3] = hdr->feed;
    out[4] = hdr->retrans;
    out[5] = hdr->session;
    obi_wr32(out + 6, hdr->block_seq);
    out[10] = (uint8_t)n;
    obi_wr32(out + 11, hdr->ts_sec);
    obi_wr32(out + 15, hdr->ts_nsec);
    obi_wr16(out + 19, omdp_obi_checksum(out, off));
    return off;
}

static inline int travels_alone(const omdp_opra_msg_t *m) { return m->category == 'C' || m->category == 'H'; }

int64_t omdp_obi_encode_stream(const omdp_opra_msg_t *msgs, uint64_t n, const int64_t *ts_ns,
                               const uint8_t *side, uint64_t side_len,
                               const uint32_t *wanted_counts, uint64_t n_wanted, uint32_t max_block_bytes,
                               uint8_t *out, uint64_t out_cap,
                               uint64_t *blk_off, uint32_t *blk_len, uint64_t *blk_first, uint64_t max_blocks,
                               omdp_obi_stream_result_t *res, omdp_obi_error_t *err)
{
    if (max_block_bytes > OMDP_OBI_MAX_BLOCK || max_block_bytes < OMDP_OBI_HEADER_SIZE + OMDP_OBI_MAX_MSG + 1)
        max_block_bytes = OMDP_OBI_MAX_BLOCK;
    uint64_t i = 0, pos = 0, k = 0;
    while (i < n && k < max_blocks) {
        uint32_t want = n_wanted ? wanted_counts[k % n_wanted] : OMDP_OBI_MAX_MESSAGES;
        want = want < 1 ? 1 : want > OMDP_OBI_MAX_MESSAGES ? OMDP_OBI_MAX_MESSAGES : want;
        /* how many records go in this block */
        uint32_t size = OMDP_OBI_HEADER_SIZE, cnt = 0;
        while (i + cnt < n && cnt < want) {
            const omdp_opra_msg_t *m = &msgs[i + cnt];
            int len = omdp_obi_message_length(m);
            if (len < 0)
                return fail(err, len, (int)(i + cnt), m->category);
            /* message i of a block is number block_seq + i: a gap in msg_seq starts a new block */
            if (cnt && (travels_alone(m) || travels_alone(&msgs[i]) || m->session != msgs[i].session ||
                        m->retrans != msgs[i].retrans || m->msg_seq != msgs[i].msg_seq + cnt))
                break;
            uint32_t grown = size + (uint32_t)len;
            if (grown + (grown & 1u) > max_block_bytes) {
                if (!cnt)
                    return fail(err, OMDP_OBI_E_BLOCK_TOO_BIG, (int)(i + cnt), m->category);
                break;
            }
            size = grown;
            cnt++;
        }
        if (pos + OMDP_OBI_MAX_BLOCK + 1 > out_cap)
            break;
        int64_t t = ts_ns ? ts_ns[i + cnt - 1] : 0;
        omdp_obi_block_t hdr = {
            .block_seq = (uint32_t)msgs[i].msg_seq,
            .ts_sec = (uint32_t)(t / 1000000000LL),
            .ts_nsec = (uint32_t)(t % 1000000000LL),
            .feed = 'O',
            .retrans = msgs[i].retrans,
            .session = msgs[i].session,
        };
        int64_t len = omdp_obi_encode_block(&hdr, msgs + i, cnt, side, side_len, out + pos, out_cap - pos, err);
        if (len < 0) {
            if (err)
                err->message_index += (int32_t)i;
            return len;
        }
        blk_off[k] = pos;
        blk_len[k] = (uint32_t)len;
        blk_first[k] = i;
        pos += (uint64_t)len;
        i += cnt;
        k++;
    }
    if (res) {
        res->messages_done = i;
        res->bytes_used = pos;
    }
    return (int64_t)k;
}
