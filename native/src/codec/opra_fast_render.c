/* Text renderings of OPRA message records: SIAC's reference ASCII layout (spec section 7,
 * what the encoder takes the block sequence from) and a readable table for people. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "omdp/opra_obi.h"
#include "opra_fast_internal.h"

typedef struct writer {
    char *o;
    uint64_t cap;
    uint64_t n;
    int overflow;
} writer_t;

static void w_bytes(writer_t *w, const void *s, uint64_t len) {
    if (w->n + len > w->cap) {
        w->overflow = 1;
        return;
    }
    memcpy(w->o + w->n, s, len);
    w->n += len;
}

static void w_char(writer_t *w, uint8_t c) { w_bytes(w, &c, 1); }

static void w_num(writer_t *w, uint64_t v, int width) {
    char tmp[24];
    w_bytes(w, tmp, (uint64_t)put_digits(tmp, v, width));
}

static void w_fmt(writer_t *w, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) w_bytes(w, tmp, (uint64_t)(n < (int)sizeof tmp ? n : (int)sizeof tmp - 1));
}

static unsigned root_len(const omdp_opra_msg_t *m) {
    return m->root_len < OMDP_OPRA_ROOT_MAX ? m->root_len : OMDP_OPRA_ROOT_MAX;
}

/* The variable part of m inside side, or NULL if it lies outside. */
static const uint8_t *var_part(const omdp_opra_msg_t *m, const uint8_t *side, uint64_t side_len) {
    if ((uint64_t)m->var_off + m->var_len > side_len) return NULL;
    return side + m->var_off;
}

static int is_series(uint8_t c) { return c == 'a' || c == 'k' || c == 'd' || c == 'f'; }
static int is_text(uint8_t c) { return c == 'C' || c == 'H'; }

static int render_ascii(writer_t *w, const omdp_opra_msg_t *m, const uint8_t *side, uint64_t side_len) {
    const uint8_t *var = var_part(m, side, side_len);
    uint8_t c = m->category;
    if (!is_series(c) && !is_text(c) && c != 'Y') { /* default: the whole ASCII message */
        if (!var) return OMDP_OPRA_E_VAR_OUTSIDE;
        w_bytes(w, var, m->var_len);
        return 0;
    }
    w_char(w, m->participant);
    w_char(w, m->retrans);
    w_char(w, c);
    w_char(w, m->msg_type);
    w_num(w, m->msg_seq, 10);
    w_num(w, m->time, 9);
    if (is_text(c)) {
        if (!var) return OMDP_OPRA_E_VAR_OUTSIDE;
        w_bytes(w, var, m->var_len);
        return 0;
    }
    if (c == 'Y') {
        uint64_t need = (uint64_t)m->y_count * sizeof(omdp_opra_y_entry_t);
        if (!var || m->var_len < need) return OMDP_OPRA_E_VAR_OUTSIDE;
        w_num(w, m->y_count, 2);
        for (uint32_t e = 0; e < m->y_count; e++) {
            omdp_opra_y_entry_t en;
            memcpy(&en, var + e * sizeof en, sizeof en);
            w_bytes(w, en.symbol, en.symbol_len < 4 ? en.symbol_len : 4);
            if (m->msg_type == 'F' || m->msg_type == 'C') {
                w_num(w, en.decimals, 2);
                w_num(w, en.spot, 8);
            } else {
                w_bytes(w, en.value, en.value_len < 8 ? en.value_len : 8);
                if (m->msg_type == 'I') w_bytes(w, en.offer, en.offer_len < 8 ? en.offer_len : 8);
            }
        }
        return 0;
    }
    w_bytes(w, m->root, root_len(m));
    w_char(w, m->month_code);
    w_num(w, m->expiry_day, 2);
    w_num(w, m->expiry_year, 2);
    w_char(w, m->strike_den);
    w_num(w, m->strike, 6);
    w_char(w, m->strike_code);
    switch (c) {
    case 'k':
        w_char(w, m->premium_den);
        w_num(w, m->bid, 8);
        w_num(w, m->bid_size, 5);
        w_num(w, m->offer, 8);
        w_num(w, m->offer_size, 5);
        w_char(w, m->session);
        w_char(w, m->bbo_ind);
        if (omdp_opra_bbo_kind[m->bbo_ind] & 1) {
            w_char(w, m->best_bid_part);
            w_char(w, m->best_bid_den);
            w_num(w, m->best_bid, 8);
            w_num(w, m->best_bid_size, 5);
        }
        if (omdp_opra_bbo_kind[m->bbo_ind] & 2) {
            w_char(w, m->best_offer_part);
            w_char(w, m->best_offer_den);
            w_num(w, m->best_offer, 8);
            w_num(w, m->best_offer_size, 5);
        }
        break;
    case 'a':
        w_num(w, m->volume, 6);
        w_char(w, m->premium_den);
        w_num(w, m->premium, 8);
        w_char(w, m->session);
        break;
    case 'd':
        w_num(w, m->open_interest, 7);
        break;
    default: /* 'f' */
        w_num(w, m->volume, 6);
        w_num(w, m->open_interest, 7);
        w_char(w, m->premium_den);
        w_num(w, m->open, 8);
        w_num(w, m->high, 8);
        w_num(w, m->low, 8);
        w_num(w, m->last, 8);
        w_char(w, m->net_change_ind);
        w_num(w, m->net_change, 8);
        w_char(w, m->underlying_den);
        w_num(w, m->underlying_raw, 11);
        w_num(w, m->bid, 8);
        w_num(w, m->offer, 8);
        break;
    }
    return 0;
}

/* A price as a decimal number with its denominator code's places ("9.10") into buf (32
 * bytes); unknown codes give the raw integer followed by '?'. */
static const char *fmt_price(char *buf, uint8_t den, uint64_t v) {
    int64_t mult = omdp_opra_den_mult[den];
    int places = 0;
    for (int64_t x = mult; x && x < OMDP_PRICE_SCALE; x *= 10) places++;
    uint64_t p10 = 1;
    for (int i = 0; i < places; i++) p10 *= 10;
    if (!mult) snprintf(buf, 32, "%llu?", (unsigned long long)v);
    else if (places == 0) snprintf(buf, 32, "%llu", (unsigned long long)v);
    else snprintf(buf, 32, "%llu.%0*llu", (unsigned long long)(v / p10), places, (unsigned long long)(v % p10));
    return buf;
}

static void w_price(writer_t *w, uint8_t den, uint64_t v) {
    char buf[32];
    w_fmt(w, "%s", fmt_price(buf, den, v));
}

static void w_text(writer_t *w, const uint8_t *s, uint32_t len) {
    w_char(w, '"');
    w_bytes(w, s, len);
    w_char(w, '"');
}

/* A signed OBI price (i32 bits, or the i64 of an index value) with its code. */
static void w_signed_price(writer_t *w, uint8_t den, int64_t v) {
    if (v < 0) w_char(w, '-');
    w_price(w, den, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

static int render_table(writer_t *w, const omdp_opra_msg_t *m, const uint8_t *side, uint64_t side_len) {
    const uint8_t *var = var_part(m, side, side_len);
    uint8_t c = m->category;
    /* records decoded from OBI (opra_obi.h): 'R' is a series, 'Y' one index value */
    int obi = (m->wire & OMDP_OBI_WIRE_OBI) != 0;
    if (!is_series(c) && !is_text(c) && c != 'Y' && !(obi && c == 'R')) {
        if (!var) return OMDP_OPRA_E_VAR_OUTSIDE;
        w_fmt(w, "%c default ", c);
        w_text(w, var, m->var_len);
        return 0;
    }
    uint32_t t = m->time;
    w_fmt(w, "%c %10llu %02u:%02u:%02u.%03u %c ", c, (unsigned long long)m->msg_seq, t / 10000000u,
          t / 100000u % 100u, t / 1000u % 100u, t % 1000u, m->participant);
    if (is_text(c)) {
        if (!var) return OMDP_OPRA_E_VAR_OUTSIDE;
        w_fmt(w, "type %c ", m->msg_type);
        w_text(w, var, m->var_len);
        return 0;
    }
    if (c == 'Y' && obi) {
        w_fmt(w, "type '%c' ", m->msg_type);
        w_bytes(w, m->root, root_len(m));
        if (m->msg_type == 'I') {
            w_fmt(w, " bid ");
            w_signed_price(w, m->underlying_den, (int32_t)m->bid);
            w_fmt(w, " offer ");
            w_signed_price(w, m->underlying_den, (int32_t)m->offer);
        } else {
            w_fmt(w, " value ");
            w_signed_price(w, m->underlying_den, (int64_t)m->underlying_raw);
        }
        return 0;
    }
    if (c == 'Y') {
        uint64_t need = (uint64_t)m->y_count * sizeof(omdp_opra_y_entry_t);
        if (!var || m->var_len < need) return OMDP_OPRA_E_VAR_OUTSIDE;
        w_fmt(w, "type '%c' %u underlying values:", m->msg_type, m->y_count);
        for (uint32_t e = 0; e < m->y_count; e++) {
            omdp_opra_y_entry_t en;
            memcpy(&en, var + e * sizeof en, sizeof en);
            w_char(w, ' ');
            w_bytes(w, en.symbol, en.symbol_len < 4 ? en.symbol_len : 4);
            w_char(w, '=');
            if (m->msg_type == 'F' || m->msg_type == 'C') {
                w_fmt(w, "%u/1e%u", en.spot, en.decimals);
            } else {
                w_bytes(w, en.value, en.value_len < 8 ? en.value_len : 8);
                if (m->msg_type == 'I') {
                    w_char(w, '/');
                    w_bytes(w, en.offer, en.offer_len < 8 ? en.offer_len : 8);
                }
            }
        }
        return 0;
    }
    char root[OMDP_OPRA_ROOT_MAX + 1] = {0};
    memcpy(root, m->root, root_len(m));
    for (unsigned i = 0; i < root_len(m); i++)
        if (root[i] == 0) root[i] = ' ';
    w_fmt(w, "%-6s ", root);
    if (m->expiry) w_fmt(w, "%04u-%02u-%02u ", m->expiry / 10000u, m->expiry / 100u % 100u, m->expiry % 100u);
    else w_fmt(w, "%c%02u%02u      ", m->month_code, m->expiry_day, m->expiry_year);
    char pb[32], pb2[32];
    w_fmt(w, "%10s %c   ", fmt_price(pb, m->strike_den, m->strike), m->put_call ? m->put_call : '-');
    switch (c) {
    case 'k':
        w_fmt(w, "%10s x %-6u / %10s x %-6u %c", fmt_price(pb, m->premium_den, m->bid), m->bid_size,
              fmt_price(pb2, m->premium_den, m->offer), m->offer_size, m->bbo_ind);
        if (omdp_opra_bbo_kind[m->bbo_ind] & 1) {
            w_fmt(w, " best bid %c ", m->best_bid_part);
            w_price(w, m->best_bid_den, m->best_bid);
            w_fmt(w, " x %u", m->best_bid_size);
        }
        if (omdp_opra_bbo_kind[m->bbo_ind] & 2) {
            w_fmt(w, " best offer %c ", m->best_offer_part);
            w_price(w, m->best_offer_den, m->best_offer);
            w_fmt(w, " x %u", m->best_offer_size);
        }
        break;
    case 'a':
        w_fmt(w, "sale %u @ ", m->volume);
        w_price(w, m->premium_den, m->premium);
        w_fmt(w, " condition '%c'", m->msg_type);
        break;
    case 'd':
        w_fmt(w, "open interest %u", m->open_interest);
        break;
    case 'R':
        w_fmt(w, "series on line %u", m->volume);
        break;
    default: /* 'f' */
        w_fmt(w, "volume %u open interest %u open ", m->volume, m->open_interest);
        w_price(w, m->premium_den, m->open);
        w_fmt(w, " high ");
        w_price(w, m->premium_den, m->high);
        w_fmt(w, " low ");
        w_price(w, m->premium_den, m->low);
        w_fmt(w, " last ");
        w_price(w, m->premium_den, m->last);
        w_fmt(w, " change %c", m->net_change_ind);
        w_price(w, m->premium_den, m->net_change);
        w_fmt(w, " underlying ");
        if (obi)
            w_signed_price(w, m->underlying_den, (int64_t)m->underlying_raw);
        else
            w_price(w, m->underlying_den, m->underlying_raw);
        w_fmt(w, " bid ");
        w_price(w, m->premium_den, m->bid);
        w_fmt(w, " offer ");
        w_price(w, m->premium_den, m->offer);
        break;
    }
    return 0;
}

int64_t omdp_opra_render_ascii(const omdp_opra_msg_t *msg, const uint8_t *side, uint64_t side_len,
                               char *out, uint64_t cap) {
    writer_t w = {out, cap, 0, 0};
    int rc = render_ascii(&w, msg, side, side_len);
    if (rc < 0) return rc;
    return w.overflow ? OMDP_OPRA_E_CAPACITY : (int64_t)w.n;
}

int64_t omdp_opra_render_batch(const omdp_opra_msg_t *msgs, uint64_t n,
                               const uint8_t *side, uint64_t side_len, int style,
                               char *out, uint64_t cap, uint64_t *line_end) {
    writer_t w = {out, cap, 0, 0};
    for (uint64_t i = 0; i < n; i++) {
        int rc = style == OMDP_OPRA_RENDER_TABLE ? render_table(&w, &msgs[i], side, side_len)
                                                 : render_ascii(&w, &msgs[i], side, side_len);
        if (rc < 0) return rc;
        w_char(&w, '\n');
        if (w.overflow) return OMDP_OPRA_E_CAPACITY;
        if (line_end) line_end[i] = w.n;
    }
    return (int64_t)w.n;
}
