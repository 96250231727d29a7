/* OPRA packets (FAST V2) and blocks (OBI v6) -> the tick table's columns in Arrow's layout
 * (omdp/opra_arrow.h): each format's own decoder fills the one record, and one loop writes
 * the records' rows whichever format they came from. */
#include <stdlib.h>
#include <string.h>

#include "omdp/opra_arrow.h"

/* Slots whose fields bit says a tick column holds a value (spec section 4). */
#define SLOT_TIME 5
#define SLOT_STRIKE 11
#define SLOT_VOLUME 13
#define SLOT_OPEN_INTEREST 14
#define SLOT_PREMIUM 16
#define SLOT_BID 25
#define SLOT_BID_SIZE 26
#define SLOT_OFFER 27
#define SLOT_OFFER_SIZE 28

#define SCRATCH_SIDE_MIN (1u << 20)
#define SCRATCH_SIDE_MAX (1u << 28)

static inline void set_bit(uint8_t *bits, uint64_t r, int valid)
{
    uint8_t m = (uint8_t)(1u << (r & 7));
    if (valid)
        bits[r >> 3] |= m;
    else
        bits[r >> 3] &= (uint8_t)~m;
}

/* One character code as a nullable one-character string (Latin-1 code point in UTF-8), and/or
 * as its code (the dictionary index): each output only where the caller asked for it. */
static inline void put_char(const omdp_opra_arrow_cols_t *c, int k, uint64_t r, uint8_t code)
{
    set_bit(c->chr_valid[k], r, code != 0);
    if (c->chr_code[k])
        c->chr_code[k][r] = code;
    if (!c->chr_data[k])
        return;
    int32_t o = c->chr_off[k][r];
    if (code == 0) {
    } else if (code < 0x80) {
        c->chr_data[k][o++] = code;
    } else {
        c->chr_data[k][o++] = (uint8_t)(0xC0 | (code >> 6));
        c->chr_data[k][o++] = (uint8_t)(0x80 | (code & 0x3F));
    }
    c->chr_off[k][r + 1] = o;
}

/* Append root m's UTF-8 form (rlen bytes of slot 6) as string number i of root_off/root_data. */
static inline void put_root(const omdp_opra_arrow_cols_t *c, uint64_t i, const omdp_opra_msg_t *m, int rlen)
{
    int32_t ro = c->root_off[i];
    for (int b = 0; b < rlen; b++) {
        uint8_t ch = (uint8_t)m->root[b];
        if (ch < 0x80) {
            c->root_data[ro++] = ch;
        } else { /* U+FFFD */
            c->root_data[ro++] = 0xEF;
            c->root_data[ro++] = 0xBF;
            c->root_data[ro++] = 0xBD;
        }
    }
    c->root_off[i + 1] = ro;
}

static inline uint64_t root_key(const omdp_opra_msg_t *m, int *len)
{
    int n = OMDP_OPRA_ROOT_MAX;
    while (n > 0 && (m->root[n - 1] == 0 || m->root[n - 1] == ' '))
        n--;
    /* The field's six bytes loaded into registers (4 + 2) and masked to the root's n: a copy
     * into a stack word would be narrow stores that the word's 8-byte read then waits on (a
     * store-forwarding stall, half of this function's time). */
    _Static_assert(OMDP_OPRA_ROOT_MAX == 6, "root key packing assumes 6 bytes");
    uint32_t lo;
    uint16_t hi;
    memcpy(&lo, m->root, sizeof lo);
    memcpy(&hi, m->root + sizeof lo, sizeof hi);
    uint64_t k = (uint64_t)lo | ((uint64_t)hi << 32);
    k &= n ? (~0ULL >> (64 - 8 * n)) : 0;
    *len = n;
    return k | ((uint64_t)(n + 1) << 56); /* never 0, even for an empty root */
}

static inline uint32_t root_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

typedef struct root_slot {
    uint64_t key;
    int32_t id;
} root_slot_t;

/* Double the table; returns the new mask, or 0 (table unchanged) when memory is short. */
static uint32_t grow_roots(root_slot_t **table, uint32_t mask)
{
    uint32_t nmask = mask * 2 + 1;
    root_slot_t *t = calloc((size_t)nmask + 1, sizeof *t);
    if (!t)
        return 0;
    for (uint32_t s = 0; s <= mask; s++) {
        if ((*table)[s].key == 0)
            continue;
        uint32_t h = root_hash((*table)[s].key) & nmask;
        while (t[h].key != 0)
            h = (h + 1) & nmask;
        t[h] = (*table)[s];
    }
    free(*table);
    *table = t;
    return nmask;
}

static inline void put_nullable64(int64_t *col, uint8_t *valid, uint64_t r, int64_t v, int ok)
{
    col[r] = ok ? v : 0;
    set_bit(valid, r, ok);
}

/* A FAST V2 packet's message count: its header's three ASCII digits (bytes 12..14), 0 when
 * they are not digits (the packet cannot decode). */
static uint64_t fast_header_count(const uint8_t *p)
{
    const uint8_t *d = p + 12;
    if (d[0] < '0' || d[0] > '9' || d[1] < '0' || d[1] > '9' || d[2] < '0' || d[2] > '9')
        return 0;
    return (uint64_t)(d[0] - '0') * 100 + (uint64_t)(d[1] - '0') * 10 + (uint64_t)(d[2] - '0');
}

/* An OBI block's message count (byte 10, omdp_obi_header_peek). */
static uint64_t obi_header_count(const uint8_t *p)
{
    uint64_t seq;
    uint32_t count;
    omdp_obi_header_peek(p, OMDP_OBI_HEADER_SIZE, &seq, &count);
    return count;
}

/* The sum of the packets' header counts, reading only packets whose header (header_len
 * bytes) is whole and inside buf_len. */
static uint64_t row_bound(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets, const uint32_t *lengths,
                          uint64_t npkts, uint32_t header_len, uint64_t (*count)(const uint8_t *))
{
    uint64_t rows = 0;
    if (!buf || !offsets || !lengths)
        return 0;
    for (uint64_t i = 0; i < npkts; i++) {
        uint64_t o = offsets[i];
        if (lengths[i] < header_len || o > buf_len || buf_len - o < header_len)
            continue;
        rows += count(buf + o);
    }
    return rows;
}

uint64_t omdp_opra_arrow_row_bound(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                   const uint32_t *lengths, uint64_t npkts)
{
    return row_bound(buf, buf_len, offsets, lengths, npkts, 15, fast_header_count);
}

uint64_t omdp_obi_arrow_row_bound(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                  const uint32_t *lengths, uint64_t npkts)
{
    return row_bound(buf, buf_len, offsets, lengths, npkts, OMDP_OBI_HEADER_SIZE, obi_header_count);
}

/* The wire format of one call's packets, and where their errors and counts go: the one
 * place the two formats differ on the way to the columns. */
typedef struct arrow_feed {
    int obi;
    omdp_opra_error_t *fast_errs;
    omdp_opra_counters_t *fast_counters;
    omdp_obi_error_t *obi_errs;
    omdp_obi_counters_t *obi_counters;
    uint32_t err_cap;
} arrow_feed_t;

/* What one call counted, added to the format's counters at its end (a packet the call
 * stopped at is not counted: the caller decodes it again). */
typedef struct arrow_tally {
    uint64_t good, bad, nerr, empty, flagged;
} arrow_tally_t;

enum { ARROW_SIDE_FULL = 1, ARROW_BAD = 2 };

/* Decode packet pkt (len bytes) into msgs with the format's own decoder. Returns the
 * record count; -ARROW_SIDE_FULL when the side buffer was too small (nothing counted); or
 * -ARROW_BAD for a malformed packet, whose error is stored (the first err_cap) and counted
 * by code. */
static int decode_one(const arrow_feed_t *f, const uint8_t *pkt, uint32_t len, uint64_t index,
                      omdp_opra_msg_t *msgs, uint8_t *side, uint32_t side_cap, arrow_tally_t *t)
{
    uint32_t side_used = 0;
    int rc;
    if (f->obi) {
        omdp_obi_block_t info;
        omdp_obi_error_t e;
        /* the live path's reading of spec Q1: a block whose checksum does not match is dropped */
        rc = omdp_obi_decode_block(pkt, len, index, 0, msgs, OMDP_OBI_MAX_MESSAGES, side, side_cap, &side_used,
                                   &info, &e, NULL);
        if (rc == OMDP_OBI_E_CAPACITY)
            return -ARROW_SIDE_FULL;
        if (rc >= 0) {
            t->empty += (info.status & OMDP_OBI_BLK_EMPTY) != 0;
            t->flagged += (info.status & OMDP_OBI_BLK_FEED_FLAGGED) != 0;
            return rc;
        }
        if (t->nerr < f->err_cap)
            f->obi_errs[t->nerr] = e;
        if (f->obi_counters)
            f->obi_counters->errors[-rc]++;
    } else {
        omdp_opra_error_t e;
        rc = omdp_opra_decode_packet(pkt, len, index, msgs, OMDP_OPRA_MAX_MESSAGES, side, side_cap, &side_used, &e);
        if (rc == OMDP_OPRA_E_CAPACITY)
            return -ARROW_SIDE_FULL;
        if (rc >= 0)
            return rc;
        if (t->nerr < f->err_cap)
            f->fast_errs[t->nerr] = e;
        if (f->fast_counters)
            f->fast_counters->errors[-rc]++;
    }
    t->nerr++;
    t->bad++;
    return -ARROW_BAD;
}

static void count_call(const arrow_feed_t *f, const arrow_tally_t *t, uint64_t messages)
{
    if (f->fast_counters) {
        f->fast_counters->packets += t->good + t->bad;
        f->fast_counters->packets_ok += t->good;
        f->fast_counters->packets_bad += t->bad;
        f->fast_counters->messages += messages;
    }
    if (f->obi_counters) {
        f->obi_counters->packets += t->good + t->bad;
        f->obi_counters->packets_ok += t->good;
        f->obi_counters->packets_bad += t->bad;
        f->obi_counters->messages += messages;
        f->obi_counters->empty += t->empty;
        f->obi_counters->feed_flagged += t->flagged;
    }
}

static int decode_arrow(const arrow_feed_t *feed, const uint8_t *buf, const uint64_t *offsets,
                        const uint32_t *lengths, const int64_t *pkt_ts_ns, uint64_t npkts,
                        uint64_t first_packet_index, const omdp_opra_arrow_cols_t *c,
                        omdp_opra_arrow_result_t *res)
{
    uint64_t cap = c->row_cap;
    if (cap > INT32_MAX / OMDP_ARROW_ROOT_BYTES)
        cap = INT32_MAX / OMDP_ARROW_ROOT_BYTES; /* int32 offsets */
    /* Distinct roots of this call: open addressing on the packed root (key 0 = empty slot;
     * a key holds the length + 1 in its top byte, so no root packs to 0). Kept at most half
     * full, it stays small (an OPRA day has a few thousand roots) and in cache. */
    uint32_t tmask = 4095;
    root_slot_t *table = calloc((size_t)tmask + 1, sizeof *table);
    omdp_opra_msg_t *msgs = malloc(sizeof(omdp_opra_msg_t) * OMDP_OPRA_MAX_MESSAGES);
    uint32_t side_cap = SCRATCH_SIDE_MIN;
    uint8_t *side = malloc(side_cap);
    int status = 0;
    arrow_tally_t t = {0};
    /* rows: in packet order (no rest_row) or the quotes; rest: the other messages */
    uint64_t rows = 0, rest = 0, roots = 0, i = 0;
    const uint64_t split = c->rest_row;
    int per_row_strings = !c->roots_only;
    for (int k = 0; k < OMDP_ARROW_CHAR_COLS; k++)
        per_row_strings |= c->chr_data[k] != NULL;
    if (!table || !msgs || !side || (split && (per_row_strings || split > cap))) {
        status = OMDP_OPRA_E_CAPACITY;
        goto out;
    }
    for (int k = 0; k < OMDP_ARROW_CHAR_COLS; k++)
        if (c->chr_data[k])
            c->chr_off[k][0] = 0;
    c->root_off[0] = 0;

    for (i = 0; i < npkts; i++) {
        const uint8_t *pkt = buf + offsets[i];
        uint32_t len = lengths[i];
        int rc;
        for (;;) {
            rc = decode_one(feed, pkt, len, first_packet_index + i, msgs, side, side_cap, &t);
            if (rc != -ARROW_SIDE_FULL || side_cap >= SCRATCH_SIDE_MAX)
                break;
            uint8_t *bigger = realloc(side, (size_t)side_cap * 4);
            if (!bigger)
                break;
            side = bigger;
            side_cap *= 4;
        }
        if (rc == -ARROW_SIDE_FULL) {
            status = OMDP_OPRA_E_CAPACITY;
            break;
        }
        if (rc < 0) {
            if (c->packet_rows)
                c->packet_rows[i] = 0;
            if (c->packet_seq)
                c->packet_seq[i] = -1;
            continue;
        }
        if (split ? rows + (uint64_t)rc > split || rest + (uint64_t)rc > cap - split
                  : rows + (uint64_t)rc > cap) {
            status = OMDP_OPRA_E_CAPACITY;
            break;
        }
        t.good++;
        if (c->packet_rows)
            c->packet_rows[i] = rc;
        if (c->packet_seq)
            c->packet_seq[i] = rc ? (int64_t)msgs[0].msg_seq : -1;
        const int64_t ts = pkt_ts_ns[i];
        for (int j = 0; j < rc; j++) {
            const omdp_opra_msg_t *m = &msgs[j];
            const int first_region = !split || m->category == 'k';
            const uint64_t r = first_region ? rows++ : split + rest++;
            const uint64_t f = m->fields;
            c->ts_ns[r] = ts;
            c->block_seq[r] = (int64_t)m->block_seq;
            c->msg_seq[r] = (int64_t)m->msg_seq;
            c->msg_index[r] = (int32_t)m->index;
            c->packet_messages[r] = rc;
            c->packet_bytes[r] = (int32_t)len;
            put_char(c, 0, r, m->category);
            put_char(c, 1, r, m->msg_type);
            put_char(c, 2, r, m->participant);
            put_char(c, 3, r, m->put_call);

            int rlen;
            uint64_t key = root_key(m, &rlen);
            if (!c->roots_only)
                put_root(c, r, m, rlen);
            uint32_t h = root_hash(key) & tmask;
            while (table[h].key != 0 && table[h].key != key)
                h = (h + 1) & tmask;
            int32_t id;
            if (table[h].key == key) {
                id = table[h].id;
            } else {
                table[h].key = key;
                table[h].id = (int32_t)roots;
                c->root_first_row[roots] = (uint32_t)r;
                if (c->root_rows)
                    c->root_rows[roots] = 0;
                if (c->roots_only)
                    put_root(c, roots, m, rlen);
                id = (int32_t)roots++;
                if (2 * roots > tmask) {
                    uint32_t nmask = grow_roots(&table, tmask);
                    if (!nmask) { /* no memory: the call's rows are not to be used */
                        status = OMDP_OPRA_E_CAPACITY;
                        goto out;
                    }
                    tmask = nmask;
                }
            }
            c->root_id[r] = id;
            if (c->root_rows && first_region)
                c->root_rows[id]++;

            c->expiry[r] = (int32_t)m->expiry;
            set_bit(c->expiry_valid, r, m->expiry != 0);
            put_nullable64(c->price[0], c->price_valid[0], r, m->strike_px,
                           ((f >> SLOT_STRIKE) & 1) && m->strike_px != OMDP_UNDEF_PRICE);
            put_nullable64(c->price[1], c->price_valid[1], r, m->bid_px,
                           ((f >> SLOT_BID) & 1) && m->bid_px != OMDP_UNDEF_PRICE);
            put_nullable64(c->price[2], c->price_valid[2], r, m->offer_px,
                           ((f >> SLOT_OFFER) & 1) && m->offer_px != OMDP_UNDEF_PRICE);
            put_nullable64(c->price[3], c->price_valid[3], r, m->premium_px,
                           ((f >> SLOT_PREMIUM) & 1) && m->premium_px != OMDP_UNDEF_PRICE);
            put_nullable64(c->qty[0], c->qty_valid[0], r, m->bid_size, (f >> SLOT_BID_SIZE) & 1);
            put_nullable64(c->qty[1], c->qty_valid[1], r, m->offer_size, (f >> SLOT_OFFER_SIZE) & 1);
            put_nullable64(c->qty[2], c->qty_valid[2], r, m->volume, (f >> SLOT_VOLUME) & 1);
            put_nullable64(c->qty[3], c->qty_valid[3], r, m->open_interest, (f >> SLOT_OPEN_INTEREST) & 1);
            int t_ok = (f >> SLOT_TIME) & 1;
            c->time[r] = t_ok ? (int32_t)m->time : 0;
            set_bit(c->time_valid, r, t_ok);
        }
    }
out:
    count_call(feed, &t, rows + rest);
    if (res) {
        res->packets_done = i;
        res->rows = rows + rest;
        res->rest_rows = rest;
        res->roots = roots;
        res->errors = t.nerr;
    }
    free(table);
    free(msgs);
    free(side);
    return status;
}

int omdp_opra_decode_arrow(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                           const int64_t *pkt_ts_ns, uint64_t npkts, uint64_t first_packet_index,
                           const omdp_opra_arrow_cols_t *cols,
                           omdp_opra_error_t *errs, uint32_t err_cap,
                           omdp_opra_counters_t *counters, omdp_opra_arrow_result_t *res)
{
    const arrow_feed_t feed = {.fast_errs = errs, .fast_counters = counters, .err_cap = errs ? err_cap : 0};
    return decode_arrow(&feed, buf, offsets, lengths, pkt_ts_ns, npkts, first_packet_index, cols, res);
}

int omdp_obi_decode_arrow(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                          const int64_t *pkt_ts_ns, uint64_t npkts, uint64_t first_packet_index,
                          const omdp_opra_arrow_cols_t *cols,
                          omdp_obi_error_t *errs, uint32_t err_cap,
                          omdp_obi_counters_t *counters, omdp_opra_arrow_result_t *res)
{
    const arrow_feed_t feed = {.obi = 1, .obi_errs = errs, .obi_counters = counters, .err_cap = errs ? err_cap : 0};
    return decode_arrow(&feed, buf, offsets, lengths, pkt_ts_ns, npkts, first_packet_index, cols, res);
}
