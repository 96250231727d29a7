/* The multicast input's packet-ring receive (feed_handler.h OMDP_FH_RECEIVE_PACKET_RING): one
 * AF_PACKET socket with a mapped RX ring (TPACKET_V2) on the interface serves every line and
 * copy. A classic BPF filter keeps only unfragmented IPv4/UDP frames to the lines' ports, the
 * kernel writes each into the next ring frame and flips its status word, and the handler takes
 * frames by reading status words: no syscall per datagram or per batch, and one queue instead
 * of a socket per line and copy. The lines' UDP sockets stay open only for their IGMP joins
 * (so a real NIC delivers the groups); a drop-all socket filter discards their own copies
 * before they are queued.
 *
 * TPACKET_V2, not V3: V3 hands frames over a block at a time, when the block is full or its
 * retire timer (milliseconds) fires, which would hold a quiet line's packet for that long. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "omdp/stamp_clock.h"
#include "feed_handler_internal.h"

/* The frame's status word, shared with the kernel: reached through an _Atomic view of the
 * plain field, as the other shared layouts are (native/README.md). */
#define STATUS_WORD(h) ((_Atomic uint32_t *)(void *)&(h)->tp_status)

#define RX_FRAME 2048u             /* ring frame: header + an Ethernet frame of <= ~1,980 bytes */
#define RX_BLOCK (4u << 20)        /* ring block (the kernel's unit of allocation) */
#define ETH_LEN 14u
#define IP_MIN 20u
#define UDP_LEN 8u

/* The interface holding IPv4 address `addr` (network order): its index, 0 if none. */
static unsigned iface_index(uint32_t addr, char name[IF_NAMESIZE])
{
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0)
        return 0;
    unsigned idx = 0;
    for (struct ifaddrs *i = all; i && !idx; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
            continue;
        if (((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr != addr)
            continue;
        snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
        idx = if_nametoindex(i->ifa_name);
    }
    freeifaddrs(all);
    return idx;
}

/* Every line's copy: its group and port (from what its join socket is bound to), and the
 * drop-all filter on that socket. */
int omdp_fh_rxring_collect_dests(feed_handler_t *fh, char *err, size_t errlen)
{
    static struct sock_filter drop_all[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
    struct sock_fprog drop = {.len = 1, .filter = drop_all};
    fh->rx_dests = calloc((size_t)fh->n_lines * OMDP_FH_COPIES, sizeof *fh->rx_dests);
    if (!fh->rx_dests) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < fh->n_lines; i++)
        for (uint32_t c = 0; c < OMDP_FH_COPIES; c++) {
            int fd = fh->lines[i].fd[c];
            if (fd < 0)
                continue;
            struct sockaddr_in sa;
            socklen_t sl = sizeof sa;
            if (getsockname(fd, (struct sockaddr *)&sa, &sl) != 0 || sa.sin_family != AF_INET || sa.sin_port == 0) {
                snprintf(err, errlen, "line %u copy %c: the join socket (fd %d) is not a bound UDP socket",
                         fh->lines[i].line, "AB"[c], fd);
                return -1;
            }
            if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &drop, sizeof drop) != 0) {
                snprintf(err, errlen, "line %u copy %c: drop-all filter on the join socket: %s", fh->lines[i].line,
                         "AB"[c], strerror(errno));
                return -1;
            }
            fh_rx_dest_t *d = &fh->rx_dests[fh->n_rx_dests++];
            d->ip = sa.sin_addr.s_addr;
            d->port = ntohs(sa.sin_port);
            d->line_index = (uint8_t)i;
            d->copy = (uint8_t)c;
        }
    return 0;
}

/* The ring's filter: incoming (not outgoing) unfragmented IPv4/UDP to one of the lines' ports,
 * kept whole; everything else dropped in the kernel before it is copied. */
static int attach_filter(feed_handler_t *fh, int fd, char *err, size_t errlen)
{
    uint32_t np = 0;
    uint16_t ports[2 * (OMDP_FH_MAX_LINE + 1)];
    for (uint32_t k = 0; k < fh->n_rx_dests; k++) {
        uint32_t j = 0;
        while (j < np && ports[j] != fh->rx_dests[k].port)
            j++;
        if (j == np)
            ports[np++] = fh->rx_dests[k].port;
    }
    /* 0-7: checks and the port's load; 8..8+np-1: one test per port; then drop, accept.
     * A jump's offset counts from the next instruction. */
    struct sock_filter f[10 + 2 * (OMDP_FH_MAX_LINE + 1)];
    uint32_t n = 0, drop_at = 8 + np, accept_at = 9 + np;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, (uint8_t)(drop_at - 2), 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_LEN + 9); /* IP protocol */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, (uint8_t)(drop_at - 4));
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_ABS, ETH_LEN + 6); /* flags, fragment offset */
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x3fff, (uint8_t)(drop_at - 6), 0);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, ETH_LEN);    /* X = IP header length */
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_H | BPF_IND, ETH_LEN + 2); /* UDP destination port */
    for (uint32_t j = 0; j < np; j++) {
        f[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ports[j], (uint8_t)(accept_at - n - 1), 0);
        n++;
    }
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);      /* drop_at */
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xFFFF); /* accept_at: the whole frame */
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
        snprintf(err, errlen, "packet ring: SO_ATTACH_FILTER (%u ports): %s", np, strerror(errno));
        return -1;
    }
    return 0;
}

int omdp_fh_rxring_open(feed_handler_t *fh, char *err, size_t errlen)
{
    char name[IF_NAMESIZE] = "";
    struct in_addr ia = {.s_addr = fh->rx_iface_addr};
    char addr[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &ia, addr, sizeof addr);
    unsigned ifindex = iface_index(fh->rx_iface_addr, name);
    if (!ifindex) {
        snprintf(err, errlen, "packet ring: no interface has address %s", addr);
        return -1;
    }
    if (fh->rx_ring_bytes < RX_BLOCK || fh->rx_ring_bytes % RX_BLOCK) {
        snprintf(err, errlen, "packet ring: rx_ring_bytes %u is not a positive multiple of %u", fh->rx_ring_bytes,
                 RX_BLOCK);
        return -1;
    }
    if (omdp_fh_rxring_collect_dests(fh, err, errlen) < 0)
        return -1;
    /* protocol 0: nothing is queued until the filter and ring are in place and it is bound */
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "packet ring on %s: socket(AF_PACKET): %s%s", name, strerror(e),
                 e == EPERM ? " (needs CAP_NET_RAW; receive = \"sockets\" does not)" : "");
        return -1;
    }
    fh->rx_fd = fd;
    if (attach_filter(fh, fd, err, errlen) < 0)
        return -1;
    int version = TPACKET_V2;
    struct tpacket_req req = {.tp_block_size = RX_BLOCK, .tp_block_nr = fh->rx_ring_bytes / RX_BLOCK,
                              .tp_frame_size = RX_FRAME,
                              .tp_frame_nr = (fh->rx_ring_bytes / RX_BLOCK) * (RX_BLOCK / RX_FRAME)};
    const char *what = NULL;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0)
        what = "PACKET_VERSION";
    else if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0)
        what = "PACKET_RX_RING";
    if (what) {
        snprintf(err, errlen, "packet ring on %s: %s: %s", name, what, strerror(errno));
        return -1;
    }
    size_t bytes = (size_t)req.tp_block_size * req.tp_block_nr;
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "packet ring on %s: mmap of %zu bytes: %s", name, bytes, strerror(errno));
        return -1;
    }
    fh->rx_map = map;
    fh->rx_map_bytes = bytes;
    fh->rx_frames = req.tp_frame_nr;
    fh->rx_next = 0;
    struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP), .sll_ifindex = (int)ifindex};
    if (bind(fd, (struct sockaddr *)&ll, sizeof ll) != 0) {
        snprintf(err, errlen, "packet ring: bind to %s: %s", name, strerror(errno));
        return -1;
    }
    return 0;
}

void omdp_fh_rxring_close(feed_handler_t *fh)
{
    if (fh->rx_map)
        munmap(fh->rx_map, fh->rx_map_bytes);
    fh->rx_map = NULL;
    if (fh->rx_fd >= 0)
        close(fh->rx_fd);
    fh->rx_fd = -1;
    free(fh->rx_dests);
    fh->rx_dests = NULL;
    fh->n_rx_dests = 0;
}

/* The kernel's count of frames it dropped for want of a free ring frame (since the last
 * look), added to rx_ring_drops. Called when a frame says frames were lost, and at the end. */
void omdp_fh_rxring_count_drops(feed_handler_t *fh)
{
    struct tpacket_stats st;
    socklen_t sl = sizeof st;
    if (fh->rx_fd >= 0 && getsockopt(fh->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl) == 0)
        fh->rx_ring_drops += st.tp_drops;
}

/* Line index and copy of a frame to (ip, port); -1 when none of this handler's. */
static inline int find_dest(feed_handler_t *fh, uint32_t ip, uint16_t port, uint32_t *copy)
{
    uint32_t k = fh->rx_last_dest;
    if (k < fh->n_rx_dests && fh->rx_dests[k].port == port && fh->rx_dests[k].ip == ip) {
        *copy = fh->rx_dests[k].copy;
        return fh->rx_dests[k].line_index;
    }
    for (k = 0; k < fh->n_rx_dests; k++)
        if (fh->rx_dests[k].port == port && fh->rx_dests[k].ip == ip) {
            fh->rx_last_dest = k;
            *copy = fh->rx_dests[k].copy;
            return fh->rx_dests[k].line_index;
        }
    return -1;
}

/* One ring frame (`snap` bytes of Ethernet frame at `f`, `wire` long on the wire): its UDP
 * payload to the packet path, or counted as bad / not this handler's. */
int omdp_fh_rxring_take_frame(feed_handler_t *fh, const uint8_t *f, uint32_t snap, uint32_t wire, int64_t fh_in,
                              const omdp_emitter_t *em)
{
    if (snap != wire || snap < ETH_LEN + IP_MIN + UDP_LEN) {
        fh->bad_frames++; /* cut short by the ring frame, or too short for the headers */
        return OMDP_OK;
    }
    const uint8_t *ip = f + ETH_LEN;
    uint32_t room = snap - ETH_LEN, ihl = (uint32_t)(ip[0] & 0x0f) * 4u;
    uint32_t tot = (uint32_t)ip[2] << 8 | ip[3];
    /* the IP total length bounds the datagram: a NIC pads short frames */
    if ((ip[0] >> 4) != 4 || ihl < IP_MIN || tot > room || tot < ihl + UDP_LEN || ip[9] != IPPROTO_UDP) {
        fh->bad_frames++;
        return OMDP_OK;
    }
    const uint8_t *udp = ip + ihl;
    uint32_t ulen = (uint32_t)udp[4] << 8 | udp[5];
    if (ulen < UDP_LEN || ulen > tot - ihl) {
        fh->bad_frames++;
        return OMDP_OK;
    }
    uint32_t dst_ip;
    memcpy(&dst_ip, ip + 16, 4);
    uint16_t port = (uint16_t)(udp[2] << 8 | udp[3]), copy = 0;
    uint32_t c = 0;
    int li = find_dest(fh, dst_ip, port, &c);
    copy = (uint16_t)c;
    if (li < 0) {
        fh->unknown_line++; /* a port of ours on a group that is not */
        return OMDP_OK;
    }
    return omdp_fh_process_packet(fh, (uint32_t)li, copy, udp + UDP_LEN, ulen - UDP_LEN, fh_in, 0, em);
}

/* The ring frame after frame i. */
static inline uint32_t frame_after(const feed_handler_t *fh, uint32_t i)
{
    return i + 1 == fh->rx_frames ? 0 : i + 1;
}

/* While a frame is taken, the first lines of the next are asked for: the kernel wrote it on
 * the sender's core (loopback) or the NIC's interrupt core, so each line is a transfer, and
 * a packet's decode is time enough for them to arrive (as the Vega ring input does,
 * feed_handler_input.c). A frame the kernel has not filled yet costs nothing more. */
#define RX_PREFETCH_LINES 8 /* frame header, Ethernet/IPv4/UDP headers and a typical packet */

int omdp_fh_rxring_poll(feed_handler_t *fh, const omdp_emitter_t *em, int *produced)
{
    for (uint32_t k = 0; k < fh->batch; k++) {
        uint8_t *frame = fh->rx_map + (size_t)fh->rx_next * RX_FRAME;
        struct tpacket2_hdr *h = (struct tpacket2_hdr *)(void *)frame;
        uint32_t status = atomic_load_explicit(STATUS_WORD(h), memory_order_acquire);
        if (!(status & TP_STATUS_USER))
            break;
        int64_t fh_in = omdp_stamp_ns(); /* the handler has the packet from now on */
        omdp_fh_prefetch_lines(fh->rx_map + (size_t)frame_after(fh, fh->rx_next) * RX_FRAME, 64u * RX_PREFETCH_LINES);
        fh->receive_calls++;
        if (status & TP_STATUS_LOSING)
            omdp_fh_rxring_count_drops(fh);
        int rc = OMDP_OK;
        uint32_t mac = h->tp_mac, snap = h->tp_snaplen;
        if (mac < sizeof *h || mac > RX_FRAME || snap > RX_FRAME - mac)
            fh->bad_frames++; /* not where a frame can be: never from the kernel */
        else
            rc = omdp_fh_rxring_take_frame(fh, frame + mac, snap, h->tp_len, fh_in, em);
        atomic_store_explicit(STATUS_WORD(h), TP_STATUS_KERNEL, memory_order_release); /* the frame is the kernel's again */
        fh->rx_next = frame_after(fh, fh->rx_next);
        if (rc < 0)
            return rc;
        *produced = 1;
    }
    return omdp_fh_flush(fh, em); /* what this poll found leaves now: no waiting for more */
}
