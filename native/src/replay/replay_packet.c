/* Replay's multicast sender over a packet socket (replay.h omdp_replay_udp_use_packet_socket):
 * each datagram's Ethernet, IPv4 and UDP headers are written here and the frames go to the
 * interface's driver in one sendmmsg, past the qdisc (PACKET_QDISC_BYPASS). The kernel's
 * UDP/IP send path (socket lookup, route, IP id allocation, qdisc) is skipped; the receive
 * side (a loopback frame is received on the sender's CPU) is the same as for UDP. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "replay_sink.h"

#define ETH_HDR 14
#define IP_HDR 20
#define UDP_HDR 8
#define HDRS (ETH_HDR + IP_HDR + UDP_HDR)
#define LOOPBACK_SOURCE "192.0.2.1" /* TEST-NET-1: not local, so not a martian when received */

/* The interface holding IPv4 address `addr`: its name and flags. */
static int find_interface(struct in_addr addr, char name[IF_NAMESIZE], unsigned *flags)
{
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0)
        return -errno;
    int rc = -ENODEV;
    for (struct ifaddrs *i = all; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
            continue;
        if (((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr != addr.s_addr)
            continue;
        snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
        *flags = i->ifa_flags;
        rc = 0;
        break;
    }
    freeifaddrs(all);
    return rc;
}

static uint16_t ip_checksum(const uint8_t *h)
{
    uint32_t s = 0;
    for (int i = 0; i < IP_HDR; i += 2)
        s += (uint32_t)h[i] << 8 | h[i + 1];
    while (s >> 16)
        s = (s & 0xFFFF) + (s >> 16);
    return (uint16_t)~s;
}

int omdp_replay_udp_use_packet_socket(omdp_replay_udp_sink_t *sink, const char *iface, char *err, size_t errlen)
{
    struct in_addr ifaddr;
    char name[IF_NAMESIZE] = "";
    unsigned flags = 0;
    if (!sink || sink->fd < 0 || !iface || inet_pton(AF_INET, iface, &ifaddr) != 1) {
        snprintf(err, errlen, "packet socket: open the UDP sink on an IPv4 interface address first");
        return -EINVAL;
    }
    int rc = find_interface(ifaddr, name, &flags);
    if (rc < 0) {
        snprintf(err, errlen, "packet socket: no interface has address %s", iface);
        return rc;
    }
    int loopback = (flags & IFF_LOOPBACK) != 0;
    if (!loopback && sink->pkt_ttl == 0) {
        snprintf(err, errlen, "packet socket on %s: TTL 0 keeps datagrams on this host, which a packet socket "
                 "on a real interface cannot: give a TTL of at least 1", name);
        return -EINVAL;
    }
    /* the UDP socket's port is the datagrams' source port */
    struct sockaddr_in local = {.sin_family = AF_INET, .sin_addr = ifaddr, .sin_port = 0};
    socklen_t sl = sizeof local;
    if (bind(sink->fd, (struct sockaddr *)&local, sizeof local) != 0 ||
        getsockname(sink->fd, (struct sockaddr *)&local, &sl) != 0) {
        int e = errno;
        snprintf(err, errlen, "packet socket: binding the UDP socket to %s: %s", iface, strerror(e));
        return -e;
    }
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0); /* protocol 0: sends only */
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "packet socket on %s: %s%s", name, strerror(e),
                 e == EPERM ? " (needs CAP_NET_RAW)" : "");
        return -e;
    }
    int one = 1, sndbuf = 4 << 20;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
                             .sll_ifindex = (int)if_nametoindex(name)};
    const char *what = NULL;
    if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
        what = "PACKET_QDISC_BYPASS";
    else if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0)
        what = "SO_SNDBUF";
    else if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0)
        what = "SIOCGIFHWADDR";
    else if (bind(fd, (struct sockaddr *)&ll, sizeof ll) != 0)
        what = "bind";
    uint8_t *buf = what ? NULL : malloc((size_t)OMDP_REPLAY_BATCH_MAX * OMDP_REPLAY_PKT_FRAME);
    if (what || !buf) {
        int e = what ? errno : ENOMEM;
        snprintf(err, errlen, "packet socket on %s: %s: %s", name, what ? what : "frames", strerror(e));
        close(fd);
        return -e;
    }
    struct in_addr src = ifaddr;
    if (loopback)
        inet_pton(AF_INET, LOOPBACK_SOURCE, &src);
    sink->pkt_fd = fd;
    sink->pkt_buf = buf;
    sink->pkt_src_ip = src.s_addr;
    sink->pkt_src_port = local.sin_port;
    sink->pkt_ip_id = 0;
    memcpy(sink->pkt_src_mac, ifr.ifr_hwaddr.sa_data, 6);
    if (sink->pkt_ttl == 0)
        sink->pkt_ttl = 1; /* loopback: it stays on this host whatever the header says */
    return 0;
}

void omdp_replay_packet_close(omdp_replay_udp_sink_t *sink)
{
    if (sink->pkt_ring) /* the TX ring replay_packet_ring.c mapped, before its socket */
        munmap(sink->pkt_ring, sink->pkt_ring_bytes);
    sink->pkt_ring = NULL;
    sink->pkt_ring_bytes = 0;
    if (sink->pkt_fd >= 0)
        close(sink->pkt_fd);
    sink->pkt_fd = -1;
    free(sink->pkt_buf);
    sink->pkt_buf = NULL;
}

/* Headers and payload of one datagram into frame f (replay_sink.h); its length. */
uint32_t omdp_replay_packet_build(omdp_replay_udp_sink_t *sink, uint8_t *f, uint32_t dst_ip, uint16_t dst_port,
                                  const uint8_t *data, uint16_t len)
{
    const uint8_t *d = (const uint8_t *)&dst_ip; /* network order: d[0] is the first octet */
    uint8_t mac[6] = {0x01, 0x00, 0x5e, (uint8_t)(d[1] & 0x7f), d[2], d[3]}; /* RFC 1112 mapping */
    memcpy(f, mac, 6);
    memcpy(f + 6, sink->pkt_src_mac, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    uint8_t *ip = f + ETH_HDR;
    uint16_t tot = (uint16_t)(IP_HDR + UDP_HDR + len), id = htons(sink->pkt_ip_id++), zero = 0;
    uint16_t tot_n = htons(tot), udp_len = htons((uint16_t)(UDP_HDR + len)), port = htons(dst_port);
    ip[0] = 0x45;
    ip[1] = 0;
    memcpy(ip + 2, &tot_n, 2);
    memcpy(ip + 4, &id, 2);
    memcpy(ip + 6, &zero, 2); /* no fragment */
    ip[8] = sink->pkt_ttl;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 10, &zero, 2);
    memcpy(ip + 12, &sink->pkt_src_ip, 4);
    memcpy(ip + 16, &dst_ip, 4);
    uint16_t c = htons(ip_checksum(ip));
    memcpy(ip + 10, &c, 2);
    uint8_t *udp = ip + IP_HDR;
    memcpy(udp, &sink->pkt_src_port, 2);
    memcpy(udp + 2, &port, 2);
    memcpy(udp + 4, &udp_len, 2);
    memcpy(udp + 6, &zero, 2); /* no checksum (IPv4 allows it) */
    memcpy(udp + UDP_HDR, data, len);
    return HDRS + len;
}

int omdp_replay_packet_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen)
{
    struct mmsghdr msgs[OMDP_REPLAY_BATCH_MAX];
    struct iovec iov[OMDP_REPLAY_BATCH_MAX];
    int map[OMDP_REPLAY_BATCH_MAX];
    int m = 0;
    if (n > OMDP_REPLAY_BATCH_MAX)
        n = OMDP_REPLAY_BATCH_MAX;
    for (int k = 0; k < n; k++) {
        omdp_replay_out_t *o = &out[k];
        o->ok = 0;
        if (o->line == 0 || o->line > OMDP_REPLAY_MAX_LINE || o->copy >= OMDP_REPLAY_COPIES ||
            sink->dest_ip[o->line][o->copy] == 0 || o->len > OMDP_REPLAY_PKT_FRAME - HDRS)
            continue; /* no destination, or too long: a send error for the caller to count */
        uint8_t *f = sink->pkt_buf + (size_t)m * OMDP_REPLAY_PKT_FRAME;
        iov[m].iov_base = f;
        iov[m].iov_len = omdp_replay_packet_build(sink, f, sink->dest_ip[o->line][o->copy], sink->dest_port[o->line][o->copy],
                                     o->data, o->len);
        memset(&msgs[m], 0, sizeof msgs[m]);
        msgs[m].msg_hdr.msg_iov = &iov[m];
        msgs[m].msg_hdr.msg_iovlen = 1;
        map[m++] = k;
    }
    return omdp_replay_sendmmsg_all(sink->pkt_fd, msgs, m, map, out, 1, "packet socket", err, errlen);
}
