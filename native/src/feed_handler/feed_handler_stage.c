/* The backtest's staged records (feed_stage.h): OPRA record <-> compact form, with a
 * gather order, every index checked against the input's length and the line's tables. */
#include <stddef.h>
#include <string.h>

#include "feed_handler_stage_internal.h"
#include "omdp/record.h"

_Static_assert(sizeof(omdp_fh_staged_t) == 64, "omdp_fh_staged_t is 64 bytes");
_Static_assert(sizeof(omdp_fh_stage_series_t) == 24, "omdp_fh_stage_series_t is 24 bytes");
_Static_assert(sizeof(omdp_fh_stage_extra_t) == 32, "omdp_fh_stage_extra_t is 32 bytes");
_Static_assert(offsetof(omdp_fh_staged_t, flags) == 63, "flags at 63");
_Static_assert(offsetof(omdp_fh_stage_series_t, expiry) == 8 && offsetof(omdp_fh_stage_series_t, underlying_id) == 12 &&
                   offsetof(omdp_fh_stage_series_t, root) == 16 && offsetof(omdp_fh_stage_series_t, root_len) == 22 &&
                   offsetof(omdp_fh_stage_series_t, put_call) == 23,
               "the series entry's words");
_Static_assert(offsetof(omdp_opra_msg_t, root) + 8 <= sizeof(omdp_opra_msg_t), "an 8-byte load at root stays in the record");

void stage_series_words(const omdp_opra_msg_t *m, uint32_t underlying_id, uint64_t w[3])
{
    /* the series entry as three words (little-endian), built in registers: a struct filled
     * field by field and read back as words stalled on store forwarding. root is followed by
     * the record's two reserved bytes, so one 8-byte load masked to 48 bits takes it. */
    uint64_t root8;
    memcpy(&root8, m->root, sizeof root8);
    w[0] = (uint64_t)m->strike_px;
    w[1] = (uint64_t)m->expiry | (uint64_t)underlying_id << 32;
    w[2] = (root8 & 0xFFFFFFFFFFFFull) | (uint64_t)m->root_len << 48 | (uint64_t)m->put_call << 56;
}

int stage_pack_series(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *m, uint32_t series, int64_t ts_ns,
                      uint32_t flags, omdp_fh_staged_t *s)
{
    if (flags > 0xFFu)
        return -1;
    uint32_t extra = OMDP_FH_STAGE_NO_EXTRA;
    if (m->best_bid_px | m->best_offer_px | m->best_bid_size | m->best_offer_size | m->best_bid_part |
        m->best_offer_part) {
        omdp_fh_stage_extra_t x;
        memset(&x, 0, sizeof x);
        x.best_bid_px = m->best_bid_px;
        x.best_offer_px = m->best_offer_px;
        x.best_bid_size = m->best_bid_size;
        x.best_offer_size = m->best_offer_size;
        x.best_bid_part = m->best_bid_part;
        x.best_offer_part = m->best_offer_part;
        int64_t id = stage_extra_id(t, &x);
        if (id < 0)
            return -3;
        extra = (uint32_t)id;
    }
    s->ts_ns = ts_ns;
    s->msg_seq = m->msg_seq;
    s->block_seq = m->block_seq;
    s->bid_px = m->bid_px;
    s->offer_px = m->offer_px;
    s->series = series;
    s->bid_size = m->bid_size;
    s->offer_size = m->offer_size;
    s->time = m->time;
    s->extra = extra;
    s->category = m->category;
    s->participant = m->participant;
    s->bbo_ind = m->bbo_ind;
    s->flags = (uint8_t)flags;
    return 0;
}

int stage_pack_msg(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *m, uint32_t underlying_id, int64_t ts_ns,
                   uint32_t flags, omdp_fh_staged_t *s)
{
    if (flags > 0xFFu)
        return -1;
    uint64_t w[3];
    stage_series_words(m, underlying_id, w);
    int64_t series = stage_series_id(t, w);
    if (series < 0)
        return -3;
    return stage_pack_series(t, m, (uint32_t)series, ts_ns, flags, s);
}

int64_t omdp_fh_stage_pack(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *in, uint64_t n_in,
                           const uint64_t *order, uint64_t n, omdp_fh_staged_t *out)
{
    if (!t || (!in && n_in) || (!out && n))
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = order ? order[i] : i;
        if (k >= n_in)
            return -1;
        const omdp_opra_msg_t *m = &in[k];
        int rc = stage_pack_msg(t, m, m->underlying_id, m->hdr.stamps.fh_in, m->hdr.flags, &out[i]);
        if (rc)
            return rc;
    }
    return (int64_t)n;
}

int omdp_fh_stage_unpack_one(const omdp_fh_stage_part_t *p, uint64_t i, omdp_opra_msg_t *m)
{
    if (!p || !m || i >= p->n)
        return -1;
    const omdp_fh_staged_t *s = &p->recs[i];
    if (s->series >= p->n_series || (s->extra != OMDP_FH_STAGE_NO_EXTRA && s->extra >= p->n_extras))
        return -1;
    const omdp_fh_stage_series_t *ser = &p->series[s->series];
    memset(m, 0, sizeof *m);
    m->hdr.type = OMDP_RT_OPRA_MSG;
    m->hdr.length = (uint16_t)sizeof *m;
    m->hdr.flags = s->flags;
    m->hdr.stamps.intended = s->ts_ns;
    m->hdr.stamps.fh_in = s->ts_ns;
    m->block_seq = s->block_seq;
    m->msg_seq = s->msg_seq;
    m->strike_px = ser->strike_px;
    m->bid_px = s->bid_px;
    m->offer_px = s->offer_px;
    m->time = s->time;
    m->expiry = ser->expiry;
    m->underlying_id = ser->underlying_id;
    m->bid_size = s->bid_size;
    m->offer_size = s->offer_size;
    m->line = (uint16_t)p->line;
    m->category = s->category;
    m->participant = s->participant;
    m->put_call = ser->put_call;
    m->bbo_ind = s->bbo_ind;
    m->root_len = ser->root_len <= OMDP_OPRA_ROOT_MAX ? ser->root_len : OMDP_OPRA_ROOT_MAX;
    memcpy(m->root, ser->root, OMDP_OPRA_ROOT_MAX);
    if (s->extra != OMDP_FH_STAGE_NO_EXTRA) {
        const omdp_fh_stage_extra_t *x = &p->extras[s->extra];
        m->best_bid_px = x->best_bid_px;
        m->best_offer_px = x->best_offer_px;
        m->best_bid_size = x->best_bid_size;
        m->best_offer_size = x->best_offer_size;
        m->best_bid_part = x->best_bid_part;
        m->best_offer_part = x->best_offer_part;
    }
    return 0;
}
