/* C loops that drive transports for the microbenchmarks (omdp bench transport) and the
 * cross-process integrity tests: whole runs in one call, timestamps taken here.
 *
 * Payload pattern: message `seq` of `size` bytes is omdp_tbench_fill(seq), so a receiver
 * that knows the order regenerates and compares every byte. Checksum: the wrapping sum of
 * the payload's little-endian 64-bit words (tail zero-padded), the same numpy computes.
 * Latency runs carry the send time in the first 8 bytes and pace themselves with an
 * acknowledgement word outside the channel, so no message queues behind another.
 */
#ifndef OMDP_TRANSPORT_BENCH_H
#define OMDP_TRANSPORT_BENCH_H

#include <stdint.h>

#include "omdp/vega.h"

/* cdef: begin */
/* Any transport's blocking calls, for the loops below: put/get wait at most timeout_ns
 * (the Vega status codes); `end` is the transport's own sender or receiver. The Vega loops
 * run them on Vega's calls (inlined); another medium hands its own (the `mpi` transport:
 * transport_bench_mpi.h), so every medium's rows run the same loop. */
typedef struct omdp_tbench_tx_ops {
    int (*put)(void *end, const void *data, uint32_t size, int64_t timeout_ns);
} omdp_tbench_tx_ops_t;
typedef struct omdp_tbench_rx_ops {
    int (*get)(void *end, omdp_vega_msg_t *msg, int64_t timeout_ns);
    int (*release)(void *end, uint32_t slot_id);
} omdp_tbench_rx_ops_t;
/* cdef: end */

uint64_t omdp_tbench_checksum(const uint8_t *p, uint32_t size);
void omdp_tbench_fill(uint8_t *p, uint32_t size, uint64_t seq);

/* Integrity: send n messages, message i sized sizes[i % nsizes] with pattern i. Returns
 * messages sent or a negative status. */
int64_t omdp_tbench_send_pattern(omdp_vega_sender_t *tx, uint64_t n, const uint32_t *sizes, uint32_t nsizes,
                                 int64_t timeout_ns);
/* Receive n messages and compare each with its pattern. Returns the number received (n
 * when all came) or a negative status; *bad counts mismatches, *first_bad the first one. */
int64_t omdp_tbench_recv_verify(omdp_vega_receiver_t *rx, uint64_t n, const uint32_t *sizes, uint32_t nsizes,
                                int64_t timeout_ns, uint64_t *bad, uint64_t *first_bad);

/* Throughput: n messages of `size` bytes as fast as the ring takes them (payloads cycle
 * through a pool of 64 patterns). *checksum: sum of the checksums sent. */
int64_t omdp_tbench_vega_send(omdp_vega_sender_t *tx, uint64_t n, uint32_t size, uint64_t *checksum);
/* Receive n messages, `batch` at a time (1: get/release each), checksumming every payload;
 * t_first/t_last: arrival of the first and the last message. */
int64_t omdp_tbench_vega_recv(omdp_vega_receiver_t *rx, uint64_t n, uint32_t batch, uint64_t *checksum,
                              int64_t *t_first, int64_t *t_last);

/* Latency: n messages of `size` (>= 8) bytes, the send time in the first 8 bytes; after
 * each the sender waits for *ack to reach its count, then `gap_ns`. *checksum: sum of the
 * checksums sent. */
int64_t omdp_tbench_vega_lat_send(omdp_vega_sender_t *tx, uint64_t n, uint32_t size, uint64_t *ack_word,
                                  int64_t gap_ns, uint64_t *checksum);
/* Receive n latency messages: lat[i] = arrival - send time; checksums every payload. */
int64_t omdp_tbench_vega_lat_recv(omdp_vega_receiver_t *rx, uint64_t n, int64_t *lat, uint64_t *ack_word,
                                  uint64_t *checksum);

/* The same three runs over any transport's calls (receive: one get and release per message). */
int64_t omdp_tbench_send(const omdp_tbench_tx_ops_t *ops, void *tx, uint64_t n, uint32_t size, uint64_t *checksum);
int64_t omdp_tbench_recv(const omdp_tbench_rx_ops_t *ops, void *rx, uint64_t n, uint64_t *checksum,
                         int64_t *t_first, int64_t *t_last);
int64_t omdp_tbench_lat_send(const omdp_tbench_tx_ops_t *ops, void *tx, uint64_t n, uint32_t size,
                             uint64_t *ack_word, int64_t gap_ns, uint64_t *checksum);
int64_t omdp_tbench_lat_recv(const omdp_tbench_rx_ops_t *ops, void *rx, uint64_t n, int64_t *lat,
                             uint64_t *ack_word, uint64_t *checksum);

/* Cache-line ping-pong between two processes: the floor of any one-way hop, and the
 * offset between the two CPUs' clocks. `ping` and `pong` are on different cache lines of
 * shared memory; the initiator stores i to ping, the responder answers i on pong. The
 * initiator fills t_a (sent) and t_b (answer seen), the responder t_a (ping seen). */
int64_t omdp_tbench_pingpong(uint64_t *ping_word, uint64_t *pong_word, uint64_t n, int initiator, int64_t *t_a,
                             int64_t *t_b);

/* memcpy of `size`-byte messages into nslots slots `stride` apart, the way a sender fills
 * a ring (same footprint): returns elapsed ns for `iters` copies. */
int64_t omdp_tbench_memcpy(uint8_t *dst, uint32_t stride, uint32_t nslots, uint32_t size, uint64_t iters);

/* Fused: sender and receiver in one thread, the receiver a direct (not inlined) call that
 * checksums. Latency into lat[] (stamp before the call, stamp inside it); throughput
 * returns elapsed ns for n calls. */
int64_t omdp_tbench_fused_lat(uint64_t n, uint32_t size, int64_t *lat, uint64_t *checksum);
int64_t omdp_tbench_fused_tput(uint64_t n, uint32_t size, uint64_t *checksum);

#endif /* OMDP_TRANSPORT_BENCH_H */
