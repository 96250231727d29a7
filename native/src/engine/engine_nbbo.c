/* The engine's NBBO-change log (engine_nbbo.h): set, append (from the hot path), take. */
#include <string.h>

#include "engine_internal.h"
#include "omdp/engine_nbbo.h"

_Static_assert(sizeof(omdp_engine_nbbo_t) == 80, "NBBO change record size");

int omdp_engine_nbbo_log(omdp_engine_t *e, omdp_engine_nbbo_t *buf, uint32_t cap)
{
    if (!e || (buf && cap == 0))
        return OMDP_ENGINE_EINVAL;
    e->nbbo_log = buf;
    e->nbbo_cap = buf ? cap : 0;
    e->nbbo_n = 0;
    e->nbbo_dropped = 0;
    return 0;
}

uint32_t omdp_engine_nbbo_take(omdp_engine_t *e, uint64_t *dropped)
{
    if (!e)
        return 0;
    uint32_t n = e->nbbo_n;
    e->nbbo_n = 0;
    if (dropped)
        *dropped = e->nbbo_dropped;
    return n;
}

void eng_nbbo_append(struct omdp_engine *e, const omdp_opra_msg_t *m, uint32_t slot, uint8_t quote_ex, int64_t bid,
                     uint32_t bid_sz, uint8_t bid_ex, int64_t ask, uint32_t ask_sz, uint8_t ask_ex)
{
    if (e->nbbo_n >= e->nbbo_cap) {
        e->nbbo_dropped++;
        return;
    }
    omdp_engine_nbbo_t *o = &e->nbbo_log[e->nbbo_n++];
    memset(o, 0, sizeof *o);
    o->ts_ns = m->hdr.stamps.fh_in;
    if (bid != ENG_NONE_BID) {
        o->bid_px = bid;
        o->bid_size = bid_sz;
        o->bid_part = eng_exch_code_of(bid_ex);
    }
    if (ask != ENG_NONE_ASK) {
        o->offer_px = ask;
        o->offer_size = ask_sz;
        o->offer_part = eng_exch_code_of(ask_ex);
    }
    o->strike_px = m->strike_px;
    o->msg_seq = m->msg_seq;
    o->expiry = m->expiry;
    o->underlying_id = m->underlying_id;
    o->slot = slot;
    o->line = m->line;
    o->quote_part = eng_exch_code_of(quote_ex);
    o->put_call = m->put_call;
    o->root_len = m->root_len <= OMDP_OPRA_ROOT_MAX ? m->root_len : OMDP_OPRA_ROOT_MAX;
    memcpy(o->root, m->root, sizeof o->root);
}
