/* The feed handler's work on one packet: arbitrate A/B, decode, stamp, route to an engine
 * port, emit (feed_handler.h). Called by the inputs (feed_handler_input.c) for every packet
 * they receive; uses the arbiter, the routing table and the intended tables below it. */
#include <string.h>

#include "omdp/stamp_clock.h"
#include "feed_handler_internal.h"

/* Stamp fh_out on n records and hand them to engine port e. */
static inline int send_batch(feed_handler_t *fh, uint32_t e, omdp_opra_msg_t *m, uint32_t n, const omdp_emitter_t *em)
{
    int64_t out = omdp_stamp_ns();
    for (uint32_t i = 0; i < n; i++)
        m[i].hdr.stamps.fh_out = out;
    fh->batches_out++;
    return omdp_emit(em, e, (const uint8_t *)m, n * (uint32_t)sizeof *m);
}

static inline uint32_t hist_bucket(uint32_t packets)
{
    uint32_t b = 0;
    while (b + 1 < FH_FLUSH_HIST && packets > (1u << b))
        b++;
    return b; /* 1 -> 0, 2 -> 1, 3-4 -> 2, 5-8 -> 3, ... */
}

int omdp_fh_flush(feed_handler_t *fh, const omdp_emitter_t *em)
{
    uint32_t n = fh->acc_n, kept = fh->acc_kept, packets = fh->acc_packets;
    if (n == 0)
        return OMDP_OK;
    fh->acc_n = fh->acc_kept = fh->acc_packets = 0;
    fh->flushes++;
    fh->flush_packets += packets;
    fh->flush_messages += kept;
    if (packets > fh->flush_packets_max)
        fh->flush_packets_max = packets;
    if (kept > fh->flush_messages_max)
        fh->flush_messages_max = kept;
    fh->flush_hist[hist_bucket(packets)]++;
    uint32_t first = fh->acc_first_engine, mixed = fh->acc_mixed;
    fh->acc_first_engine = FH_SKIP;
    fh->acc_mixed = 0;
    if (!mixed && kept == n) {
        fh->acc_per_engine[first] = 0;
        return send_batch(fh, first, fh->dec, kept, em); /* every message to one engine, in place */
    }
    /* Group by engine (a counting sort keeps arrival order within each engine). */
    uint32_t start[OMDP_FH_MAX_ENGINES], fill[OMDP_FH_MAX_ENGINES], pos = 0;
    for (uint32_t e = 0; e < fh->n_engines; e++) {
        start[e] = fill[e] = pos;
        pos += fh->acc_per_engine[e];
    }
    for (uint32_t i = 0; i < n; i++) {
        uint16_t e = fh->msg_engine[i];
        if (e != FH_SKIP)
            fh->staging[fill[e]++] = fh->dec[i];
    }
    int rc = OMDP_OK;
    for (uint32_t e = 0; e < fh->n_engines; e++) {
        uint32_t k = fh->acc_per_engine[e];
        if (!k)
            continue;
        fh->acc_per_engine[e] = 0;
        if (rc == OMDP_OK)
            rc = send_batch(fh, e, fh->staging + start[e], k, em);
    }
    return rc;
}

int omdp_fh_process_packet(feed_handler_t *fh, uint32_t li, uint32_t copy, const uint8_t *pkt, uint32_t len,
                           int64_t fh_in, int64_t intended, const omdp_emitter_t *em)
{
    fh_line_t *l = &fh->lines[li];
    l->packets[copy & 1]++;
    uint64_t block_seq;
    uint32_t count;
    omdp_opra_header_peek(pkt, len, &block_seq, &count);
    if (omdp_fh_arb_packet_is_duplicate(&l->arb, copy, block_seq, count)) {
        l->packets_duplicate++;
        l->arb.duplicates += count;
        return OMDP_OK;
    }
    uint32_t base = fh->acc_n; /* this packet's messages follow those held */
    omdp_opra_msg_t *dec = fh->dec + base;
    uint16_t *msg_engine = fh->msg_engine + base;
    uint32_t side_used = 0;
    omdp_opra_error_t err;
    int n = omdp_opra_decode_packet(pkt, len, fh->packet_index++, dec, OMDP_OPRA_MAX_MESSAGES, fh->side,
                                    FH_SIDE_BYTES, &side_used, &err);
    if (n < 0) {
        l->decode_errors++;
        fh->last_error = err;
        return OMDP_OK;
    }
    if (n == 0) {
        l->packets_accepted++; /* a packet of no messages: nothing to arbitrate */
        return OMDP_OK;
    }
    omdp_fh_arb_observe_block(&l->arb, block_seq, dec[0].msg_seq);
    int need_intended = intended == 0 && l->table >= 0; /* looked up once the packet has news */

    uint32_t kept = 0, last = 0;
    uint32_t first_engine = fh->acc_first_engine, mixed = fh->acc_mixed;
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        omdp_opra_msg_t *m = &dec[i];
        int reset = m->category == 'H' && m->msg_type == 'K';
        if (reset)
            l->arb.lap_end = omdp_fh_line_end(fh, l, 0);
        if (omdp_fh_arb_message(&l->arb, copy, m->msg_seq, reset) == OMDP_FH_DUPLICATE) {
            msg_engine[i] = FH_SKIP;
            continue;
        }
        if (need_intended) {
            intended = omdp_fh_intended_lookup(fh, l, block_seq);
            need_intended = 0;
        }
        uint32_t uid, e = fh->default_engine;
        int found;
        uint32_t k_lo; /* the 6 root bytes and root_len, combined in registers (no store-forwarding stall) */
        uint16_t k_hi;
        memcpy(&k_lo, m->root, 4);
        memcpy(&k_hi, m->root + 4, 2);
        uint64_t key = (uint64_t)k_lo | ((uint64_t)k_hi << 32) | ((uint64_t)m->root_len << 48);
        if (key == fh->route_key && fh->route_found != FH_ROUTE_NONE) {
            /* messages of one root come in runs: the last lookup answers most of them */
            found = fh->route_found;
            uid = fh->route_uid;
            e = fh->route_engine;
        } else {
            found = omdp_fh_routes_lookup(fh->routes, m->root, m->root_len, &uid, &e);
            if (fh->bucket_engine && found > 0)
                e = fh->bucket_engine[uid & fh->bucket_mask]; /* re-sharding: the bucket's engine now */
            fh->route_key = key;
            fh->route_found = found;
            fh->route_uid = uid;
            fh->route_engine = e;
        }
        if (found < 0) {
            fh->no_root++;
            e = fh->default_engine;
        } else if (found == 0) {
            fh->unknown_root++;
        }
        m->underlying_id = uid;
        m->line = (uint16_t)l->line;
        m->var_off = 0;
        m->var_len = 0;
        m->hdr.flags = 0;
        m->hdr.stamps.intended = intended;
        m->hdr.stamps.fh_in = fh_in;
        msg_engine[i] = (uint16_t)e;
        fh->acc_per_engine[e]++;
        if (first_engine == FH_SKIP)
            first_engine = e;
        else if (e != first_engine)
            mixed = 1;
        kept++;
        last = i;
    }
    if (kept == 0) {
        l->packets_duplicate++; /* nothing held: the next packet decodes over it */
        return OMDP_OK;
    }
    l->packets_accepted++;
    fh->routed += kept;
    dec[last].hdr.flags |= OMDP_RF_LAST_IN_PACKET;
    fh->acc_first_engine = first_engine;
    fh->acc_mixed = mixed;
    fh->acc_n = base + (uint32_t)n;
    fh->acc_kept += kept;
    fh->acc_packets++;
    if (fh->acc_packets >= fh->coalesce || fh->acc_n >= OMDP_FH_COALESCE_MSGS)
        return omdp_fh_flush(fh, em);
    return OMDP_OK;
}
