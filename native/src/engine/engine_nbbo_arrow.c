/* NBBO change records -> the replay's NBBO table columns (engine_nbbo_arrow.h). */
#include <stddef.h>

#include "omdp/engine.h"
#include "omdp/engine_nbbo_arrow.h"

static int all_set(const omdp_nbbo_arrow_cols_t *c)
{
    return c->ts_ns && c->line && c->msg_seq && c->quote_part && c->underlying_id && c->slot && c->expiry &&
           c->strike_px && c->put_call && c->bid_px && c->bid_size && c->bid_part && c->offer_px &&
           c->offer_size && c->offer_part && c->quote_valid && c->put_call_valid && c->bid_valid && c->offer_valid;
}

int omdp_engine_nbbo_arrow(const omdp_engine_nbbo_t *changes, uint64_t n, const omdp_nbbo_arrow_cols_t *c)
{
    if (!c || (n && !changes) || !all_set(c))
        return OMDP_ENGINE_EINVAL;
    /* eight rows at a time, so that each bitmap byte is written whole, once */
    for (uint64_t base = 0; base < n; base += 8) {
        const uint64_t end = n - base < 8 ? n : base + 8;
        uint8_t qv = 0, pv = 0, bv = 0, ov = 0;
        for (uint64_t r = base; r < end; r++) {
            const omdp_engine_nbbo_t *x = &changes[r];
            const unsigned bit = (unsigned)(r - base);
            const int bid = x->bid_part != 0, offer = x->offer_part != 0;
            c->ts_ns[r] = x->ts_ns;
            c->line[r] = x->line;
            c->msg_seq[r] = (int64_t)x->msg_seq;
            c->quote_part[r] = x->quote_part;
            c->underlying_id[r] = x->underlying_id;
            c->slot[r] = x->slot;
            c->expiry[r] = x->expiry;
            c->strike_px[r] = x->strike_px;
            c->put_call[r] = x->put_call;
            c->bid_px[r] = bid ? x->bid_px : 0;
            c->bid_size[r] = bid ? (int64_t)x->bid_size : 0;
            c->bid_part[r] = x->bid_part;
            c->offer_px[r] = offer ? x->offer_px : 0;
            c->offer_size[r] = offer ? (int64_t)x->offer_size : 0;
            c->offer_part[r] = x->offer_part;
            qv |= (uint8_t)((x->quote_part != 0) << bit);
            pv |= (uint8_t)((x->put_call != 0) << bit);
            bv |= (uint8_t)(bid << bit);
            ov |= (uint8_t)(offer << bit);
        }
        c->quote_valid[base / 8] = qv;
        c->put_call_valid[base / 8] = pv;
        c->bid_valid[base / 8] = bv;
        c->offer_valid[base / 8] = ov;
    }
    return 0;
}
