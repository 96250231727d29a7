/* Replay's multicast sender through an AF_XDP socket's TX ring (replay.h
 * omdp_replay_udp_use_xdp, docs/xdp.md). Each line and copy's Ethernet, IPv4 and UDP headers
 * are built once, when the sender is set up; a datagram is its line's headers with the three
 * length-dependent fields and the IP checksum patched, and its payload, written straight into
 * a UMEM frame. A batch is one run of TX descriptors and, where the kernel asks for it, one
 * wake-up: the driver (zero copy) or the kernel's generic path (copy mode: veth) takes the
 * frames, and they come back through the completion ring to a free list. No XDP program is
 * needed to send; the UDP socket only names the source port, as with the packet socket. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <xdp/xsk.h>

#include "replay_sink.h"
#include "replay_xdp.h"

#define HDRS 42u           /* Ethernet 14 + IPv4 20 + UDP 8 */
#define UMEM_FRAMES 4096u  /* 8 MiB: every frame may be in flight */
#define UMEM_FRAME 2048u
#define TX_DESCS 2048u
#define KICK_TRIES 1000000 /* wake-ups, or looks at the completion ring, before the sink gives up */
#define TX_BUDGET 256u     /* copy mode: descriptors one wake-up may send (the kernel's default is 32) */

#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9   /* Linux 6.17 */
#endif

_Static_assert(HDRS + OMDP_REPLAY_PKT_FRAME <= UMEM_FRAME, "a UMEM frame holds a whole datagram");

typedef struct replay_xdp {
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp;
    uint8_t *area;
    size_t area_bytes;
    uint64_t *free_frames;   /* addresses of the frames not in the kernel's hands */
    uint32_t n_free;
    int zerocopy;
    uint8_t hdr[OMDP_REPLAY_MAX_LINE + 1][OMDP_REPLAY_COPIES][HDRS]; /* per line and copy, built once */
    uint32_t hdr_sum[OMDP_REPLAY_MAX_LINE + 1][OMDP_REPLAY_COPIES];  /* their IP header's sum, lengths 0 */
} replay_xdp_t;

/* One's-complement sum of the 20-byte IP header's words (unfolded). */
static uint32_t ip_sum(const uint8_t *h)
{
    uint32_t s = 0;
    for (int i = 0; i < 20; i += 2)
        s += (uint32_t)h[i] << 8 | h[i + 1];
    return s;
}

/* Line `line` copy `c`'s headers, the lengths, IP id and checksum left 0. */
static void build_headers(omdp_replay_udp_sink_t *sink, replay_xdp_t *x, uint32_t line, uint32_t c)
{
    uint8_t *f = x->hdr[line][c];
    uint32_t dst_ip = sink->dest_ip[line][c];
    const uint8_t *d = (const uint8_t *)&dst_ip;
    uint8_t mac[6] = {0x01, 0x00, 0x5e, (uint8_t)(d[1] & 0x7f), d[2], d[3]}; /* RFC 1112 mapping */
    uint16_t port = htons(sink->dest_port[line][c]);
    memset(f, 0, HDRS);
    memcpy(f, mac, 6);
    memcpy(f + 6, sink->pkt_src_mac, 6);
    f[12] = 0x08;
    f[14] = 0x45;
    f[22] = sink->pkt_ttl;
    f[23] = IPPROTO_UDP;
    memcpy(f + 26, &sink->pkt_src_ip, 4);
    memcpy(f + 30, &dst_ip, 4);
    memcpy(f + 34, &sink->pkt_src_port, 2);
    memcpy(f + 36, &port, 2);
    x->hdr_sum[line][c] = ip_sum(f + 14);
}

/* The UMEM (every frame free) and a TX-only socket, zero copy if the driver can, else copy mode. */
static int make_socket(replay_xdp_t *x, const char *ifname, uint32_t queue, char *err, size_t errlen)
{
    x->area_bytes = (size_t)UMEM_FRAMES * UMEM_FRAME;
    void *area = mmap(NULL, x->area_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    x->free_frames = malloc(UMEM_FRAMES * sizeof *x->free_frames);
    if (area == MAP_FAILED || !x->free_frames) {
        snprintf(err, errlen, "xdp: UMEM of %zu bytes: %s", x->area_bytes, strerror(errno));
        if (area != MAP_FAILED)
            munmap(area, x->area_bytes);
        return -ENOMEM;
    }
    x->area = area;
    for (uint32_t i = 0; i < UMEM_FRAMES; i++)
        x->free_frames[i] = (uint64_t)i * UMEM_FRAME;
    x->n_free = UMEM_FRAMES;
    struct xsk_umem_config ucfg = {.fill_size = 64, .comp_size = UMEM_FRAMES, .frame_size = UMEM_FRAME,
                                   .frame_headroom = 0, .flags = 0};
    const uint16_t modes[2] = {XDP_ZEROCOPY, XDP_COPY};
    int rc = 0;
    for (int m = 0; m < 2; m++) {
        if ((rc = xsk_umem__create(&x->umem, x->area, x->area_bytes, &x->fill, &x->comp, &ucfg)) != 0) {
            snprintf(err, errlen, "xdp: UMEM: %s", strerror(-rc));
            return rc;
        }
        struct xsk_socket_config scfg = {.rx_size = 0, .tx_size = TX_DESCS,
                                         .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                         .bind_flags = (uint16_t)(modes[m] | XDP_USE_NEED_WAKEUP)};
        if ((rc = xsk_socket__create(&x->xsk, ifname, queue, x->umem, NULL, &x->tx, &scfg)) == 0) {
            x->zerocopy = m == 0;
            if (!x->zerocopy) {
                /* copy mode: one wake-up takes a whole batch where the kernel has the option
                 * (before Linux 6.17 it sends 32 per wake-up, and flush_tx wakes it again) */
                unsigned budget = TX_BUDGET;
                setsockopt(xsk_socket__fd(x->xsk), SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof budget);
            }
            return 0;
        }
        xsk_umem__delete(x->umem);
        x->umem = NULL;
    }
    snprintf(err, errlen, "xdp: socket on %s queue %u: %s%s", ifname, queue, strerror(-rc),
             -rc == EPERM ? " (needs CAP_NET_RAW, or root)" : "");
    return rc;
}

int omdp_replay_udp_use_xdp(omdp_replay_udp_sink_t *sink, const char *iface, const char *ifname, uint32_t queue,
                            char *err, size_t errlen)
{
    struct in_addr ifaddr;
    if (!sink || sink->fd < 0 || !iface || inet_pton(AF_INET, iface, &ifaddr) != 1 || !ifname ||
        strlen(ifname) >= IF_NAMESIZE) {
        snprintf(err, errlen, "xdp: open the UDP sink on an IPv4 interface address, and name an interface, first");
        return -EINVAL;
    }
    if (!if_nametoindex(ifname)) {
        snprintf(err, errlen, "xdp: no interface named '%s'", ifname);
        return -ENODEV;
    }
    if (sink->pkt_ttl == 0) {
        snprintf(err, errlen, "xdp on %s: TTL 0 keeps datagrams on this host, which AF_XDP on an interface "
                 "cannot: give a TTL of at least 1", ifname);
        return -EINVAL;
    }
    struct sockaddr_in local = {.sin_family = AF_INET, .sin_addr = ifaddr, .sin_port = 0};
    socklen_t sl = sizeof local;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    if (bind(sink->fd, (struct sockaddr *)&local, sizeof local) != 0 ||
        getsockname(sink->fd, (struct sockaddr *)&local, &sl) != 0 || ioctl(sink->fd, SIOCGIFHWADDR, &ifr) != 0) {
        int e = errno;
        snprintf(err, errlen, "xdp: the UDP socket on %s, or %s's MAC address: %s", iface, ifname, strerror(e));
        return -e;
    }
    replay_xdp_t *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    sink->xdp = x;
    int rc = make_socket(x, ifname, queue, err, errlen);
    if (rc < 0) {
        omdp_replay_xdp_close(sink);
        return rc;
    }
    sink->pkt_src_ip = ifaddr.s_addr;
    sink->pkt_src_port = local.sin_port;
    memcpy(sink->pkt_src_mac, ifr.ifr_hwaddr.sa_data, 6);
    for (uint32_t line = 1; line <= OMDP_REPLAY_MAX_LINE; line++)
        for (uint32_t c = 0; c < OMDP_REPLAY_COPIES; c++)
            if (sink->dest_ip[line][c])
                build_headers(sink, x, line, c);
    return 0;
}

int omdp_replay_udp_xdp_zerocopy(const omdp_replay_udp_sink_t *sink)
{
    return sink && sink->xdp ? ((const replay_xdp_t *)sink->xdp)->zerocopy : -1;
}

void omdp_replay_xdp_close(omdp_replay_udp_sink_t *sink)
{
    replay_xdp_t *x = sink->xdp;
    if (!x)
        return;
    if (x->xsk)
        xsk_socket__delete(x->xsk);
    if (x->umem)
        xsk_umem__delete(x->umem);
    if (x->area)
        munmap(x->area, x->area_bytes);
    free(x->free_frames);
    free(x);
    sink->xdp = NULL;
}

/* Frames the kernel is done with back to the free list. */
static void reclaim(replay_xdp_t *x)
{
    uint32_t idx = 0, n = (uint32_t)xsk_ring_cons__peek(&x->comp, UMEM_FRAMES, &idx);
    for (uint32_t i = 0; i < n; i++)
        x->free_frames[x->n_free++] = xsk_umem__extract_addr(*xsk_ring_cons__comp_addr(&x->comp, idx + i));
    xsk_ring_cons__release(&x->comp, n);
}

/* Have the kernel take every descriptor on the TX ring (copy mode sends a few dozen per
 * wake-up); 0, or -1 with err when the socket cannot send. */
static int flush_tx(replay_xdp_t *x, char *err, size_t errlen)
{
    for (long tries = 0; xsk_prod_nb_free(&x->tx, TX_DESCS) < TX_DESCS; tries++) {
        if (tries == KICK_TRIES) {
            snprintf(err, errlen, "xdp: the kernel stopped taking frames from the TX ring");
            return -1;
        }
        if (!xsk_ring_prod__needs_wakeup(&x->tx) && x->zerocopy) {
            omdp_replay_cpu_relax();
            continue;
        }
        if (sendto(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN &&
            errno != EBUSY && errno != ENOBUFS && errno != EINTR) {
            snprintf(err, errlen, "xdp: sendto: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

int omdp_replay_xdp_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen)
{
    replay_xdp_t *x = sink->xdp;
    uint32_t want = 0;
    for (int k = 0; k < n; k++) {
        omdp_replay_out_t *o = &out[k];
        o->ok = 0;
        if (o->line == 0 || o->line > OMDP_REPLAY_MAX_LINE || o->copy >= OMDP_REPLAY_COPIES ||
            sink->dest_ip[o->line][o->copy] == 0 || o->len > OMDP_REPLAY_PKT_FRAME - HDRS)
            continue; /* no destination, or too long: a send error for the caller to count */
        o->ok = 2;    /* to send */
        want++;
    }
    reclaim(x);
    for (long tries = 0; x->n_free < want; tries++) { /* only with every frame still in flight */
        if (tries == KICK_TRIES || flush_tx(x, err, errlen) < 0) {
            if (tries == KICK_TRIES)
                snprintf(err, errlen, "xdp: UMEM frames never came back from the kernel");
            return -1;
        }
        reclaim(x);
    }
    uint32_t idx = 0;
    if (want && xsk_ring_prod__reserve(&x->tx, want, &idx) != want) {
        snprintf(err, errlen, "xdp: no room for %u descriptors on the TX ring", want);
        return -1;
    }
    uint32_t i = 0;
    for (int k = 0; k < n; k++) {
        omdp_replay_out_t *o = &out[k];
        if (o->ok != 2)
            continue;
        uint64_t addr = x->free_frames[--x->n_free];
        uint8_t *f = x->area + addr;
        memcpy(f, x->hdr[o->line][o->copy], HDRS);
        uint16_t tot = (uint16_t)(28u + o->len), id = sink->pkt_ip_id++;
        uint32_t s = x->hdr_sum[o->line][o->copy] + tot + id;
        s = (s & 0xFFFF) + (s >> 16);
        s = (s & 0xFFFF) + (s >> 16);
        uint16_t tot_n = htons(tot), id_n = htons(id), c = htons((uint16_t)~s), ulen = htons((uint16_t)(8u + o->len));
        memcpy(f + 16, &tot_n, 2);
        memcpy(f + 18, &id_n, 2);
        memcpy(f + 24, &c, 2);
        memcpy(f + 38, &ulen, 2);
        memcpy(f + HDRS, o->data, o->len);
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i++);
        d->addr = addr;
        d->len = HDRS + o->len;
        o->ok = 1;
    }
    if (!want)
        return 0;
    xsk_ring_prod__submit(&x->tx, want);
    return flush_tx(x, err, errlen);
}
