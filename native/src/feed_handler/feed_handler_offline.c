/* The feed handler's per-packet rules over captured packets (feed_offline.h): the offline
 * replay's arbitration, decode and routing, with the functions the live handler uses
 * (feed_handler_packet.c, feed_handler_obi.c do the same steps in the same order). Uses
 * feed_handler_arb.c, feed_handler_obi_arb.c and feed_handler_routes.c only. */
#include <stdlib.h>
#include <string.h>

#include "feed_handler_stage_internal.h"
#include "omdp/feed_offline.h"
#include "omdp/opra_fast.h"
#include "omdp/opra_obi.h"

_Static_assert(OMDP_FH_MAX_ENGINES <= 0xFFFFFFu, "a staged series keeps its engine in 24 bits (stage_route_word)");

#define OFFLINE_SIDE_BYTES (256u * 1024u) /* one packet's variable parts (discarded) */

typedef struct offline_line {
    omdp_fh_arb_t arb;        /* FAST V2 */
    omdp_fh_obi_arb_t obi;    /* OBI v6 */
    omdp_fh_offline_counts_t c;
} offline_line_t;

struct omdp_fh_offline {
    omdp_fh_routes_t *routes;
    uint32_t n_engines, default_engine;
    uint32_t format;          /* OMDP_FH_FORMAT_* */
    uint64_t packet_index;
    offline_line_t lines[OMDP_FH_MAX_LINE + 1];
    omdp_opra_msg_t dec[OMDP_OPRA_MAX_MESSAGES];
    uint8_t keep[OMDP_OPRA_MAX_MESSAGES]; /* per decoded message: the arbiter accepted it */
    uint8_t side[OFFLINE_SIDE_BYTES];
};

omdp_fh_offline_t *omdp_fh_offline_new(const omdp_fh_route_t *routes, uint32_t n_routes, uint32_t n_engines,
                                       uint32_t default_engine, char *err, size_t errlen)
{
    if (default_engine >= n_engines) {
        if (err && errlen)
            strncpy(err, "default_engine must be below n_engines", errlen - 1);
        return NULL;
    }
    omdp_fh_offline_t *h = calloc(1, sizeof *h);
    if (!h) {
        if (err && errlen)
            strncpy(err, "out of memory", errlen - 1);
        return NULL;
    }
    h->routes = omdp_fh_routes_new(routes, n_routes, n_engines, err, errlen);
    if (!h->routes) {
        free(h);
        return NULL;
    }
    h->n_engines = n_engines;
    h->default_engine = default_engine;
    for (uint32_t i = 0; i <= OMDP_FH_MAX_LINE; i++) {
        omdp_fh_arb_init(&h->lines[i].arb);
        omdp_fh_obi_arb_init(&h->lines[i].obi);
    }
    return h;
}

int omdp_fh_offline_set_format(omdp_fh_offline_t *h, uint32_t format)
{
    if (!h || (format != OMDP_FH_FORMAT_FAST && format != OMDP_FH_FORMAT_OBI))
        return -1;
    h->format = format;
    return 0;
}

void omdp_fh_offline_free(omdp_fh_offline_t *h)
{
    if (!h)
        return;
    omdp_fh_routes_free(h->routes);
    free(h);
}

/* Where a packet's accepted messages go: full records of want_engine (out, engines, n_out),
 * or, with st, every engine's staged straight into its bucket's region. */
typedef struct sink {
    uint32_t want;
    omdp_opra_msg_t *out;
    uint16_t *engines;
    uint64_t *n_out;
    uint64_t out_cap;
    omdp_fh_offline_stage_t *st;
} sink_t;

/* Routes m's root: *uid, *eng (no root: the default engine); returns routing's answer (-1
 * no root, 0 unknown root, 1 routed). */
static inline int route_root(const omdp_fh_offline_t *h, const omdp_opra_msg_t *m, uint32_t *uid, uint32_t *eng)
{
    *eng = h->default_engine;
    int found = omdp_fh_routes_lookup(h->routes, m->root, m->root_len, uid, eng);
    if (found < 0)
        *eng = h->default_engine;
    return found;
}

/* The line's per-message routing counters for a route word (stage_route_word). */
static inline void count_route(offline_line_t *l, uint32_t route)
{
    int found = (int)(route >> 24) - 1;
    if (found < 0)
        l->c.no_root++;
    else if (found == 0)
        l->c.unknown_root++;
}

/* A FAST V2 packet's pre-decode check, decode and arbitration (feed_handler_packet.c):
 * the messages decoded into h->dec with h->keep set for those accepted; 0 when there is
 * nothing to route (counted). */
static int fast_packet(omdp_fh_offline_t *h, offline_line_t *l, uint32_t copy, const uint8_t *pkt, uint32_t len)
{
    uint64_t block_seq;
    uint32_t count;
    omdp_opra_header_peek(pkt, len, &block_seq, &count);
    if (omdp_fh_arb_packet_is_duplicate(&l->arb, copy, block_seq, count)) {
        l->c.packets_duplicate++;
        l->arb.duplicates += count;
        return 0;
    }
    uint32_t side_used = 0;
    omdp_opra_error_t e;
    int n = omdp_opra_decode_packet(pkt, len, h->packet_index++, h->dec, OMDP_OPRA_MAX_MESSAGES, h->side,
                                    OFFLINE_SIDE_BYTES, &side_used, &e);
    if (n < 0) {
        l->c.decode_errors++;
        return 0;
    }
    if (n == 0) {
        l->c.packets_accepted++;
        return 0;
    }
    omdp_fh_arb_observe_block(&l->arb, block_seq, h->dec[0].msg_seq);
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        const omdp_opra_msg_t *m = &h->dec[i];
        int reset = m->category == 'H' && m->msg_type == 'K';
        h->keep[i] = omdp_fh_arb_message(&l->arb, copy, m->msg_seq, reset) != OMDP_FH_DUPLICATE;
    }
    return n;
}

/* The same for an OBI v6 block (feed_handler_obi.c): 'V' blocks and the other stream's
 * copies dropped unread, a bad checksum a decode error, spec 9.2's arbitration. */
static int obi_block(omdp_fh_offline_t *h, offline_line_t *l, uint32_t copy, const uint8_t *pkt, uint32_t len,
                     int64_t ts)
{
    omdp_fh_obi_arb_expire(&l->obi, ts); /* the spec's short timeout, on the capture's arrival times */
    uint64_t block_seq;
    uint32_t count;
    omdp_obi_header_peek(pkt, len, &block_seq, &count);
    if ((len > 4 && pkt[4] == 'V') || omdp_fh_obi_arb_is_behind(&l->obi, pkt, len)) {
        l->c.packets_duplicate++;
        if (!(len > 4 && pkt[4] == 'V'))
            l->obi.duplicates += count;
        return 0;
    }
    uint32_t side_used = 0;
    omdp_obi_block_t blk;
    int n = omdp_obi_decode_block(pkt, len, h->packet_index++, 0, h->dec, OMDP_OBI_MAX_MESSAGES, h->side,
                                  OFFLINE_SIDE_BYTES, &side_used, &blk, NULL, NULL);
    if (n < 0) {
        l->c.decode_errors++;
        return 0;
    }
    if (n == 0) {
        l->c.packets_accepted++;
        return 0;
    }
    uint32_t range[2 * OMDP_FH_OBI_RANGES];
    int result;
    uint32_t nr = omdp_fh_obi_arb_block(&l->obi, copy, h->dec, (uint32_t)n, blk.block_seq, blk.ts_sec, blk.ts_nsec,
                                        range, &result);
    if (result == OMDP_FH_DUPLICATE || result == OMDP_FH_INTEGRITY) {
        l->c.packets_duplicate += result == OMDP_FH_DUPLICATE;
        return 0;
    }
    memset(h->keep, 0, (size_t)n);
    for (uint32_t r = 0; r < nr; r++)
        memset(h->keep + range[2 * r], 1, range[2 * r + 1] - range[2 * r]);
    return n;
}

/* One packet: arbitrate, decode, route; accepted messages handed to the sink. Returns 0, or
 * the staging's error (-1, -3) with the packet part staged. */
static int offline_packet(omdp_fh_offline_t *h, offline_line_t *l, uint32_t line, uint32_t copy, const uint8_t *pkt,
                          uint32_t len, int64_t ts, const sink_t *k)
{
    uint32_t want = k->want;
    omdp_opra_msg_t *out = k->out;
    uint16_t *engines = k->engines;
    uint64_t *n_out = k->n_out;
    omdp_fh_staged_t *last_st = NULL;
    l->c.packets[copy & 1]++;
    int n = h->format == OMDP_FH_FORMAT_OBI ? obi_block(h, l, copy, pkt, len, ts) : fast_packet(h, l, copy, pkt, len);
    if (n <= 0)
        return 0;
    uint32_t kept = 0, last_kept = 0, last_written = UINT32_MAX;
    uint64_t last = 0;
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        omdp_opra_msg_t *m = &h->dec[i];
        if (!h->keep[i])
            continue;
        kept++;
        last_kept = i;
        uint32_t uid, eng = h->default_engine;
        if (k->st) { /* series first: the root is routed once per series of the line, not per message */
            omdp_fh_stage_tables_t *t = k->st->tables;
            uint64_t w[3];
            stage_series_words(m, 0, w);
            uint32_t route;
            int64_t series = stage_series_routed(t, w, &route);
            if (series < 0) {
                int found = route_root(h, m, &uid, &eng);
                w[1] |= (uint64_t)uid << 32;
                series = stage_series_id(t, w);
                if (series < 0)
                    return -3;
                route = stage_route_word(eng, found);
                stage_series_set_route(t, (uint64_t)series, route);
            }
            count_route(l, route);
            omdp_fh_stage_region_t *r = &k->st->regions[route & 0xFFFFFFu];
            last_st = &r->out[r->n];
            int rc = stage_pack_series(t, m, (uint32_t)series, ts, 0, last_st);
            if (rc)
                return rc;
            r->n++;
            last_written = i;
            l->c.kept++;
            continue;
        }
        int found = route_root(h, m, &uid, &eng);
        count_route(l, stage_route_word(eng, found));
        if (want != OMDP_FH_OFFLINE_ALL && eng != want)
            continue;
        omdp_opra_msg_t *o = &out[*n_out];
        *o = *m;
        o->underlying_id = uid;
        o->line = (uint16_t)line;
        o->var_off = 0;
        o->var_len = 0;
        o->hdr.flags = 0;
        o->hdr.stamps.intended = ts;
        o->hdr.stamps.fh_in = ts;
        engines[*n_out] = (uint16_t)eng;
        last = (*n_out)++;
        last_written = i;
        l->c.kept++;
    }
    if (kept == 0) {
        l->c.packets_duplicate++;
        return 0;
    }
    l->c.packets_accepted++;
    if (last_written == last_kept) { /* the packet's last accepted message, as the live handler flags it */
        if (last_st)
            last_st->flags |= OMDP_RF_LAST_IN_PACKET;
        else
            out[last].hdr.flags |= OMDP_RF_LAST_IN_PACKET;
    }
    return 0;
}

/* The packet loop of both entry points: packets while `room` says a whole packet fits. */
static int64_t offline_loop(omdp_fh_offline_t *h, const omdp_fh_offline_src_t *srcs, uint32_t n_srcs,
                            const omdp_fh_offline_pkt_t *pkts, uint64_t n_packets, const sink_t *k,
                            int (*room)(const sink_t *k))
{
    uint64_t i = 0;
    for (; i < n_packets; i++) {
        if (!room(k))
            break;
        const omdp_fh_offline_pkt_t *p = &pkts[i];
        uint32_t line = p->line;
        if (line == 0 || line > OMDP_FH_MAX_LINE) {
            h->lines[0].c.bad_packets++;
            continue;
        }
        offline_line_t *l = &h->lines[line];
        if (p->src >= n_srcs || !srcs[p->src].buf || p->off > srcs[p->src].len ||
            p->len > srcs[p->src].len - p->off) {
            l->c.bad_packets++;
            continue;
        }
        int rc = offline_packet(h, l, line, p->copy ? 1u : 0u, srcs[p->src].buf + p->off, p->len, p->ts_ns, k);
        if (rc)
            return rc;
    }
    return (int64_t)i;
}

static int records_room(const sink_t *k)
{
    return *k->n_out <= k->out_cap && k->out_cap - *k->n_out >= OMDP_OPRA_MAX_MESSAGES;
}

static int regions_room(const sink_t *k)
{
    for (uint32_t b = 0; b < k->st->n_regions; b++) {
        const omdp_fh_stage_region_t *r = &k->st->regions[b];
        if (r->n > r->cap || r->cap - r->n < OMDP_OPRA_MAX_MESSAGES)
            return 0;
    }
    return 1;
}

int64_t omdp_fh_offline_run(omdp_fh_offline_t *h, const omdp_fh_offline_src_t *srcs, uint32_t n_srcs,
                            const omdp_fh_offline_pkt_t *pkts, uint64_t n_packets, uint32_t want_engine,
                            omdp_opra_msg_t *out, uint16_t *engines, uint64_t cap, uint64_t *n_out)
{
    if (!h || (!srcs && n_srcs) || (!pkts && n_packets) || !out || !engines || !n_out)
        return -1;
    sink_t k = {.want = want_engine, .out = out, .engines = engines, .n_out = n_out, .out_cap = cap, .st = NULL};
    return offline_loop(h, srcs, n_srcs, pkts, n_packets, &k, records_room);
}

int64_t omdp_fh_offline_stage(omdp_fh_offline_t *h, const omdp_fh_offline_src_t *srcs, uint32_t n_srcs,
                              const omdp_fh_offline_pkt_t *pkts, uint64_t n_packets, omdp_fh_offline_stage_t *st)
{
    if (!h || (!srcs && n_srcs) || (!pkts && n_packets) || !st || !st->tables || !st->regions ||
        st->n_regions < h->n_engines)
        return -1;
    for (uint32_t b = 0; b < st->n_regions; b++)
        if (!st->regions[b].out && st->regions[b].cap)
            return -1;
    sink_t k = {.want = OMDP_FH_OFFLINE_ALL, .st = st};
    return offline_loop(h, srcs, n_srcs, pkts, n_packets, &k, regions_room);
}

void omdp_fh_offline_line_counts(const omdp_fh_offline_t *h, uint32_t line, omdp_fh_offline_counts_t *out)
{
    memset(out, 0, sizeof *out);
    if (!h || line > OMDP_FH_MAX_LINE)
        return;
    *out = h->lines[line].c;
    const offline_line_t *l = &h->lines[line];
    omdp_fh_obi_arb_t obi = l->obi;
    omdp_fh_obi_arb_finish(&obi); /* the counts as if the stream ended here: pending gaps lost */
    out->accepted = l->arb.accepted + obi.accepted; /* one of the two arbiters is used */
    out->duplicates = l->arb.duplicates + obi.duplicates;
    out->missed = l->arb.missed + obi.missed;
    out->resets = l->arb.resets + obi.resets;
}
