/* Replay's UDP multicast sink: one socket, per-datagram destinations, sendmmsg batches. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "replay_sink.h"
#include "replay_xdp.h"

/* Retries of a datagram the kernel refuses for want of buffer space before it counts as a
 * send error (the loop is late by then anyway; the count makes the loss visible). */

int omdp_replay_udp_open(omdp_replay_udp_sink_t *sink, const char *iface, int ttl, char *err, size_t errlen)
{
    memset(sink, 0, sizeof *sink);
    sink->fd = -1;
    sink->pkt_fd = -1;
    struct in_addr ifaddr;
    if (!iface || inet_pton(AF_INET, iface, &ifaddr) != 1) {
        snprintf(err, errlen, "interface address %s is not an IPv4 dotted quad", iface ? iface : "(null)");
        return -EINVAL;
    }
    if (ttl < 0 || ttl > 255) {
        snprintf(err, errlen, "multicast TTL %d is outside 0..255", ttl);
        return -EINVAL;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "socket: %s", strerror(e));
        return -e;
    }
    unsigned char cttl = (unsigned char)ttl, loop = 1;
    int sndbuf = 4 << 20;
    const char *what = NULL;
    if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr) != 0)
        what = "IP_MULTICAST_IF";
    else if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &cttl, sizeof cttl) != 0)
        what = "IP_MULTICAST_TTL";
    else if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0)
        what = "IP_MULTICAST_LOOP";
    else if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) != 0)
        what = "SO_SNDBUF";
    if (what) {
        int e = errno;
        snprintf(err, errlen, "setsockopt %s on %s: %s", what, iface, strerror(e));
        close(fd);
        return -e;
    }
    sink->fd = fd;
    sink->pkt_fd = -1;
    sink->pkt_ttl = cttl;
    return 0;
}

int omdp_replay_udp_set_dest(omdp_replay_udp_sink_t *sink, uint32_t line, uint32_t copy, const char *group, uint32_t port)
{
    struct in_addr a;
    if (line == 0 || line > OMDP_REPLAY_MAX_LINE || copy >= OMDP_REPLAY_COPIES || port == 0 || port > 65535 || !group ||
        inet_pton(AF_INET, group, &a) != 1)
        return -EINVAL;
    if (sink->dest_ip[line][copy] == 0)
        sink->n_dest++;
    sink->dest_ip[line][copy] = a.s_addr;
    sink->dest_port[line][copy] = (uint16_t)port;
    return 0;
}

void omdp_replay_udp_close(omdp_replay_udp_sink_t *sink)
{
    if (sink->fd >= 0)
        close(sink->fd);
    sink->fd = -1;
    omdp_replay_xdp_close(sink);
    omdp_replay_packet_close(sink);
}

int omdp_replay_udp_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen)
{
    struct mmsghdr msgs[OMDP_REPLAY_BATCH_MAX];
    struct iovec iov[OMDP_REPLAY_BATCH_MAX];
    struct sockaddr_in addr[OMDP_REPLAY_BATCH_MAX];
    int map[OMDP_REPLAY_BATCH_MAX]; /* msgs index -> out index */
    int m = 0;
    if (n > OMDP_REPLAY_BATCH_MAX)
        n = OMDP_REPLAY_BATCH_MAX;
    if (sink->xdp)
        return omdp_replay_xdp_send(sink, out, n, err, errlen);
    if (sink->pkt_ring)
        return omdp_replay_packet_ring_send(sink, out, n, err, errlen);
    if (sink->pkt_fd >= 0)
        return omdp_replay_packet_send(sink, out, n, err, errlen);
    for (int k = 0; k < n; k++) {
        omdp_replay_out_t *o = &out[k];
        o->ok = 0;
        if (o->line == 0 || o->line > OMDP_REPLAY_MAX_LINE || o->copy >= OMDP_REPLAY_COPIES ||
            sink->dest_ip[o->line][o->copy] == 0)
            continue; /* no destination: a send error for the caller to count */
        memset(&addr[m], 0, sizeof addr[m]);
        addr[m].sin_family = AF_INET;
        addr[m].sin_addr.s_addr = sink->dest_ip[o->line][o->copy];
        addr[m].sin_port = htons(sink->dest_port[o->line][o->copy]);
        iov[m].iov_base = (void *)o->data;
        iov[m].iov_len = o->len;
        memset(&msgs[m], 0, sizeof msgs[m]);
        msgs[m].msg_hdr.msg_name = &addr[m];
        msgs[m].msg_hdr.msg_namelen = sizeof addr[m];
        msgs[m].msg_hdr.msg_iov = &iov[m];
        msgs[m].msg_hdr.msg_iovlen = 1;
        map[m++] = k;
    }
    return omdp_replay_sendmmsg_all(sink->fd, msgs, m, map, out, 0, "UDP socket", err, errlen);
}
