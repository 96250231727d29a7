/* OPRA FAST V2 packets -> the tick table's columns in Arrow's layout (omdp/opra_arrow.h). */
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

uint64_t omdp_opra_arrow_row_bound(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                   const uint32_t *lengths, uint64_t npkts)
{
    uint64_t rows = 0;
    if (!buf || !offsets || !lengths)
        return 0;
    for (uint64_t i = 0; i < npkts; i++) {
        uint64_t o = offsets[i];
        if (lengths[i] < 15 || o > buf_len || buf_len - o < 15)
            continue;
        const uint8_t *d = buf + o + 12;
        if (d[0] < '0' || d[0] > '9' || d[1] < '0' || d[1] > '9' || d[2] < '0' || d[2] > '9')
            continue;
        rows += (uint64_t)(d[0] - '0') * 100 + (uint64_t)(d[1] - '0') * 10 + (uint64_t)(d[2] - '0');
    }
    return rows;
}

int omdp_opra_decode_arrow(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                           const int64_t *pkt_ts_ns, uint64_t npkts, uint64_t first_packet_index,
                           const omdp_opra_arrow_cols_t *c,
                           omdp_opra_error_t *errs, uint32_t err_cap,
                           omdp_opra_counters_t *counters, omdp_opra_arrow_result_t *res)
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
    /* rows: in packet order (no rest_row) or the quotes; rest: the other messages */
    uint64_t rows = 0, rest = 0, roots = 0, nerr = 0, good = 0, bad = 0, i = 0;
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
        omdp_opra_error_t e;
        uint32_t side_used;
        int rc;
        for (;;) {
            side_used = 0;
            rc = omdp_opra_decode_packet(pkt, len, first_packet_index + i, msgs, OMDP_OPRA_MAX_MESSAGES,
                                         side, side_cap, &side_used, &e);
            if (rc != OMDP_OPRA_E_CAPACITY || side_cap >= SCRATCH_SIDE_MAX)
                break;
            uint8_t *bigger = realloc(side, (size_t)side_cap * 4);
            if (!bigger)
                break;
            side = bigger;
            side_cap *= 4;
        }
        if (rc == OMDP_OPRA_E_CAPACITY) {
            status = rc;
            break;
        }
        if (rc < 0) {
            if (nerr < err_cap)
                errs[nerr] = e;
            nerr++;
            bad++;
            if (counters)
                counters->errors[-rc]++;
            if (c->packet_rows)
                c->packet_rows[i] = 0;
            continue;
        }
        if (split ? rows + (uint64_t)rc > split || rest + (uint64_t)rc > cap - split
                  : rows + (uint64_t)rc > cap) {
            status = OMDP_OPRA_E_CAPACITY;
            break;
        }
        good++;
        if (c->packet_rows)
            c->packet_rows[i] = rc;
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
    if (counters) {
        counters->packets += good + bad;
        counters->packets_ok += good;
        counters->packets_bad += bad;
        counters->messages += rows + rest;
    }
    if (res) {
        res->packets_done = i;
        res->rows = rows + rest;
        res->rest_rows = rest;
        res->roots = roots;
        res->errors = nerr;
    }
    free(table);
    free(msgs);
    free(side);
    return status;
}
