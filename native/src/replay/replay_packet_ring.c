/* Replay's multicast sender through the packet socket's mapped TX ring (replay.h
 * omdp_replay_udp_use_packet_ring): each datagram of a batch is built straight into the next
 * ring frame (TPACKET_V2) and marked for sending; one send() with no message then has the
 * kernel take every marked frame, past the qdisc. Against sendmmsg on the same socket this
 * drops the per-datagram message header and iovec copies from user memory and the copy of
 * the frame out of a user buffer (the kernel maps the ring's pages into the packet). A frame
 * is reused once the kernel has let it go (status back to available). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "replay_sink.h"

/* The frame's status word, shared with the kernel: reached through an _Atomic view of the
 * plain field, as the other shared layouts are (native/README.md). */
#define STATUS_WORD(h) ((_Atomic uint32_t *)(void *)&(h)->tp_status)

#define TX_DATA 32u                /* TPACKET_ALIGN(sizeof(struct tpacket2_hdr)): where a frame's bytes start */
#define VNET_LEN ((uint32_t)sizeof(struct virtio_net_hdr))
#define TX_BLOCK (1u << 20)        /* ring block */
#define KICK_RETRIES 100000        /* send() refusals for want of buffers before the sink gives up */
#define FREE_WAIT_SPINS 10000000   /* looks at a frame still in the kernel's hands before giving up */

_Static_assert(TX_DATA + sizeof(struct virtio_net_hdr) + OMDP_REPLAY_PKT_FRAME <= OMDP_REPLAY_TX_FRAME,
               "a TX frame holds a whole datagram");
_Static_assert(TX_BLOCK % OMDP_REPLAY_TX_FRAME == 0, "whole frames per block");

int omdp_replay_udp_use_packet_ring(omdp_replay_udp_sink_t *sink, const char *iface, char *err, size_t errlen)
{
    int rc = omdp_replay_udp_use_packet_socket(sink, iface, err, errlen);
    if (rc < 0)
        return rc;
    int version = TPACKET_V2, one = 1;
    uint32_t per_block = TX_BLOCK / OMDP_REPLAY_TX_FRAME;
    struct tpacket_req req = {.tp_block_size = TX_BLOCK, .tp_block_nr = OMDP_REPLAY_TX_FRAMES / per_block,
                              .tp_frame_size = OMDP_REPLAY_TX_FRAME, .tp_frame_nr = OMDP_REPLAY_TX_FRAMES};
    const char *what = NULL;
    if (setsockopt(sink->pkt_fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
        what = "PACKET_VERSION";
    else if (setsockopt(sink->pkt_fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) != 0)
        what = "PACKET_VNET_HDR";
    else if (setsockopt(sink->pkt_fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) != 0)
        what = "PACKET_TX_RING";
    void *map = MAP_FAILED;
    size_t bytes = (size_t)req.tp_block_size * req.tp_block_nr;
    if (!what && (map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, sink->pkt_fd, 0)) ==
                     MAP_FAILED)
        what = "mmap";
    if (what) {
        int e = errno;
        snprintf(err, errlen, "packet socket TX ring: %s: %s", what, strerror(e));
        omdp_replay_packet_close(sink);
        return -e;
    }
    sink->pkt_ring = map;
    sink->pkt_ring_bytes = bytes;
    sink->pkt_ring_frames = req.tp_frame_nr;
    sink->pkt_ring_next = 0;
    return 0;
}

static inline struct tpacket2_hdr *frame_at(const omdp_replay_udp_sink_t *sink, uint32_t i)
{
    return (struct tpacket2_hdr *)(void *)(sink->pkt_ring + (size_t)i * OMDP_REPLAY_TX_FRAME);
}

static inline uint32_t status_of(struct tpacket2_hdr *h)
{
    return atomic_load_explicit(STATUS_WORD(h), memory_order_acquire);
}

/* Have the kernel send every frame marked; 0, or -1 with err when the socket cannot send. */
static int kick(omdp_replay_udp_sink_t *sink, char *err, size_t errlen)
{
    for (int tries = 0;; tries++) {
        if (send(sink->pkt_fd, NULL, 0, MSG_DONTWAIT) >= 0)
            return 0;
        int e = errno;
        if (e == EINTR || ((e == ENOBUFS || e == EAGAIN) && tries < KICK_RETRIES)) {
            omdp_replay_cpu_relax();
            continue;
        }
        snprintf(err, errlen, "packet socket TX ring: send: %s", strerror(e));
        return -1;
    }
}

int omdp_replay_packet_ring_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen)
{
    int marked = 0;
    for (int k = 0; k < n; k++) {
        omdp_replay_out_t *o = &out[k];
        o->ok = 0;
        if (o->line == 0 || o->line > OMDP_REPLAY_MAX_LINE || o->copy >= OMDP_REPLAY_COPIES ||
            sink->dest_ip[o->line][o->copy] == 0 || o->len > OMDP_REPLAY_PKT_FRAME - 42u)
            continue; /* no destination, or too long: a send error for the caller to count */
        struct tpacket2_hdr *h = frame_at(sink, sink->pkt_ring_next);
        uint32_t st = status_of(h);
        if (st != TP_STATUS_AVAILABLE && !(st & TP_STATUS_WRONG_FORMAT)) {
            /* still the kernel's (marked, or being sent): have it send what is marked, then wait */
            if (kick(sink, err, errlen) < 0)
                return -1;
            for (long spins = 0; (st = status_of(h)) != TP_STATUS_AVAILABLE && !(st & TP_STATUS_WRONG_FORMAT); spins++) {
                if (spins == FREE_WAIT_SPINS) {
                    snprintf(err, errlen, "packet socket TX ring: frame %u never came back from the kernel",
                             sink->pkt_ring_next);
                    return -1;
                }
                omdp_replay_cpu_relax();
            }
        }
        /* a virtio header whose hdr_len is the whole frame: the kernel copies the frame into
         * the packet's own buffer rather than pinning ring pages as fragments, which the
         * receive path would then have to pull its headers out of */
        uint8_t *v = (uint8_t *)h + TX_DATA;
        uint32_t len = omdp_replay_packet_build(sink, v + VNET_LEN, sink->dest_ip[o->line][o->copy],
                                                sink->dest_port[o->line][o->copy], o->data, o->len);
        struct virtio_net_hdr vh = {.flags = 0, .gso_type = VIRTIO_NET_HDR_GSO_NONE, .hdr_len = (uint16_t)len};
        memcpy(v, &vh, VNET_LEN); /* little-endian fields, as the kernel reads them on x86 and arm64 */
        h->tp_len = VNET_LEN + len;
        h->tp_snaplen = h->tp_len;
        atomic_store_explicit(STATUS_WORD(h), TP_STATUS_SEND_REQUEST, memory_order_release);
        sink->pkt_ring_next = sink->pkt_ring_next + 1 == sink->pkt_ring_frames ? 0 : sink->pkt_ring_next + 1;
        o->ok = 1; /* handed to the kernel by the kick below (a dead socket fails the sink) */
        marked++;
    }
    if (marked && kick(sink, err, errlen) < 0)
        return -1;
    return 0;
}
