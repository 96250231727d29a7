/* vega-ib (vega_ib.h): the ring's mirror function as RDMA WRITEs on an RC queue pair. */
#define _GNU_SOURCE
#include "omdp/vega_ib.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "omdp/clock.h"
#include "omdp/partition_channels.h"

#define WANT_INLINE 256u     /* asked of the QP; the device may grant less */
#define CQ_POLL_BATCH 16
#define WATCH_POLL_MS 50

struct omdp_vib {
    int role;
    struct ibv_context *ctx;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    uint8_t port_num;
    uint8_t *base;
    uint64_t size;
    uint32_t lkey;
    uint32_t psn;
    uint32_t max_inline;
    uint32_t sq_depth;
    uint32_t signal_every;
    uint32_t unsignaled;     /* writes posted since the last signaled one */
    uint64_t remote_addr;
    uint32_t remote_rkey;
    uint64_t posted;         /* writes posted */
    uint64_t retired;        /* writes known complete (a signaled completion retires those before it) */
    uint64_t last_offset;    /* the last write, re-sent signaled at close to flush the queue */
    uint32_t last_len;
    omdp_vega_sender_t *tx;
    omdp_vega_receiver_t *rx;
    pthread_mutex_t post_lock; /* publishes come from the ring's one writer; close and stats read */
    int fd;                  /* liveness link (the bootstrap socket), -1 before connect */
    pthread_t watcher;
    int watching;
    _Atomic int stop, done, broken, goodbye_seen;
    _Atomic uint64_t writes, bytes, inline_writes, signaled, completions, sq_full_waits, dropped;
    char error[OMDP_VIB_ERR_LEN];
    _Atomic int error_set;
};

static void say(char *err, size_t len, const char *fmt, ...)
{
    if (!err || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

static void add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static void break_link(omdp_vib_t *v, const char *fmt, const char *what, uint64_t n)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&v->error_set, &expected, 1))
        snprintf(v->error, sizeof v->error, fmt, what, (unsigned long long)n);
    atomic_store_explicit(&v->broken, 1, memory_order_release);
    omdp_vega_mirror_set_peer(v->base, v->role, OMDP_VEGA_PEER_DEAD);
}

/* Retire completions; a failed one breaks the link. Caller holds post_lock. */
static void poll_cq(omdp_vib_t *v)
{
    struct ibv_wc wc[CQ_POLL_BATCH];
    int n;
    while ((n = ibv_poll_cq(v->cq, CQ_POLL_BATCH, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            if (wc[i].status != IBV_WC_SUCCESS) {
                break_link(v, "RDMA WRITE completion error: %s (write %llu); the peer is gone or its memory "
                              "registration is wrong", ibv_wc_status_str(wc[i].status), wc[i].wr_id);
                continue;
            }
            /* wr_id of a signaled write: how many writes were posted up to and with it */
            if (wc[i].wr_id > v->retired)
                v->retired = wc[i].wr_id;
            add(&v->completions, 1);
        }
    }
    if (n < 0)
        break_link(v, "polling the completion queue failed (%s, %llu)", "ibv_poll_cq", (uint64_t)(-n));
}

/* Post one RDMA WRITE of base[offset, offset+len) to the same offset of the peer's copy.
 * Caller holds post_lock; 0 or -1 (link broken, nothing posted). */
static int post_write(omdp_vib_t *v, uint64_t offset, uint32_t len, int force_signal)
{
    poll_cq(v);
    /* room in the send queue: unsignaled writes hold their entries until a later signaled
     * one completes, so wait for completions when the queue is full */
    while (v->posted - v->retired >= v->sq_depth && !atomic_load_explicit(&v->broken, memory_order_acquire)) {
        add(&v->sq_full_waits, 1);
        poll_cq(v);
    }
    if (atomic_load_explicit(&v->broken, memory_order_acquire))
        return -1;
    int signal = ++v->unsignaled >= v->signal_every || force_signal;
    if (signal)
        v->unsignaled = 0;
    struct ibv_sge sge = {.addr = (uintptr_t)(v->base + offset), .length = len, .lkey = v->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = v->posted + 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = (signal ? IBV_SEND_SIGNALED : 0) | (len <= v->max_inline ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = v->remote_addr + offset;
    wr.wr.rdma.rkey = v->remote_rkey;
    int rc = ibv_post_send(v->qp, &wr, &bad);
    if (rc) {
        break_link(v, "ibv_post_send failed: %s (write %llu)", strerror(rc), v->posted + 1);
        return -1;
    }
    v->posted++;
    v->last_offset = offset;
    v->last_len = len;
    add(&v->writes, 1);
    add(&v->bytes, len);
    if (len <= v->max_inline)
        add(&v->inline_writes, 1);
    if (signal)
        add(&v->signaled, 1);
    return 0;
}

/* The mirror function (vega.h): one RDMA WRITE per publish. */
static void publish(void *ctx, uint64_t offset, const void *src, uint32_t len)
{
    omdp_vib_t *v = ctx;
    pthread_mutex_lock(&v->post_lock);
    int ok = !atomic_load_explicit(&v->broken, memory_order_acquire) && v->qp && v->fd >= 0 &&
             post_write(v, offset, len, 0) == 0;
    pthread_mutex_unlock(&v->post_lock);
    if (!ok)
        add(&v->dropped, 1);
}

int omdp_vib_open(int role, uintptr_t context, uintptr_t pd, uint8_t port_num, void *base, uint64_t size,
                  uint32_t lkey, uint32_t queue_size, uint32_t max_message, uint32_t mutex, uint32_t wait,
                  uint32_t on_full, uint32_t signal_every, const void *layout, omdp_vib_t **out,
                  char *err, size_t err_len)
{
    int rc = omdp_vega_check_knobs(queue_size, max_message, wait, on_full);
    if (rc || signal_every == 0) {
        say(err, err_len, "a knob is out of range");
        return OMDP_VEGA_E_BAD_SPEC;
    }
    if (!context || !pd || !base || size != omdp_vega_region_size(queue_size, max_message) ||
        (role == OMDP_VEGA_MIRROR_SENDER && !layout)) {
        say(err, err_len, "bad arguments (context, PD, region or layout missing, or the region's size is wrong)");
        return OMDP_VEGA_E_LAYOUT;
    }
    omdp_vib_t *v = calloc(1, sizeof *v);
    if (!v) {
        say(err, err_len, "out of memory");
        return OMDP_VEGA_E_SYS;
    }
    v->role = role;
    v->ctx = (struct ibv_context *)context;
    v->port_num = port_num;
    v->base = base;
    v->size = size;
    v->lkey = lkey;
    v->signal_every = signal_every;
    v->fd = -1;
    pthread_mutex_init(&v->post_lock, NULL);
    if (getrandom(&v->psn, sizeof v->psn, 0) != sizeof v->psn)
        v->psn = (uint32_t)omdp_now_ns();
    v->psn &= 0xffffffu;

    if (role == OMDP_VEGA_MIRROR_RECEIVER) {
        rc = omdp_vega_region_create(base, size, queue_size, max_message, mutex, wait, on_full);
        if (!rc)
            rc = omdp_vega_receiver_open_local(base, size, &v->rx);
    } else {
        rc = omdp_vega_mirror_copy_layout(base, size, layout);
        if (!rc)
            rc = omdp_vega_sender_open_local(base, size, &v->tx);
    }
    if (rc) {
        say(err, err_len, "the ring does not fit its region (layout from the peer of another size or version)");
        omdp_vib_close(v);
        return rc;
    }
    omdp_vega_mirror_claim(base, role);

    struct ibv_device_attr dattr;
    if ((rc = ibv_query_device(v->ctx, &dattr))) {
        say(err, err_len, "%s: ibv_query_device: %s", ibv_get_device_name(v->ctx->device), strerror(rc));
        omdp_vib_close(v);
        return OMDP_VEGA_E_SYS;
    }
    /* room for a whole ring of slot writes, scrubs and a full signaling interval */
    uint32_t depth = 2 * queue_size + 2 * signal_every + 16;
    if (depth > (uint32_t)dattr.max_qp_wr)
        depth = (uint32_t)dattr.max_qp_wr;
    if (signal_every >= depth) {
        say(err, err_len, "%s: signal_every=%u must be below the send queue depth %u this device allows",
            ibv_get_device_name(v->ctx->device), signal_every, depth);
        omdp_vib_close(v);
        return OMDP_VEGA_E_BAD_SPEC;
    }
    v->sq_depth = depth;
    v->cq = ibv_create_cq(v->ctx, (int)depth, NULL, NULL, 0);
    if (!v->cq) {
        say(err, err_len, "%s: ibv_create_cq(%u): %s", ibv_get_device_name(v->ctx->device), depth, strerror(errno));
        omdp_vib_close(v);
        return OMDP_VEGA_E_SYS;
    }
    struct ibv_qp_init_attr qia;
    memset(&qia, 0, sizeof qia);
    qia.send_cq = v->cq;
    qia.recv_cq = v->cq;
    qia.qp_type = IBV_QPT_RC;
    qia.sq_sig_all = 0;
    qia.cap.max_send_wr = depth;
    qia.cap.max_recv_wr = 1;
    qia.cap.max_send_sge = 1;
    qia.cap.max_recv_sge = 1;
    qia.cap.max_inline_data = WANT_INLINE;
    v->qp = ibv_create_qp((struct ibv_pd *)pd, &qia);
    if (!v->qp) {
        /* some devices grant no inline data at all: ask again without */
        qia.cap.max_inline_data = 0;
        v->qp = ibv_create_qp((struct ibv_pd *)pd, &qia);
    }
    if (!v->qp) {
        say(err, err_len, "%s: ibv_create_qp(RC, %u writes): %s", ibv_get_device_name(v->ctx->device), depth,
            strerror(errno));
        omdp_vib_close(v);
        return OMDP_VEGA_E_SYS;
    }
    v->max_inline = qia.cap.max_inline_data;
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port_num;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if ((rc = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))) {
        say(err, err_len, "%s port %u: QP to INIT: %s", ibv_get_device_name(v->ctx->device), port_num, strerror(rc));
        omdp_vib_close(v);
        return OMDP_VEGA_E_SYS;
    }
    if (v->tx)
        omdp_vega_sender_set_mirror(v->tx, publish, v);
    else
        omdp_vega_receiver_set_mirror(v->rx, publish, v);
    *out = v;
    return OMDP_VEGA_OK;
}

uint32_t omdp_vib_qp_num(const omdp_vib_t *v) { return v->qp ? v->qp->qp_num : 0; }
uint32_t omdp_vib_psn(const omdp_vib_t *v) { return v->psn; }
uint32_t omdp_vib_max_inline(const omdp_vib_t *v) { return v->max_inline; }
omdp_vega_sender_t *omdp_vib_sender(omdp_vib_t *v) { return v->tx; }
omdp_vega_receiver_t *omdp_vib_receiver(omdp_vib_t *v) { return v->rx; }

/* The liveness link: a goodbye byte, the end of the stream, or a reset. */
static void *watch(void *arg)
{
    omdp_vib_t *v = arg;
    while (!atomic_load_explicit(&v->stop, memory_order_acquire)) {
        struct pollfd p = {.fd = v->fd, .events = POLLIN};
        int pr = poll(&p, 1, WATCH_POLL_MS);
        if (pr <= 0)
            continue;
        uint8_t b[64];
        ssize_t r = recv(v->fd, b, sizeof b, MSG_DONTWAIT);
        if (r > 0) {
            if (memchr(b, OMDP_VIB_GOODBYE, (size_t)r)) {
                atomic_store_explicit(&v->goodbye_seen, 1, memory_order_release);
                omdp_vega_mirror_set_peer(v->base, v->role, OMDP_VEGA_PEER_CLOSED);
                shutdown(v->fd, SHUT_WR);
            }
            continue;
        }
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        omdp_vega_mirror_set_peer(v->base, v->role, atomic_load(&v->goodbye_seen) ? OMDP_VEGA_PEER_CLOSED
                                                                                     : OMDP_VEGA_PEER_DEAD);
        break;
    }
    atomic_store_explicit(&v->done, 1, memory_order_release);
    return NULL;
}

int omdp_vib_connect(omdp_vib_t *v, const omdp_vib_remote_t *r, char *err, size_t err_len)
{
    const char *dev = ibv_get_device_name(v->ctx->device);
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = (enum ibv_mtu)r->mtu;
    a.dest_qp_num = r->qp_num;
    a.rq_psn = r->psn & 0xffffffu;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = v->port_num;
    a.ah_attr.dlid = r->lid;
    if (r->use_gid) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
        a.ah_attr.grh.sgid_index = r->sgid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    int rc = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                          IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) {
        say(err, err_len, "%s port %u: QP to RTR toward QP %u (lid %u%s): %s", dev, v->port_num, r->qp_num, r->lid,
            r->use_gid ? ", by GID" : "", strerror(rc));
        return OMDP_VEGA_E_SYS;
    }
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;   /* 4.096 us * 2^14: about 67 ms per try */
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = v->psn;
    a.max_rd_atomic = 1;
    rc = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc) {
        say(err, err_len, "%s port %u: QP to RTS: %s", dev, v->port_num, strerror(rc));
        return OMDP_VEGA_E_SYS;
    }
    pthread_mutex_lock(&v->post_lock);
    v->remote_addr = r->addr;
    v->remote_rkey = r->rkey;
    pthread_mutex_unlock(&v->post_lock);
    return OMDP_VEGA_OK;
}

int omdp_vib_watch(omdp_vib_t *v, int fd)
{
    if (fd < 0 || v->watching)
        return OMDP_VEGA_E_BAD_SPEC;
    pthread_mutex_lock(&v->post_lock);
    v->fd = fd;
    pthread_mutex_unlock(&v->post_lock);
    omdp_vega_mirror_set_peer(v->base, v->role, OMDP_VEGA_PEER_ATTACHED);
    if (pthread_create(&v->watcher, NULL, watch, v) != 0)
        return OMDP_VEGA_E_SYS;
    v->watching = 1;
    return OMDP_VEGA_OK;
}

void omdp_vib_stats(const omdp_vib_t *v, omdp_vib_stats_t *out)
{
    omdp_vib_t *m = (omdp_vib_t *)v;
    out->writes = atomic_load_explicit(&m->writes, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&m->bytes, memory_order_relaxed);
    out->inline_writes = atomic_load_explicit(&m->inline_writes, memory_order_relaxed);
    out->signaled = atomic_load_explicit(&m->signaled, memory_order_relaxed);
    out->completions = atomic_load_explicit(&m->completions, memory_order_relaxed);
    out->sq_full_waits = atomic_load_explicit(&m->sq_full_waits, memory_order_relaxed);
    out->dropped = atomic_load_explicit(&m->dropped, memory_order_relaxed);
    out->peer_state = omdp_vega_mirror_peer(v->base, v->role);
    out->broken = (uint32_t)atomic_load_explicit(&m->broken, memory_order_acquire);
}

const char *omdp_vib_error(const omdp_vib_t *v)
{
    return atomic_load_explicit(&((omdp_vib_t *)v)->error_set, memory_order_acquire) ? v->error : "";
}

int omdp_vib_close(omdp_vib_t *v)
{
    if (!v)
        return OMDP_VEGA_OK;
    if (v->qp) {
        /* every write must have landed before the goodbye: writes still unsignaled cannot be
         * waited for, so send the last 8 bytes of the last write again (same bytes,
         * harmless) signaled, and wait for it */
        int64_t deadline = omdp_now_ns() + OMDP_VIB_LINGER_NS;
        pthread_mutex_lock(&v->post_lock);
        if (v->unsignaled && v->last_len >= 8 && !atomic_load(&v->broken))
            post_write(v, v->last_offset + v->last_len - 8, 8, 1);
        while (v->retired < v->posted && !atomic_load(&v->broken) && omdp_now_ns() < deadline)
            poll_cq(v);
        pthread_mutex_unlock(&v->post_lock);
    }
    if (v->watching) {
        uint8_t bye = OMDP_VIB_GOODBYE;
        send(v->fd, &bye, 1, MSG_NOSIGNAL);
        shutdown(v->fd, SHUT_WR);
        int64_t deadline = omdp_now_ns() + OMDP_VIB_LINGER_NS;
        while (!atomic_load_explicit(&v->done, memory_order_acquire) && omdp_now_ns() < deadline)
            usleep(1000);
        atomic_store_explicit(&v->stop, 1, memory_order_release);
        pthread_join(v->watcher, NULL);
    }
    if (v->qp)
        ibv_destroy_qp(v->qp);
    if (v->cq)
        ibv_destroy_cq(v->cq);
    if (v->fd >= 0)
        close(v->fd);
    if (v->tx)
        omdp_vega_sender_close(v->tx);
    if (v->rx)
        omdp_vega_receiver_close(v->rx);
    pthread_mutex_destroy(&v->post_lock);
    free(v);
    return OMDP_VEGA_OK;
}

/* ---- partition channels -------------------------------------------------------------- */

static int peer_left(const omdp_vib_t *v)
{
    uint32_t st = omdp_vega_mirror_peer(v->base, v->role);
    return st == OMDP_VEGA_PEER_CLOSED || st == OMDP_VEGA_PEER_DEAD;
}

static int vib_poll(void *ctx, const uint8_t **data, uint32_t *len, uint64_t *slot)
{
    omdp_vib_t *v = ctx;
    const omdp_chan_in_ops_t *ring = omdp_chan_vega_in_ops();
    int r = ring->poll(v->rx, data, len, slot);
    if (r != 0 || !peer_left(v))
        return r;
    r = ring->poll(v->rx, data, len, slot);
    return r != 0 ? r : OMDP_ERR_PEER_GONE;
}

static int vib_release(void *ctx, uint64_t slot)
{
    omdp_vib_t *v = ctx;
    return omdp_chan_vega_in_ops()->release(v->rx, slot);
}

static int vib_try_put(void *ctx, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len)
{
    omdp_vib_t *v = ctx;
    if (peer_left(v))
        return OMDP_ERR_PEER_GONE;
    return omdp_chan_vega_out_ops()->try_put(v->tx, head, head_len, body, body_len);
}

static const omdp_chan_in_ops_t VIB_IN = {vib_poll, vib_release};
static const omdp_chan_out_ops_t VIB_OUT = {vib_try_put};

const omdp_chan_in_ops_t *omdp_chan_vib_in_ops(void) { return &VIB_IN; }
const omdp_chan_out_ops_t *omdp_chan_vib_out_ops(void) { return &VIB_OUT; }
