/* The `tcp` transport: Vega's five calls over a plain TCP stream (TCP_NODELAY), the
 * paper's RUM-over-TCP baseline and the medium between hosts without a mirrored ring.
 *
 * Wire: the sender opens with a hello {magic, version, queue_size, max_message}, the
 * receiver answers one byte (1 accept, 0 reject). Then frames: u32 little-endian size and
 * the payload; size 0xffffffff is the sender's orderly goodbye. The receiver owns
 * `queue_size` slots of `max_message` bytes: it reads frames only while a slot is free, so
 * a receiver that does not release back-pressures the sender through the TCP window.
 * A stream that ends without a goodbye means the sender died (E_PEER_DEAD).
 *
 * Status codes are Vega's (vega.h): the same contract on every medium. A put's timeout
 * bounds the wait for room in the socket; once a frame has started it is written whole.
 */
#ifndef OMDP_TCP_CHANNEL_H
#define OMDP_TCP_CHANNEL_H

#include <stdint.h>

#include "omdp/vega.h"

#define OMDP_TCP_MAGIC 0x5043544fu /* "OTCP" */
#define OMDP_TCP_VERSION 1u
#define OMDP_TCP_GOODBYE 0xffffffffu

/* cdef: begin */
typedef struct omdp_tcp_sender omdp_tcp_sender_t;
typedef struct omdp_tcp_receiver omdp_tcp_receiver_t;

typedef struct omdp_tcp_stats {
    uint64_t messages, bytes, full_events, spins, drops, errors;
    int32_t peer_state; /* OMDP_VEGA_PEER_* as this side last saw it */
    uint32_t reserved;
} omdp_tcp_stats_t;
/* cdef: end */

/* Bytes per receiver slot: max_message rounded up to a cache line. */
static inline uint32_t omdp_tcp_slot_size(uint32_t max_message)
{
    return (max_message + 63u) & ~63u;
}

/* Receiver: listen on host:port (port 0 picks one; omdp_tcp_receiver_port tells which).
 * slot_mem: queue_size * omdp_tcp_slot_size(max_message) bytes the caller owns and keeps
 * past close (so lent views never dangle), or NULL to have the receiver allocate them. */
int omdp_tcp_receiver_listen(const char *host, uint16_t port, uint32_t queue_size, uint32_t max_message,
                             uint32_t wait, void *slot_mem, omdp_tcp_receiver_t **out);
int omdp_tcp_receiver_port(const omdp_tcp_receiver_t *rx);
/* Wait for the sender's connection and hello (also done lazily by available/get). */
int omdp_tcp_receiver_accept(omdp_tcp_receiver_t *rx, int64_t timeout_ns);
int omdp_tcp_available(omdp_tcp_receiver_t *rx);
int omdp_tcp_get(omdp_tcp_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns);
int omdp_tcp_release(omdp_tcp_receiver_t *rx, uint32_t slot_id);
void omdp_tcp_receiver_stats(const omdp_tcp_receiver_t *rx, omdp_tcp_stats_t *out);
int omdp_tcp_receiver_close(omdp_tcp_receiver_t *rx);

/* Sender: connect to host:port, retrying until timeout_ns (<0: forever). */
int omdp_tcp_sender_connect(const char *host, uint16_t port, uint32_t queue_size, uint32_t max_message,
                            uint32_t mutex, uint32_t on_full, int64_t timeout_ns, omdp_tcp_sender_t **out);
int omdp_tcp_ready_to_send(omdp_tcp_sender_t *tx);
int omdp_tcp_put(omdp_tcp_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns);
int64_t omdp_tcp_put_batch(omdp_tcp_sender_t *tx, const uint8_t *buf, const uint32_t *sizes, uint32_t n,
                           int64_t timeout_ns);
void omdp_tcp_sender_stats(const omdp_tcp_sender_t *tx, omdp_tcp_stats_t *out);
int omdp_tcp_sender_close(omdp_tcp_sender_t *tx);

#endif /* OMDP_TCP_CHANNEL_H */
