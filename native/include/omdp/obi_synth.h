/* Synthetic OBI feed helpers (omdp synth --market today; docs/synth.md "Today's market").
 *
 * Two loops that are sequential by nature and so run in C, a chunk of messages per call:
 *
 *  - omdp_obi_synth_quotes: every exchange's latest quote of every series and the national
 *    best bid and offer over them. For each quote message in time order it applies the
 *    quote (pulling a normal quote back a tick where it would lock or cross the other
 *    exchanges, or moving an anomalous one onto / through their best), and gives the BBO
 *    indicator and appendages OPRA would send with it (spec 7.6) and the NBBO state after.
 *  - omdp_obi_synth_encode_stream: one line's records, in MSN order, cut into blocks
 *    (spec 4.1: at most 1,000 bytes and 255 messages; C and H alone) and encoded by the
 *    codec's omdp_obi_encode_block, one block after the other into one buffer.
 *
 * Every index read from the caller's arrays is checked against the sizes given.
 */
#ifndef OMDP_OBI_SYNTH_H
#define OMDP_OBI_SYNTH_H

#include <stdint.h>

#include "omdp/opra_msg.h"
#include "omdp/opra_obi.h"

#define OMDP_OBI_SYNTH_MAX_EXCH 32
#define OMDP_OBI_SYNTH_NO_EXCH 0xFF

/* anomaly codes of omdp_obi_synth_quotes (in: asked for; out: 0 where it could not apply) */
#define OMDP_OBI_SYNTH_LOCKED 1      /* the bid set to the other exchanges' best offer */
#define OMDP_OBI_SYNTH_CROSSED 2     /* the bid set one tick above it */

/* nbbo_state values */
#define OMDP_OBI_SYNTH_NORMAL 0
#define OMDP_OBI_SYNTH_NBBO_LOCKED 1
#define OMDP_OBI_SYNTH_NBBO_CROSSED 2

/* The book: quotes of series s by exchange e at [s * n_exch + e] (cents and contracts; a
 * price of 0 is no bid / no offer). Message i is exchange exch[i] quoting series[i] at
 * q_bid[i] x q_offer[i] with sizes; tick[i] (cents, > 0) is the step a pulled-back or
 * crossing price moves by. q_* are overwritten with the quote as sent. Out, per message:
 * bbo_ind ('A'..'P'), the best bid/offer exchange index (OMDP_OBI_SYNTH_NO_EXCH: none),
 * price and size after the quote, the NBBO state after it. NBBO rule: highest bid > 0
 * (lowest offer > 0), then the larger size, then the lower exchange index. Returns the
 * number of quotes pulled back, or -1 when a series or exchange index is out of range
 * (nothing after that message is applied). */
int64_t omdp_obi_synth_quotes(uint64_t n_series, uint32_t n_exch, uint32_t *bid, uint32_t *bid_size,
                              uint32_t *offer, uint32_t *offer_size, uint64_t n, const uint32_t *series,
                              const uint8_t *exch, uint32_t *q_bid, uint32_t *q_bid_size, uint32_t *q_offer,
                              uint32_t *q_offer_size, uint8_t *anomaly, const uint32_t *tick, uint8_t *bbo_ind,
                              uint8_t *bb_exch, uint32_t *bb_price, uint32_t *bb_size, uint8_t *bo_exch,
                              uint32_t *bo_price, uint32_t *bo_size, uint8_t *nbbo_state);

/* Encode n records of one line (MSN order) as blocks into out. A block closes after
 * want[b % n_want] records (at least 1), at 255 records, before it would pass 1,000 bytes,
 * and around a 'C' or 'H' record (alone in its block). Block b's block_seq is the msg_seq of
 * its first record, its time ts_ns[last record] (ns since the epoch). Block b lies at
 * out[offsets[b] .. + lengths[b]) and starts at record first[b]. Returns the number of
 * blocks, OMDP_OBI_E_CAPACITY when out or the block arrays are too small, or the encoder's
 * error with *err naming the record (err->packet_index = its index in msgs). */
int64_t omdp_obi_synth_encode_stream(const omdp_opra_msg_t *msgs, uint64_t n, const uint8_t *side, uint64_t side_len,
                                     const int64_t *ts_ns, const uint32_t *want, uint64_t n_want, uint8_t *out,
                                     uint64_t out_cap, uint64_t *offsets, uint32_t *lengths, uint64_t *first,
                                     uint64_t blocks_cap, omdp_obi_error_t *err);

#endif /* OMDP_OBI_SYNTH_H */
