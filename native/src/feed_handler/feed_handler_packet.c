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
    if (fh->format == OMDP_FH_FORMAT_OBI)
        return omdp_fh_process_block(fh, li, copy, pkt, len, fh_in, intended, em);
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
        omdp_fh_route_message(fh, l, m, &msg_engine[i], intended, fh_in, &first_engine, &mixed);
        kept++;
        last = i;
    }
    return omdp_fh_hold_packet(fh, l, base, (uint32_t)n, kept, last, first_engine, mixed, em);
}
