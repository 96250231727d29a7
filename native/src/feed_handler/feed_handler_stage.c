/* The offline replay's staged records (feed_stage.h): OPRA record <-> compact form, with a
 * gather order, every index checked against the input's length. */
#include <stddef.h>
#include <string.h>

#include "omdp/feed_stage.h"
#include "omdp/record.h"

_Static_assert(sizeof(omdp_fh_staged_t) == 128, "omdp_fh_staged_t is 128 bytes");
_Static_assert(offsetof(omdp_fh_staged_t, root) == 121, "root at 121");

static inline void pack_one(const omdp_opra_msg_t *m, omdp_fh_staged_t *s)
{
    s->ts_ns = m->hdr.stamps.fh_in;
    s->block_seq = m->block_seq;
    s->msg_seq = m->msg_seq;
    s->strike_px = m->strike_px;
    s->bid_px = m->bid_px;
    s->offer_px = m->offer_px;
    s->premium_px = m->premium_px;
    s->best_bid_px = m->best_bid_px;
    s->best_offer_px = m->best_offer_px;
    s->flags = m->hdr.flags;
    s->time = m->time;
    s->expiry = m->expiry;
    s->underlying_id = m->underlying_id;
    s->volume = m->volume;
    s->bid_size = m->bid_size;
    s->offer_size = m->offer_size;
    s->best_bid_size = m->best_bid_size;
    s->best_offer_size = m->best_offer_size;
    s->line = m->line;
    s->index = m->index;
    s->category = m->category;
    s->msg_type = m->msg_type;
    s->participant = m->participant;
    s->put_call = m->put_call;
    s->bbo_ind = m->bbo_ind;
    s->best_bid_part = m->best_bid_part;
    s->best_offer_part = m->best_offer_part;
    s->session = m->session;
    s->root_len = m->root_len;
    memcpy(s->root, m->root, OMDP_OPRA_ROOT_MAX);
    s->reserved = 0;
}

void omdp_fh_stage_unpack_one(const omdp_fh_staged_t *s, omdp_opra_msg_t *m)
{
    memset(m, 0, sizeof *m);
    m->hdr.type = OMDP_RT_OPRA_MSG;
    m->hdr.length = (uint16_t)sizeof *m;
    m->hdr.flags = s->flags;
    m->hdr.stamps.intended = s->ts_ns;
    m->hdr.stamps.fh_in = s->ts_ns;
    m->block_seq = s->block_seq;
    m->msg_seq = s->msg_seq;
    m->strike_px = s->strike_px;
    m->bid_px = s->bid_px;
    m->offer_px = s->offer_px;
    m->premium_px = s->premium_px;
    m->best_bid_px = s->best_bid_px;
    m->best_offer_px = s->best_offer_px;
    m->time = s->time;
    m->expiry = s->expiry;
    m->underlying_id = s->underlying_id;
    m->volume = s->volume;
    m->bid_size = s->bid_size;
    m->offer_size = s->offer_size;
    m->best_bid_size = s->best_bid_size;
    m->best_offer_size = s->best_offer_size;
    m->line = s->line;
    m->index = s->index;
    m->category = s->category;
    m->msg_type = s->msg_type;
    m->participant = s->participant;
    m->put_call = s->put_call;
    m->bbo_ind = s->bbo_ind;
    m->best_bid_part = s->best_bid_part;
    m->best_offer_part = s->best_offer_part;
    m->session = s->session;
    m->root_len = s->root_len <= OMDP_OPRA_ROOT_MAX ? s->root_len : OMDP_OPRA_ROOT_MAX;
    memcpy(m->root, s->root, OMDP_OPRA_ROOT_MAX);
}

int64_t omdp_fh_stage_pack(const omdp_opra_msg_t *in, uint64_t n_in, const uint64_t *order, uint64_t n,
                           omdp_fh_staged_t *out)
{
    if ((!in && n_in) || (!out && n))
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = order ? order[i] : i;
        if (k >= n_in)
            return -1;
        pack_one(&in[k], &out[i]);
    }
    return (int64_t)n;
}
