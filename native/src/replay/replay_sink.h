/* Private to the replay sources: what the pacing loop hands a sink, and the sinks' batch calls. */
#ifndef OMDP_REPLAY_SINK_H
#define OMDP_REPLAY_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/replay.h"
#include "omdp/vega.h"

#define OMDP_REPLAY_LINE 64    /* cache line */

/* One datagram of a batch: a packet on one copy. `ok` is set by the sink. */
typedef struct omdp_replay_out {
    const uint8_t *data;
    int64_t intended_ns;
    uint16_t len;
    uint16_t line;
    uint8_t copy;
    uint8_t flags;
    uint8_t ok;
    uint8_t reserved;
} omdp_replay_out_t;

/* Sends n datagrams stamped `sent_ns`; marks each ok or not. Returns 0, or -1 when the sink
 * cannot send at all any more (err says why). */
int omdp_replay_udp_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen);

/* The packet-socket path of the UDP sink (replay_packet.c): same contract as
 * omdp_replay_udp_send. */
int omdp_replay_packet_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen);
/* Close the packet socket and its TX ring, if mapped (replay_packet_ring.c builds on this file,
 * never the other way). */
void omdp_replay_packet_close(omdp_replay_udp_sink_t *sink);
/* Headers and payload of one datagram into frame f (room for OMDP_REPLAY_PKT_FRAME bytes);
 * its length (replay_packet.c). */
uint32_t omdp_replay_packet_build(omdp_replay_udp_sink_t *sink, uint8_t *f, uint32_t dst_ip, uint16_t dst_port,
                                  const uint8_t *data, uint16_t len);
/* The packet-socket path through the mapped TX ring (replay_packet_ring.c): same contract. */
int omdp_replay_packet_ring_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err,
                                 size_t errlen);

struct mmsghdr;
/* Send msgs[0, m) on fd (replay_sendmmsg.c); msgs[k] carries out[map[k]], marked ok once
 * sent. A refused datagram is skipped (err keeps the first reason); a dead socket (and with
 * link_errors_fatal, a gone link) returns -1 with err saying `what` failed. Else 0. */
int omdp_replay_sendmmsg_all(int fd, struct mmsghdr *msgs, int m, const int *map, omdp_replay_out_t *out,
                             int link_errors_fatal, const char *what, char *err, size_t errlen);

/* Puts n frames (omdp_replay_frame_t + packet) stamped `sent_ns` into the ring; marks each
 * ok or not. Returns 0, or -1 when the receiver is gone or the ring refuses for good. */
int omdp_replay_ring_send(omdp_replay_ring_sink_t *sink, omdp_replay_out_t *out, int n, int64_t sent_ns,
                          char *err, size_t errlen);

/* Asks for the cache lines of a `len`-byte packet's frame in the slot `ahead` frames past the
 * next one, for writing: the consumer's core read that slot last, and a store that has to
 * wait for it to give the lines up costs the sender a cross-core miss per line. */
static inline void omdp_replay_ring_prefetch(const omdp_replay_ring_sink_t *sink, uint32_t ahead, uint32_t len)
{
    const omdp_vega_sender_t *tx = (const omdp_vega_sender_t *)sink->tx;
    const uint8_t *slot = tx->slots + (size_t)((tx->seq + ahead) & tx->mask) * tx->stride;
    uint32_t end = OMDP_VEGA_SLOT_HEADER + (uint32_t)sizeof(omdp_replay_frame_t) + len + OMDP_VEGA_SLOT_FOOTER;
    if (end > tx->stride)
        end = tx->stride;
    for (uint32_t off = 0; off < end; off += OMDP_REPLAY_LINE)
        __builtin_prefetch(slot + off, 1, 3);
}

static inline void omdp_replay_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif /* OMDP_REPLAY_SINK_H */
