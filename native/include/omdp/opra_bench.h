/* Timing the OPRA decoder as the feed handler calls it: from C, one omdp_opra_decode_packet
 * per packet, into a small record buffer that stays in cache, no Python between packets
 * (ops/bench/decode.py). */
#ifndef OMDP_OPRA_BENCH_H
#define OMDP_OPRA_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/opra_msg.h"

/* Decode packets i = 0 .. npkts-1 (packet i is buf[offsets[i] .. offsets[i] + lengths[i]),
 * each offset + length within buf_len) one call per packet, as the feed handler does: the
 * next packet's lines are asked for (prefetched) while one is decoded, as the feed handler
 * asks for its ring's next slot; the records of `group` consecutive packets go back to back
 * into out (the feed handler's batch across packets), then out is reused from its start.
 * out must hold group x OMDP_OPRA_MAX_MESSAGES records; side (side_cap bytes) is reused for
 * every packet.
 * *messages: records decoded; *bad: packets refused. Returns the thread CPU ns the loop
 * took (*wall_ns: wall ns), or -1 on a bad argument. */
int64_t omdp_opra_bench_decode_packets(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                       const uint32_t *lengths, uint64_t npkts, uint32_t group,
                                       omdp_opra_msg_t *out, uint64_t out_cap, uint8_t *side, uint32_t side_cap,
                                       uint64_t *messages, uint64_t *bad, int64_t *wall_ns);

/* The same loop for OPRA's binary feed (opra_obi.h): one omdp_obi_decode_block per block,
 * checksum verified, as a feed handler on OBI decodes. out must hold group x
 * OMDP_OBI_MAX_MESSAGES records. */
int64_t omdp_obi_bench_decode_blocks(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                     const uint32_t *lengths, uint64_t npkts, uint32_t group,
                                     omdp_opra_msg_t *out, uint64_t out_cap, uint8_t *side, uint32_t side_cap,
                                     uint64_t *messages, uint64_t *bad, int64_t *wall_ns);

#endif /* OMDP_OPRA_BENCH_H */
