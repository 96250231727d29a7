/* The feed handler's work on one OBI v6 block (feed_handler.h; spec opra-binary.md 4, 9.2):
 * a retransmitted block is counted and ignored; a data block whose messages were all
 * delivered from the other stream is dropped before decoding; the rest is decoded with its
 * checksum verified (a bad one is counted and the block dropped: the other stream brings
 * it), arbitrated on message sequence numbers (control blocks on their content), and each
 * message delivered is routed as FAST V2's are. */
#include "omdp/opra_obi.h"
#include "feed_handler_internal.h"

#define OBI_RETRANS_OFF 4   /* block header byte: ' ' original, 'V' retransmitted */

int omdp_fh_process_block(feed_handler_t *fh, uint32_t li, uint32_t copy, const uint8_t *pkt, uint32_t len,
                          int64_t fh_in, int64_t intended, const omdp_emitter_t *em)
{
    fh_line_t *l = &fh->lines[li];
    omdp_fh_obi_arb_t *a = &l->obi;
    l->packets[copy & 1]++;
    uint64_t block_seq;
    uint32_t count;
    omdp_obi_header_peek(pkt, len, &block_seq, &count);
    if (len > OBI_RETRANS_OFF && pkt[OBI_RETRANS_OFF] == 'V') {
        l->retrans_ignored++; /* only requested retransmissions matter; none are requested */
        return OMDP_OK;
    }
    omdp_fh_obi_arb_expire(a, fh_in); /* the spec's short timeout, on the arrival clock */
    if (omdp_fh_obi_arb_is_behind(a, pkt, len)) {
        l->packets_duplicate++;
        a->duplicates += count;
        return OMDP_OK;
    }
    uint32_t base = fh->acc_n; /* this block's messages follow those held */
    omdp_opra_msg_t *dec = fh->dec + base;
    uint16_t *msg_engine = fh->msg_engine + base;
    uint32_t side_used = 0;
    omdp_obi_block_t blk;
    omdp_obi_error_t err;
    int n = omdp_obi_decode_block(pkt, len, fh->packet_index++, 0, dec, OMDP_OBI_MAX_MESSAGES, fh->side, FH_SIDE_BYTES,
                                  &side_used, &blk, &err, NULL);
    if (n < 0) {
        l->decode_errors++;
        if (n == OMDP_OBI_E_CHECKSUM)
            l->checksum_errors++;
        fh->last_error.code = n;
        return OMDP_OK;
    }
    uint32_t range[2 * OMDP_FH_OBI_RANGES];
    int result;
    uint32_t nr = omdp_fh_obi_arb_block(a, copy, dec, (uint32_t)n, blk.block_seq, blk.ts_sec, blk.ts_nsec, range, &result);
    if (result == OMDP_FH_INTEGRITY) {
        l->integrity++; /* nothing to deliver */
        return OMDP_OK;
    }
    if (result == OMDP_FH_DUPLICATE) {
        l->packets_duplicate++; /* a control block's other copy */
        return OMDP_OK;
    }
    if (intended == 0 && l->table >= 0 && nr > 0)
        intended = omdp_fh_intended_lookup(fh, l, block_seq);

    uint32_t kept = 0, last = 0, i = 0;
    uint32_t first_engine = fh->acc_first_engine, mixed = fh->acc_mixed;
    for (uint32_t r = 0; r < nr; r++) {
        for (; i < range[2 * r]; i++)
            msg_engine[i] = FH_SKIP;
        for (; i < range[2 * r + 1]; i++) {
            omdp_fh_route_message(fh, l, &dec[i], &msg_engine[i], intended, fh_in, &first_engine, &mixed);
            kept++;
            last = i;
        }
    }
    for (; i < (uint32_t)n; i++)
        msg_engine[i] = FH_SKIP;
    if (n == 0) {
        l->packets_accepted++; /* an empty block (spec Q8): nothing to arbitrate */
        return OMDP_OK;
    }
    return omdp_fh_hold_packet(fh, l, base, (uint32_t)n, kept, last, first_engine, mixed, em);
}
