/* Synthetic OBI feed helpers: the per-series BBO over every exchange's quotes, and one
 * line's records cut into encoded blocks (obi_synth.h). */
#include <stdint.h>
#include <string.h>

#include "omdp/obi_synth.h"

/* bid a ranks above bid b: higher price, then larger size, then lower exchange index */
static inline int bid_better(uint32_t pa, uint32_t sa, uint32_t ea, uint32_t pb, uint32_t sb, uint32_t eb)
{
    if (pa != pb)
        return pa > pb;
    if (sa != sb)
        return sa > sb;
    return ea < eb;
}

static inline int offer_better(uint32_t pa, uint32_t sa, uint32_t ea, uint32_t pb, uint32_t sb, uint32_t eb)
{
    if (pa != pb)
        return pa < pb;
    if (sa != sb)
        return sa > sb;
    return ea < eb;
}

typedef struct {
    uint32_t exch, price, size; /* exch OMDP_OBI_SYNTH_NO_EXCH: none */
} best_t;

/* Best bid and offer of one series' row, leaving out exchange `skip` (n_exch: none). */
static void best_of(const uint32_t *bid, const uint32_t *bsz, const uint32_t *offer, const uint32_t *osz,
                    uint32_t n_exch, uint32_t skip, best_t *bb, best_t *bo)
{
    bb->exch = bo->exch = OMDP_OBI_SYNTH_NO_EXCH;
    bb->price = bb->size = bo->price = bo->size = 0;
    for (uint32_t e = 0; e < n_exch; e++) {
        if (e == skip)
            continue;
        if (bid[e] && (bb->exch == OMDP_OBI_SYNTH_NO_EXCH || bid_better(bid[e], bsz[e], e, bb->price, bb->size, bb->exch))) {
            bb->exch = e;
            bb->price = bid[e];
            bb->size = bsz[e];
        }
        if (offer[e] && (bo->exch == OMDP_OBI_SYNTH_NO_EXCH || offer_better(offer[e], osz[e], e, bo->price, bo->size, bo->exch))) {
            bo->exch = e;
            bo->price = offer[e];
            bo->size = osz[e];
        }
    }
}

static inline int same(const best_t *a, const best_t *b)
{
    return a->exch == b->exch && a->price == b->price && a->size == b->size;
}

int64_t omdp_obi_synth_quotes(uint64_t n_series, uint32_t n_exch, uint32_t *bid, uint32_t *bid_size,
                              uint32_t *offer, uint32_t *offer_size, uint64_t n, const uint32_t *series,
                              const uint8_t *exch, uint32_t *q_bid, uint32_t *q_bid_size, uint32_t *q_offer,
                              uint32_t *q_offer_size, uint8_t *anomaly, const uint32_t *tick, uint8_t *bbo_ind,
                              uint8_t *bb_exch, uint32_t *bb_price, uint32_t *bb_size, uint8_t *bo_exch,
                              uint32_t *bo_price, uint32_t *bo_size, uint8_t *nbbo_state)
{
    if (n_exch == 0 || n_exch > OMDP_OBI_SYNTH_MAX_EXCH)
        return -1;
    int64_t pulled = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t s = series[i];
        uint32_t e = exch[i];
        if (s >= n_series || e >= n_exch)
            return -1;
        uint64_t row = s * n_exch;
        uint32_t *rb = bid + row, *rbs = bid_size + row, *ro = offer + row, *ros = offer_size + row;
        best_t bb0, bo0, ob, oo, bb1, bo1;
        best_of(rb, rbs, ro, ros, n_exch, n_exch, &bb0, &bo0);
        best_of(rb, rbs, ro, ros, n_exch, e, &ob, &oo); /* the other exchanges */
        uint32_t t = tick[i] ? tick[i] : 1;
        uint32_t b = q_bid[i], bs = q_bid_size[i], o = q_offer[i], os = q_offer_size[i];
        if (anomaly[i] && oo.exch != OMDP_OBI_SYNTH_NO_EXCH && oo.price > t) {
            b = anomaly[i] == OMDP_OBI_SYNTH_CROSSED ? oo.price + t : oo.price;
            if (!bs)
                bs = 1;
            if (o && o <= b)
                o = b + t;
            if (!o)
                os = 0;
        } else {
            anomaly[i] = 0;
            int moved = 0;
            if (b && oo.exch != OMDP_OBI_SYNTH_NO_EXCH && b >= oo.price) {
                b = oo.price > t ? oo.price - t : 0;
                moved = 1;
            }
            if (o && ob.exch != OMDP_OBI_SYNTH_NO_EXCH && o <= ob.price) {
                o = ob.price + t;
                moved = 1;
            }
            if (b && o && b >= o) /* its own quote, after the pull-backs */
                b = o > t ? o - t : 0;
            if (!b)
                bs = 0;
            pulled += moved;
        }
        rb[e] = b;
        rbs[e] = bs;
        ro[e] = o;
        ros[e] = o ? os : 0;
        q_bid[i] = b;
        q_bid_size[i] = rbs[e];
        q_offer[i] = o;
        q_offer_size[i] = ros[e];
        best_of(rb, rbs, ro, ros, n_exch, n_exch, &bb1, &bo1);
        /* spec 7.6: best-bid state 0 unchanged, 1 this quote, 2 none, 3 appendage;
         * best-offer state 0 unchanged, 1 this quote, 2 appendage, 3 none */
        uint32_t bst = same(&bb0, &bb1) ? 0 : bb1.exch == OMDP_OBI_SYNTH_NO_EXCH ? 2 : bb1.exch == e ? 1 : 3;
        uint32_t ost = same(&bo0, &bo1) ? 0 : bo1.exch == OMDP_OBI_SYNTH_NO_EXCH ? 3 : bo1.exch == e ? 1 : 2;
        bbo_ind[i] = (uint8_t)('A' + 4 * bst + ost);
        bb_exch[i] = (uint8_t)bb1.exch;
        bb_price[i] = bb1.price;
        bb_size[i] = bb1.size;
        bo_exch[i] = (uint8_t)bo1.exch;
        bo_price[i] = bo1.price;
        bo_size[i] = bo1.size;
        uint8_t st = OMDP_OBI_SYNTH_NORMAL;
        if (bb1.exch != OMDP_OBI_SYNTH_NO_EXCH && bo1.exch != OMDP_OBI_SYNTH_NO_EXCH)
            st = bb1.price == bo1.price ? OMDP_OBI_SYNTH_NBBO_LOCKED
                 : bb1.price > bo1.price ? OMDP_OBI_SYNTH_NBBO_CROSSED : OMDP_OBI_SYNTH_NORMAL;
        nbbo_state[i] = st;
    }
    return pulled;
}

static inline int alone(const omdp_opra_msg_t *m)
{
    return m->category == 'C' || m->category == 'H';
}

int64_t omdp_obi_synth_encode_stream(const omdp_opra_msg_t *msgs, uint64_t n, const uint8_t *side, uint64_t side_len,
                                     const int64_t *ts_ns, const uint32_t *want, uint64_t n_want, uint8_t *out,
                                     uint64_t out_cap, uint64_t *offsets, uint32_t *lengths, uint64_t *first,
                                     uint64_t blocks_cap, omdp_obi_error_t *err)
{
    uint64_t nb = 0, pos = 0, i = 0;
    while (i < n) {
        uint64_t limit = n_want ? want[nb % n_want] : 1;
        if (limit < 1)
            limit = 1;
        if (limit > OMDP_OBI_MAX_MESSAGES)
            limit = OMDP_OBI_MAX_MESSAGES;
        uint64_t j = i;
        uint32_t size = OMDP_OBI_HEADER_SIZE;
        if (alone(&msgs[i])) {
            j = i + 1;
        } else {
            while (j < n && j - i < limit && !alone(&msgs[j])) {
                int len = omdp_obi_message_length(&msgs[j]);
                if (len < 0) {
                    if (err) {
                        err->packet_index = j;
                        err->code = len;
                        err->offset = 0;
                        err->message_index = (int32_t)(j - i);
                        err->category = msgs[j].category;
                    }
                    return len;
                }
                if (size + (uint32_t)len > OMDP_OBI_MAX_BLOCK)
                    break;
                size += (uint32_t)len;
                j++;
            }
            if (j == i) /* a record longer than a block: let the encoder name it */
                j = i + 1;
        }
        if (nb >= blocks_cap)
            return OMDP_OBI_E_CAPACITY;
        int64_t last_ts = ts_ns[j - 1];
        omdp_obi_block_t hdr;
        memset(&hdr, 0, sizeof hdr);
        hdr.block_seq = (uint32_t)msgs[i].msg_seq;
        hdr.ts_sec = (uint32_t)(last_ts / 1000000000LL);
        hdr.ts_nsec = (uint32_t)(last_ts % 1000000000LL);
        hdr.feed = 'O';
        hdr.retrans = ' ';
        hdr.session = 0;
        if (pos > out_cap)
            return OMDP_OBI_E_CAPACITY;
        int64_t len = omdp_obi_encode_block(&hdr, msgs + i, (uint32_t)(j - i), side, side_len, out + pos, out_cap - pos, err);
        if (len < 0) {
            if (err)
                err->packet_index = i + (uint64_t)(err->message_index > 0 ? err->message_index : 0);
            return len;
        }
        offsets[nb] = pos;
        lengths[nb] = (uint32_t)len;
        first[nb] = i;
        pos += (uint64_t)len;
        nb++;
        i = j;
    }
    return (int64_t)nb;
}
