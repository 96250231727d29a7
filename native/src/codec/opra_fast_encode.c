/* OPRA FAST V2 encoder (spec sections 2-5 and the encoder rules): records -> packets.
 *
 * The rules that make our output equal SIAC's: a COPY field is sent only when it differs
 * from the dictionary, the sequence number only when it is not previous + 1; the pmap has
 * exactly ceil((highest present slot + 1) / 7) bytes (8 for default messages); every
 * message shorter than 255 bytes has its explicit length, 0xFF only for a last message of
 * 255 bytes or more; a 'Y' group's bit is set when any entry differs from its predecessor;
 * the block sequence is characters 4..13 of the first message's ASCII rendering.
 *
 * Each message is encoded in two passes over its layout: the first decides the pmap and
 * updates the dictionary, the second writes pmap and fields. Written into a scratch buffer
 * first, so the stream encoder can try a message and start a new packet if it does not fit.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "opra_fast_internal.h"

#define SCRATCH 8192
#define MAX_WIRE_UINT ((1ULL << 35) - 1) /* 5 groups of 7 bits */

typedef struct enc_dict {
    uint64_t v[OMDP_OPRA_SLOTS];         /* integer slots */
    uint64_t have;                       /* integer slots holding a value */
    const uint8_t *s[OMDP_OPRA_SLOTS];   /* string slots: bytes (stable for the call) */
    uint16_t slen[OMDP_OPRA_SLOTS];      /* and length; 0 = the empty string */
} enc_dict_t;

typedef struct enc {
    enc_dict_t d;
    const uint8_t *side;
    uint64_t side_len;
    omdp_opra_error_t *err;
    uint64_t msg_index;
} enc_t;

static int efail(enc_t *E, int code, int slot) {
    if (E->err) {
        E->err->packet_index = 0;
        E->err->code = code;
        E->err->offset = 0;
        E->err->message_index = (int32_t)E->msg_index;
        E->err->slot = slot;
    }
    return code;
}

static void reset_dict(enc_dict_t *d) {
    d->have = 0;
    memset(d->slen, 0, sizeof d->slen);
}

static inline uint64_t get_int(const omdp_opra_msg_t *m, int slot) {
    const slot_info_t *si = &omdp_opra_slots[slot];
    const uint8_t *b = (const uint8_t *)m + si->off;
    switch (si->kind) {
    case K_U8: return *b;
    case K_U32: { uint32_t v; memcpy(&v, b, 4); return v; }
    default: { uint64_t v; memcpy(&v, b, 8); return v; }
    }
}

static inline int put_uint(uint8_t *o, uint64_t v) {
    uint8_t g[5];
    int n = 0;
    do {
        g[n++] = (uint8_t)(v & 0x7F);
        v >>= 7;
    } while (v);
    for (int i = 0; i < n; i++) o[i] = g[n - 1 - i];
    o[n - 1] |= 0x80;
    return n;
}

static inline int put_str(uint8_t *o, const uint8_t *s, unsigned len) {
    memcpy(o, s, len);
    o[len - 1] |= 0x80;
    return (int)len;
}

static int ascii_only(const uint8_t *s, unsigned len) {
    uint8_t acc = 0;
    for (unsigned i = 0; i < len; i++) acc |= s[i];
    return !(acc & 0x80);
}

static inline int str_eq(const uint8_t *a, unsigned al, const uint8_t *b, unsigned bl) {
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* The record's layout (spec section 5), or a negative code. */
static int layout_of(const omdp_opra_msg_t *m) {
    switch (m->category) {
    case 'k': return L_K + omdp_opra_bbo_kind[m->bbo_ind];
    case 'a': return L_A;
    case 'd': return L_D;
    case 'f': return L_F;
    case 'C':
    case 'H': return L_TEXT;
    case 'Y': {
        int l = y_layout(m->msg_type);
        return l < 0 ? OMDP_OPRA_E_Y_TYPE : l;
    }
    default: return L_DEFAULT; /* '?' and every category without a FAST layout */
    }
}

/* One entry string or number of a 'Y' group, as bytes + length or as a number. */
typedef struct yval {
    const uint8_t *s;
    unsigned len;
    uint64_t v;
} yval_t;

static yval_t y_value(const omdp_opra_y_entry_t *en, int slot) {
    yval_t r = {0, 0, 0};
    switch (slot) {
    case 41:
    case 45: r.s = (const uint8_t *)en->symbol; r.len = en->symbol_len; break;
    case 42:
    case 43: r.s = (const uint8_t *)en->value; r.len = en->value_len; break;
    case 44: r.s = (const uint8_t *)en->offer; r.len = en->offer_len; break;
    case 46: r.v = en->decimals; break;
    default: r.v = en->spot; break;
    }
    return r;
}

/* Encode message m (pmap + fields, no length byte) into o (SCRATCH bytes), updating the
 * dictionary. Returns its size or a negative code. */
static int encode_message(enc_t *E, const omdp_opra_msg_t *m, uint8_t *o) {
    enc_dict_t *d = &E->d;
    int L = layout_of(m);
    if (L < 0) return efail(E, L, 1);
    uint64_t slots = omdp_opra_layout_slots[L];

    /* validate the variable parts and strings */
    const uint8_t *var = NULL;
    unsigned var_len = 0;
    const omdp_opra_y_entry_t *ent = NULL;
    uint32_t ycount = 0;
    if (L == L_TEXT || L == L_DEFAULT) {
        int slot = L == L_TEXT ? 48 : 49;
        if ((uint64_t)m->var_off + m->var_len > E->side_len) return efail(E, OMDP_OPRA_E_VAR_OUTSIDE, slot);
        if (m->var_len > OMDP_OPRA_TEXT_MAX) return efail(E, OMDP_OPRA_E_STRING_TOO_LONG, slot);
        var = E->side + m->var_off;
        var_len = m->var_len;
        if (!ascii_only(var, var_len)) return efail(E, OMDP_OPRA_E_BAD_STRING_BYTE, slot);
    } else if (L >= L_Y_SPACE && L <= L_Y_FC) {
        int cslot = L == L_Y_FC ? 40 : 39;
        ycount = m->y_count;
        if (ycount > OMDP_OPRA_Y_MAX) return efail(E, OMDP_OPRA_E_VALUE_RANGE, cslot);
        uint64_t bytes = (uint64_t)ycount * sizeof(omdp_opra_y_entry_t);
        if (m->var_len < bytes || (uint64_t)m->var_off + bytes > E->side_len) return efail(E, OMDP_OPRA_E_VAR_OUTSIDE, cslot);
        ent = (const omdp_opra_y_entry_t *)(const void *)(E->side + m->var_off);
        for (uint32_t e = 0; e < ycount; e++) {
            omdp_opra_y_entry_t en;
            memcpy(&en, &ent[e], sizeof en);
            if (en.symbol_len > 4) return efail(E, OMDP_OPRA_E_STRING_TOO_LONG, L == L_Y_FC ? 45 : 41);
            if (en.value_len > 8) return efail(E, OMDP_OPRA_E_STRING_TOO_LONG, L == L_Y_I ? 43 : 42);
            if (en.offer_len > 8) return efail(E, OMDP_OPRA_E_STRING_TOO_LONG, 44);
            if (!ascii_only((const uint8_t *)en.symbol, en.symbol_len) || !ascii_only((const uint8_t *)en.value, en.value_len) ||
                !ascii_only((const uint8_t *)en.offer, en.offer_len))
                return efail(E, OMDP_OPRA_E_BAD_STRING_BYTE, L == L_Y_FC ? 45 : 41);
        }
    } else {
        if (m->root_len > OMDP_OPRA_ROOT_MAX) return efail(E, OMDP_OPRA_E_STRING_TOO_LONG, 6);
        if (!ascii_only((const uint8_t *)m->root, m->root_len)) return efail(E, OMDP_OPRA_E_BAD_STRING_BYTE, 6);
    }

    /* pass 1: presence of each slot, dictionary update */
    uint64_t pm = 0;
    for (uint64_t rest = slots; rest; rest &= rest - 1) {
        int s = __builtin_ctzll(rest);
        const slot_info_t *si = &omdp_opra_slots[s];
        switch (si->kind) {
        case K_U8:
        case K_U32:
        case K_U64:
        case K_YCOUNT: {
            uint64_t v = s == 0 ? (L == L_DEFAULT ? (uint64_t)'?' : m->category) : si->kind == K_YCOUNT ? ycount : get_int(m, s);
            if (v > MAX_WIRE_UINT) return efail(E, OMDP_OPRA_E_VALUE_RANGE, s);
            int same = (d->have & SLOT(s)) && (s == 4 ? v == d->v[s] + 1 : v == d->v[s]);
            if (!same) pm |= SLOT(s);
            d->v[s] = v;
            d->have |= SLOT(s);
            break;
        }
        case K_ROOT:
        case K_TEXT: {
            const uint8_t *str = si->kind == K_ROOT ? (const uint8_t *)m->root : var;
            unsigned len = si->kind == K_ROOT ? m->root_len : var_len;
            if (!str_eq(str, len, d->s[s], d->slen[s])) {
                if (len == 0) return efail(E, OMDP_OPRA_E_EMPTY_STRING, s);
                pm |= SLOT(s);
            }
            d->s[s] = str;
            d->slen[s] = (uint16_t)len;
            break;
        }
        default: { /* 'Y' entry slots: one bit for the whole group */
            if (ycount == 0) break;
            int is_str = si->kind == K_YSTR;
            int differs = 0;
            for (uint32_t e = 0; e < ycount && !differs; e++) {
                yval_t cur = y_value(&ent[e], s);
                if (e == 0) {
                    differs = is_str ? !str_eq(cur.s, cur.len, d->s[s], d->slen[s])
                                     : !((d->have & SLOT(s)) && cur.v == d->v[s]);
                } else {
                    yval_t prev = y_value(&ent[e - 1], s);
                    differs = is_str ? !str_eq(cur.s, cur.len, prev.s, prev.len) : cur.v != prev.v;
                }
            }
            if (differs) {
                for (uint32_t e = 0; e < ycount; e++) {
                    yval_t cur = y_value(&ent[e], s);
                    if (is_str && cur.len == 0) return efail(E, OMDP_OPRA_E_EMPTY_STRING, s);
                    if (!is_str && cur.v > MAX_WIRE_UINT) return efail(E, OMDP_OPRA_E_VALUE_RANGE, s);
                }
                pm |= SLOT(s);
            }
            yval_t last = y_value(&ent[ycount - 1], s);
            if (is_str) {
                d->s[s] = last.s;
                d->slen[s] = (uint16_t)last.len;
            } else {
                d->v[s] = last.v;
                d->have |= SLOT(s);
            }
            break;
        }
        }
    }

    /* pass 2: pmap, then the fields in wire order */
    int nb = L == L_DEFAULT ? 8 : pm ? (63 - __builtin_clzll(pm)) / 7 + 1 : 1;
    int n = 0;
    for (int i = 0; i < nb; i++) {
        uint8_t b = omdp_opra_rev7[(pm >> (7 * i)) & 0x7F];
        o[n++] = (uint8_t)(b | (i == nb - 1 ? 0x80 : 0));
    }
    for (uint64_t rest = pm; rest; rest &= rest - 1) {
        int s = __builtin_ctzll(rest);
        const slot_info_t *si = &omdp_opra_slots[s];
        if (si->kind == K_YSTR || si->kind == K_YU8 || si->kind == K_YU32) break; /* written below */
        if (si->kind == K_ROOT) n += put_str(o + n, (const uint8_t *)m->root, m->root_len);
        else if (si->kind == K_TEXT) n += put_str(o + n, var, var_len);
        else n += put_uint(o + n, d->v[s]);
    }
    if (pm & S_Y_ENTRY) {
        for (uint32_t e = 0; e < ycount; e++) {
            for (uint64_t rest = pm & S_Y_ENTRY; rest; rest &= rest - 1) {
                int s = __builtin_ctzll(rest);
                yval_t cur = y_value(&ent[e], s);
                if (omdp_opra_slots[s].kind == K_YSTR) n += put_str(o + n, cur.s, cur.len);
                else n += put_uint(o + n, cur.v);
            }
        }
    }
    return n;
}

/* Characters 4..13 of the ASCII rendering of m (spaces where it is shorter). */
static void block_seq_of(const omdp_opra_msg_t *m, const uint8_t *side, uint64_t side_len, uint8_t out[10]) {
    char line[4096];
    int64_t n = omdp_opra_render_ascii(m, side, side_len, line, sizeof line);
    for (int i = 0; i < 10; i++) out[i] = (n > 4 + i) ? (uint8_t)line[4 + i] : ' ';
}

static void put_header(uint8_t *out, const omdp_opra_msg_t *first, const uint8_t *side, uint64_t side_len, uint32_t count) {
    out[0] = 0x01;
    out[1] = OMDP_OPRA_VERSION;
    block_seq_of(first, side, side_len, out + 2);
    out[12] = (uint8_t)('0' + count / 100);
    out[13] = (uint8_t)('0' + count / 10 % 10);
    out[14] = (uint8_t)('0' + count % 10);
}

int64_t omdp_opra_encode_packet(const omdp_opra_msg_t *msgs, uint32_t n,
                                const uint8_t *side, uint64_t side_len,
                                uint8_t *out, uint64_t cap, omdp_opra_error_t *err) {
    enc_t E;
    uint8_t scratch[SCRATCH];
    E.side = side;
    E.side_len = side_len;
    E.err = err;
    E.msg_index = 0;
    if (n == 0 || n > OMDP_OPRA_MAX_MESSAGES) return efail(&E, OMDP_OPRA_E_MSG_COUNT, -1);
    reset_dict(&E.d);
    uint64_t pos = OMDP_OPRA_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++) {
        E.msg_index = i;
        int size = encode_message(&E, &msgs[i], scratch);
        if (size < 0) return size;
        if (size >= 255 && i != n - 1) return efail(&E, OMDP_OPRA_E_LONG_NOT_LAST, -1);
        if (pos + 1 + (uint64_t)size + 1 > OMDP_OPRA_MAX_PACKET) return efail(&E, OMDP_OPRA_E_PACKET_TOO_BIG, -1);
        if (pos + 1 + (uint64_t)size + 1 > cap) return efail(&E, OMDP_OPRA_E_CAPACITY, -1);
        out[pos] = (uint8_t)(size < 255 ? size : 0xFF);
        memcpy(out + pos + 1, scratch, (size_t)size);
        pos += 1 + (uint64_t)size;
    }
    put_header(out, &msgs[0], side, side_len, n);
    out[pos++] = 0x03;
    return (int64_t)pos;
}

int64_t omdp_opra_encode_stream(const omdp_opra_msg_t *msgs, uint64_t n,
                                const uint8_t *side, uint64_t side_len,
                                const uint32_t *wanted_counts, uint64_t n_wanted,
                                uint32_t max_packet_bytes,
                                uint8_t *out, uint64_t out_cap,
                                uint64_t *pkt_off, uint32_t *pkt_len, uint64_t *pkt_first_msg,
                                uint64_t max_pkts,
                                omdp_opra_stream_result_t *res, omdp_opra_error_t *err) {
    enc_t E;
    uint8_t scratch[SCRATCH];
    E.side = side;
    E.side_len = side_len;
    E.err = err;
    E.msg_index = 0;
    uint64_t i = 0, pos = 0, k = 0;
    int64_t status = 0;
    if (n_wanted == 0 || max_packet_bytes < OMDP_OPRA_HEADER_SIZE + 3) {
        status = efail(&E, OMDP_OPRA_E_MSG_COUNT, -1);
        goto done;
    }
    if (max_packet_bytes > OMDP_OPRA_MAX_PACKET) {
        status = efail(&E, OMDP_OPRA_E_PACKET_TOO_BIG, -1);
        goto done;
    }
    while (i < n && k < max_pkts) {
        uint64_t room = out_cap - pos;
        uint64_t limit = room < max_packet_bytes ? room : max_packet_bytes;
        if (limit < OMDP_OPRA_HEADER_SIZE + 3) break; /* out is full */
        uint32_t want = wanted_counts[k % n_wanted];
        if (want < 1) want = 1;
        if (want > OMDP_OPRA_MAX_MESSAGES) want = OMDP_OPRA_MAX_MESSAGES;
        uint8_t *pkt = out + pos;
        uint64_t plen = OMDP_OPRA_HEADER_SIZE;
        uint64_t first = i;
        uint32_t cnt = 0;
        reset_dict(&E.d);
        while (cnt < want && i < n) {
            E.msg_index = i;
            int size = encode_message(&E, &msgs[i], scratch);
            if (size == OMDP_OPRA_E_EMPTY_STRING && cnt > 0) break; /* e.g. 'H' without text after text */
            if (size < 0) {
                status = size;
                goto done;
            }
            if (plen + 1 + (uint64_t)size + 1 > limit) {
                if (cnt > 0) break;
                if (1 + (uint64_t)size + OMDP_OPRA_HEADER_SIZE + 1 > max_packet_bytes) {
                    status = efail(&E, OMDP_OPRA_E_MSG_TOO_BIG, -1);
                    goto done;
                }
                goto done; /* out is full */
            }
            pkt[plen] = (uint8_t)(size < 255 ? size : 0xFF);
            memcpy(pkt + plen + 1, scratch, (size_t)size);
            plen += 1 + (uint64_t)size;
            cnt++;
            i++;
            if (size >= 255) break; /* a 0xFF message must be last */
        }
        put_header(pkt, &msgs[first], side, side_len, cnt);
        pkt[plen++] = 0x03;
        pkt_off[k] = pos;
        pkt_len[k] = (uint32_t)plen;
        pkt_first_msg[k] = first;
        pos += plen;
        k++;
    }
done:
    if (res) {
        res->messages_done = i;
        res->bytes_used = pos;
    }
    return status < 0 ? status : (int64_t)k;
}
