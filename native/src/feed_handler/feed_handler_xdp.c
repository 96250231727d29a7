/* The multicast input's AF_XDP receive (feed_handler.h OMDP_FH_RECEIVE_XDP, docs/xdp.md): one
 * XDP socket bound to one receive queue of an interface serves every line and copy. A tiny
 * XDP program, assembled here (no BPF compiler is needed at build time), redirects the
 * unfragmented IPv4/UDP frames to the lines' ports into the socket through an XSKMAP and
 * passes everything else to the kernel's stack (ARP, IGMP, other traffic on the queue). The
 * driver (zero copy) or the kernel (copy mode, where the driver has no zero copy: veth) writes
 * each frame into a UMEM frame; the handler peeks a batch of RX descriptors, hands each UDP
 * payload to the packet path where it lies in the UMEM (no copy), and gives the frames back
 * through the fill ring. The program is attached through a BPF link, which the kernel drops
 * with its last file descriptor: the interface is left clean on a stop, an error or a kill.
 *
 * The lines' UDP sockets stay open for their IGMP joins, as with the packet ring; frames the
 * program redirected never reach them. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <xdp/xsk.h>

#include "omdp/stamp_clock.h"
#include "feed_handler_xdp.h"

#define UMEM_FRAME 2048u   /* less the kernel's 256 bytes of headroom: an Ethernet frame of <= 1,792 bytes */
#define COMP_DESCS 64u     /* no TX on this socket: the smallest ring */
#define BUSY_POLL_US 20
#define PROG_MAX (24 + 2 * (OMDP_FH_MAX_LINE + 1))

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the XDP program compares network-order fields "
                                                          "loaded little-endian");

struct fh_xdp {
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill;
    struct xsk_ring_cons comp, rx;
    uint8_t *area;
    size_t area_bytes;
    int map_fd, prog_fd, link_fd;
    uint32_t frames;                 /* of UMEM_FRAME bytes, a power of two: all on the fill ring when idle */
    int zerocopy;                    /* bound in zero-copy mode (else copy mode) */
    uint32_t idle_polls;             /* empty polls, for the look at the kernel's drop counts */
};

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})

/* A network-order 16-bit value as a little-endian half-word load reads it. */
static int32_t wire16(uint16_t v)
{
    return (int32_t)(uint16_t)(v << 8 | v >> 8);
}

/* The XDP program: frames of `np` UDP ports to the XSKMAP entry of their receive queue, the
 * rest to the stack (XDP_PASS, also when the queue has no socket). Its length. */
static uint32_t assemble(struct bpf_insn *p, const uint16_t *ports, uint32_t np, int map_fd)
{
    uint32_t n = 0, pass = 15 + np, redirect = pass + 2;
    /* r2 = data, r3 = data_end; Ethernet + IPv4 (no options) + UDP headers all present */
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0);
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 3, 1, 4, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 4, 2, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, 4, 0, 0, 42);
    p[n] = INSN(BPF_JMP | BPF_JGT | BPF_X, 4, 3, (int16_t)(pass - n - 1), 0), n++;
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_H, 5, 2, 12, 0);                       /* EtherType */
    p[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 5, 0, (int16_t)(pass - n - 1), wire16(0x0800)), n++;
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_B, 5, 2, 14, 0);                       /* version, IHL */
    p[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 5, 0, (int16_t)(pass - n - 1), 0x45), n++;
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_B, 5, 2, 23, 0);                       /* protocol */
    p[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 5, 0, (int16_t)(pass - n - 1), 17), n++;
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_H, 5, 2, 20, 0);                       /* flags, fragment */
    p[n++] = INSN(BPF_ALU64 | BPF_AND | BPF_K, 5, 0, 0, wire16(0x3fff));
    p[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 5, 0, (int16_t)(pass - n - 1), 0), n++;
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_H, 5, 2, 36, 0);                       /* UDP destination port */
    for (uint32_t j = 0; j < np; j++, n++)
        p[n] = INSN(BPF_JMP | BPF_JEQ | BPF_K, 5, 0, (int16_t)(redirect - n - 1), wire16(ports[j]));
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_PASS);             /* pass */
    p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 16, 0);                       /* redirect: rx_queue_index */
    p[n++] = INSN(BPF_LD | BPF_IMM | BPF_DW, 1, BPF_PSEUDO_MAP_FD, 0, map_fd);
    p[n++] = INSN(0, 0, 0, 0, 0);
    p[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, XDP_PASS);             /* no socket: the stack */
    p[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map);
    p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    return n;
}

/* The XSKMAP and the program, loaded and attached to `ifindex` through a BPF link. */
static int attach_program(feed_handler_t *fh, struct fh_xdp *x, unsigned ifindex, char *err, size_t errlen)
{
    uint16_t ports[2 * (OMDP_FH_MAX_LINE + 1)];
    uint32_t np = 0;
    for (uint32_t k = 0; k < fh->n_rx_dests; k++) {
        uint32_t j = 0;
        while (j < np && ports[j] != fh->rx_dests[k].port)
            j++;
        if (j == np)
            ports[np++] = fh->rx_dests[k].port;
    }
    x->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "omdp_xsks", 4, 4, fh->xdp_queue + 1, NULL);
    if (x->map_fd < 0) {
        int e = errno;
        snprintf(err, errlen, "xdp on %s: XSKMAP: %s%s", fh->xdp_ifname, strerror(e),
                 e == EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN, or root)" : "");
        return -1;
    }
    struct bpf_insn prog[PROG_MAX];
    uint32_t n = assemble(prog, ports, np, x->map_fd);
    char log[4096] = "";
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = log, .log_size = sizeof log, .log_level = 0);
    x->prog_fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "omdp_lines", "GPL", prog, n, &opts);
    if (x->prog_fd < 0) {
        int e = errno;
        snprintf(err, errlen, "xdp on %s: loading the XDP program: %s %s", fh->xdp_ifname, strerror(e), log);
        return -1;
    }
    x->link_fd = bpf_link_create(x->prog_fd, (int)ifindex, BPF_XDP, NULL);
    if (x->link_fd < 0) {
        int e = errno;
        snprintf(err, errlen, "xdp on %s: attaching the XDP program: %s%s", fh->xdp_ifname, strerror(e),
                 e == EBUSY || e == EEXIST ? " (another XDP program is attached; xdp-loader status shows it)" : "");
        return -1;
    }
    return 0;
}

/* The UMEM (every frame on the fill ring) and the socket, bound zero copy if the driver
 * can, else in copy mode. */
static int make_socket(feed_handler_t *fh, struct fh_xdp *x, char *err, size_t errlen)
{
    /* the UMEM is the packet ring's rx_ring_bytes: frames a power of two, and an RX ring as long:
     * a handler off its CPU loses packets only once every frame waits on the RX ring (with a
     * ring half as long, half the frames sat idle on the fill ring while the ring overflowed) */
    x->frames = 1u << (31 - __builtin_clz(fh->rx_ring_bytes / UMEM_FRAME));
    x->area_bytes = (size_t)x->frames * UMEM_FRAME;
    void *area = mmap(NULL, x->area_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (area == MAP_FAILED) {
        snprintf(err, errlen, "xdp: UMEM of %zu bytes: %s", x->area_bytes, strerror(errno));
        return -1;
    }
    x->area = area;
    struct xsk_umem_config ucfg = {.fill_size = x->frames, .comp_size = COMP_DESCS, .frame_size = UMEM_FRAME,
                                   .frame_headroom = 0, .flags = 0};
    const uint16_t modes[2] = {XDP_ZEROCOPY, XDP_COPY};
    int rc = 0;
    for (int m = 0; m < 2; m++) {
        rc = xsk_umem__create(&x->umem, x->area, x->area_bytes, &x->fill, &x->comp, &ucfg);
        if (rc) {
            snprintf(err, errlen, "xdp: UMEM: %s", strerror(-rc));
            return -1;
        }
        struct xsk_socket_config scfg = {.rx_size = x->frames, .tx_size = 0,
                                         .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                         .bind_flags = (uint16_t)(modes[m] | XDP_USE_NEED_WAKEUP)};
        rc = xsk_socket__create(&x->xsk, fh->xdp_ifname, fh->xdp_queue, x->umem, &x->rx, NULL, &scfg);
        if (rc == 0) {
            x->zerocopy = m == 0;
            break;
        }
        xsk_umem__delete(x->umem);
        x->umem = NULL;
    }
    if (rc) {
        snprintf(err, errlen, "xdp: socket on %s queue %u: %s%s", fh->xdp_ifname, fh->xdp_queue, strerror(-rc),
                 -rc == EPERM ? " (needs CAP_NET_RAW, or root)" : "");
        return -1;
    }
    uint32_t idx = 0;
    if (xsk_ring_prod__reserve(&x->fill, x->frames, &idx) != x->frames) {
        snprintf(err, errlen, "xdp: the fill ring took fewer than %u frames", x->frames);
        return -1;
    }
    for (uint32_t i = 0; i < x->frames; i++)
        *xsk_ring_prod__fill_addr(&x->fill, idx + i) = (uint64_t)i * UMEM_FRAME;
    xsk_ring_prod__submit(&x->fill, x->frames);
    /* busy polling where the kernel has it: the handler's poll drives the queue's NAPI */
    int fd = xsk_socket__fd(x->xsk), one = 1, us = BUSY_POLL_US, budget = (int)fh->batch;
    setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us);
    setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof budget);
    return 0;
}

int omdp_fh_xdp_open(feed_handler_t *fh, char *err, size_t errlen)
{
    if (fh->rx_ring_bytes < 2 * UMEM_FRAME) {
        snprintf(err, errlen, "xdp: rx_ring_bytes %u is too small for a UMEM", fh->rx_ring_bytes);
        return -1;
    }
    unsigned ifindex = if_nametoindex(fh->xdp_ifname);
    if (!ifindex) {
        snprintf(err, errlen, "xdp: no interface named '%s'", fh->xdp_ifname);
        return -1;
    }
    if (omdp_fh_rxring_collect_dests(fh, err, errlen) < 0)
        return -1;
    struct fh_xdp *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    x->map_fd = x->prog_fd = x->link_fd = -1;
    fh->xdp = x;
    if (make_socket(fh, x, err, errlen) < 0 || attach_program(fh, x, ifindex, err, errlen) < 0)
        return -1;
    int rc = xsk_socket__update_xskmap(x->xsk, x->map_fd);
    if (rc) {
        snprintf(err, errlen, "xdp on %s: the socket into the XSKMAP: %s", fh->xdp_ifname, strerror(-rc));
        return -1;
    }
    return 0;
}

/* The kernel's counts of frames lost for want of RX ring room or fill-ring frames. */
static void count_drops(feed_handler_t *fh, struct fh_xdp *x)
{
    struct xdp_statistics st;
    socklen_t sl = sizeof st;
    if (x->xsk && getsockopt(xsk_socket__fd(x->xsk), SOL_XDP, XDP_STATISTICS, &st, &sl) == 0)
        fh->rx_ring_drops = st.rx_dropped + st.rx_ring_full;
}

void omdp_fh_xdp_close(feed_handler_t *fh)
{
    struct fh_xdp *x = fh->xdp;
    if (!x)
        return;
    count_drops(fh, x);
    if (x->link_fd >= 0)
        close(x->link_fd); /* the program leaves the interface with its link */
    if (x->prog_fd >= 0)
        close(x->prog_fd);
    if (x->xsk)
        xsk_socket__delete(x->xsk);
    if (x->umem)
        xsk_umem__delete(x->umem);
    if (x->map_fd >= 0)
        close(x->map_fd);
    if (x->area)
        munmap(x->area, x->area_bytes);
    free(x);
    fh->xdp = NULL;
    free(fh->rx_dests);
    fh->rx_dests = NULL;
    fh->n_rx_dests = 0;
}

int omdp_fh_xdp_poll(feed_handler_t *fh, const omdp_emitter_t *em, int *produced)
{
    struct fh_xdp *x = fh->xdp;
    uint32_t idx = 0, fidx = 0;
    uint32_t n = (uint32_t)xsk_ring_cons__peek(&x->rx, fh->batch, &idx);
    if (n == 0) {
        /* nothing yet: have the kernel run the queue (copy mode, or a driver that waits) */
        if (xsk_ring_prod__needs_wakeup(&x->fill))
            recvfrom(xsk_socket__fd(x->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
        if ((++x->idle_polls & 1023) == 0)
            count_drops(fh, x); /* now and then, when idle: a syscall */
        return OMDP_OK;
    }
    int64_t fh_in = omdp_stamp_ns(); /* the handler has the packets from now on */
    fh->receive_calls++;
    /* every frame is the fill ring's or the RX ring's: the n taken have room to go back */
    xsk_ring_prod__reserve(&x->fill, n, &fidx);
    int rc = OMDP_OK;
    for (uint32_t i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
        uint64_t at = xsk_umem__add_offset_to_addr(d->addr);
        if (i + 1 < n) /* the next frame's headers and first bytes while this one decodes */
            omdp_fh_prefetch_lines(x->area + xsk_umem__add_offset_to_addr(xsk_ring_cons__rx_desc(&x->rx, idx + i + 1)->addr),
                                   256);
        if (at >= x->area_bytes || d->len > x->area_bytes - at)
            fh->bad_frames++; /* outside the UMEM: never from the kernel */
        else if (rc >= 0)
            rc = omdp_fh_rxring_take_frame(fh, x->area + at, d->len, d->len, fh_in, em);
        *xsk_ring_prod__fill_addr(&x->fill, fidx + i) = xsk_umem__extract_addr(d->addr);
    }
    xsk_ring_cons__release(&x->rx, n);
    xsk_ring_prod__submit(&x->fill, n);
    if (rc < 0)
        return rc;
    *produced = 1;
    return omdp_fh_flush(fh, em);
}
