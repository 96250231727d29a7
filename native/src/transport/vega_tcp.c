/* vega-tcp (vega_tcp.h): the Vega ring mirrored over a TCP stream, one applier thread per
 * side. */
#define _GNU_SOURCE
#include "omdp/vega_tcp.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "omdp/clock.h"
#include "omdp/partition_channels.h"
#include "socket_io.h"

#define HELLO_TIMEOUT_NS 5000000000LL
#define POLL_MS 50

typedef struct hello {
    uint32_t magic, version, queue_size, max_message, mutex, wait, on_full, reserved;
} hello_t;

typedef struct welcome {
    uint32_t verdict, reserved;
    omdp_vega_layout_t layout;
} welcome_t;

struct omdp_vtcp {
    int role; /* OMDP_VEGA_MIRROR_* */
    _Atomic int listen_fd;
    _Atomic int fd; /* -1 until the handshake is done */
    int port;
    uint8_t *base;
    uint64_t size;
    uint32_t stride;
    omdp_vega_sender_t *tx;
    omdp_vega_receiver_t *rx;
    hello_t ring; /* the knobs of this ring, as a hello carries them */
    pthread_t thread;
    int thread_started;
    _Atomic int stop;
    _Atomic int done; /* the thread has left (peer's end of stream, error or stop) */
    pthread_mutex_t send_lock;
    int write_shut; /* under send_lock */
    int goodbye_seen; /* thread only */
    uint8_t *in;
    uint32_t in_cap;
    _Atomic uint64_t writes_out, bytes_out, writes_in, bytes_in, dropped_out, stream_errors;
    _Atomic int connected;
    _Atomic int error_set;
    char error[200];
};

static void add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static void set_error(omdp_vtcp_t *l, const char *fmt, uint64_t a, uint64_t b)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&l->error_set, &expected, 1))
        snprintf(l->error, sizeof l->error, fmt, (unsigned long long)a, (unsigned long long)b);
    add(&l->stream_errors, 1);
}

static void shut_write(omdp_vtcp_t *l)
{
    pthread_mutex_lock(&l->send_lock);
    int fd = atomic_load_explicit(&l->fd, memory_order_acquire);
    if (!l->write_shut && fd >= 0)
        shutdown(fd, SHUT_WR);
    l->write_shut = 1;
    pthread_mutex_unlock(&l->send_lock);
}

/* The mirror function (vega.h): one write record to the peer's copy, in call order. */
static void publish(void *ctx, uint64_t offset, const void *src, uint32_t len)
{
    omdp_vtcp_t *l = ctx;
    omdp_vtcp_record_header_t h = {OMDP_VTCP_OP_WRITE, len, offset};
    struct iovec iov[2] = {{&h, sizeof h}, {(void *)src, len}};
    pthread_mutex_lock(&l->send_lock);
    int fd = atomic_load_explicit(&l->fd, memory_order_acquire);
    if (fd < 0 || l->write_shut || omdp_sock_write_all(fd, iov, 2) != 0) {
        /* the peer left or the stream broke: the applier thread reports which */
        l->write_shut = 1;
        pthread_mutex_unlock(&l->send_lock);
        add(&l->dropped_out, 1);
        return;
    }
    pthread_mutex_unlock(&l->send_lock);
    add(&l->writes_out, 1);
    add(&l->bytes_out, len);
}

static void send_goodbye(omdp_vtcp_t *l)
{
    omdp_vtcp_record_header_t h = {OMDP_VTCP_OP_GOODBYE, 0, 0};
    struct iovec iov = {&h, sizeof h};
    pthread_mutex_lock(&l->send_lock);
    int fd = atomic_load_explicit(&l->fd, memory_order_acquire);
    if (fd >= 0 && !l->write_shut) {
        omdp_sock_write_all(fd, &iov, 1);
        shutdown(fd, SHUT_WR);
    }
    l->write_shut = 1;
    pthread_mutex_unlock(&l->send_lock);
}

static void peer_gone(omdp_vtcp_t *l)
{
    omdp_vega_mirror_set_peer(l->base, l->role, l->goodbye_seen ? OMDP_VEGA_PEER_CLOSED : OMDP_VEGA_PEER_DEAD);
}

/* Apply the complete records at the start of in[0, have); returns the bytes consumed, or
 * -1 when the stream is broken (error recorded). */
static int64_t apply_records(omdp_vtcp_t *l, uint32_t have)
{
    uint32_t pos = 0;
    while (have - pos >= sizeof(omdp_vtcp_record_header_t)) {
        omdp_vtcp_record_header_t h;
        memcpy(&h, l->in + pos, sizeof h);
        if (h.op == OMDP_VTCP_OP_GOODBYE && h.len == 0) {
            l->goodbye_seen = 1;
            omdp_vega_mirror_set_peer(l->base, l->role, OMDP_VEGA_PEER_CLOSED);
            shut_write(l); /* nothing we send matters to a peer that left: finish both ways */
            pos += sizeof h;
            continue;
        }
        if (h.op != OMDP_VTCP_OP_WRITE || h.len > l->stride) {
            set_error(l, "record of op %llu, %llu bytes: not a write this ring can hold", h.op, h.len);
            return -1;
        }
        if (have - pos - sizeof h < h.len)
            break;
        int rc = omdp_vega_mirror_apply(l->base, l->size, l->role, h.offset, l->in + pos + sizeof h, h.len);
        if (rc != OMDP_VEGA_MIRROR_OK) {
            set_error(l, rc == OMDP_VEGA_MIRROR_E_WINDOW ? "write of %llu bytes at offset %llu outside the peer's window"
                                                         : "write of %llu bytes at offset %llu not 8-byte aligned",
                      h.len, h.offset);
            return -1;
        }
        add(&l->writes_in, 1);
        add(&l->bytes_in, h.len);
        pos += (uint32_t)sizeof h + h.len;
    }
    return pos;
}

/* The applier waits for bytes the way the channel's waits go (vega_defaults.h): spin
 * retries the read at once, spin-yield yields between reads, spin-block sleeps in poll(). */
static void apply_loop(omdp_vtcp_t *l)
{
    int fd = atomic_load_explicit(&l->fd, memory_order_acquire);
    int blocking = l->ring.wait == OMDP_VEGA_WAIT_SPIN_BLOCK;
    uint32_t have = 0;
    while (!atomic_load_explicit(&l->stop, memory_order_acquire)) {
        if (blocking) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, POLL_MS) == 0)
                continue;
        }
        ssize_t r = recv(fd, l->in + have, l->in_cap - have, MSG_DONTWAIT);
        if (r == 0) {
            peer_gone(l);
            return;
        }
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (l->ring.wait == OMDP_VEGA_WAIT_SPIN_YIELD)
                    sched_yield();
                else if (!blocking)
                    omdp_vega_pause();
                continue;
            }
            if (errno == EINTR)
                continue;
            peer_gone(l);
            return;
        }
        have += (uint32_t)r;
        int64_t used = apply_records(l, have);
        if (used < 0) {
            omdp_vega_mirror_set_peer(l->base, l->role, OMDP_VEGA_PEER_DEAD);
            shutdown(fd, SHUT_RDWR);
            return;
        }
        if (used) {
            memmove(l->in, l->in + used, have - (uint32_t)used);
            have -= (uint32_t)used;
        }
    }
}

/* Receiver: take one sender whose hello matches the ring; 1 when connected. */
static int accept_one(omdp_vtcp_t *l)
{
    int lfd = atomic_load_explicit(&l->listen_fd, memory_order_acquire);
    while (!atomic_load_explicit(&l->stop, memory_order_acquire)) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (poll(&p, 1, POLL_MS) <= 0)
            continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        hello_t h;
        int rc = omdp_sock_read_exact(fd, &h, sizeof h, omdp_now_ns() + HELLO_TIMEOUT_NS);
        welcome_t w;
        memset(&w, 0, sizeof w);
        w.verdict = rc == 0 && memcmp(&h, &l->ring, sizeof h) == 0;
        memcpy(&w.layout, &((omdp_vega_ctl_t *)l->base)->layout, sizeof w.layout);
        struct iovec iov = {&w, sizeof w};
        if (rc != 0 || omdp_sock_write_all(fd, &iov, 1) != 0 || !w.verdict) {
            close(fd);
            continue;
        }
        omdp_sock_nodelay(fd);
        atomic_store_explicit(&l->fd, fd, memory_order_release);
        int old = atomic_exchange(&l->listen_fd, -1);
        if (old >= 0)
            close(old); /* one sender per ring, ever: later ones are refused */
        omdp_vega_mirror_set_peer(l->base, l->role, OMDP_VEGA_PEER_ATTACHED);
        atomic_store_explicit(&l->connected, 1, memory_order_release);
        return 1;
    }
    return 0;
}

static void *link_thread(void *arg)
{
    omdp_vtcp_t *l = arg;
    if (l->role == OMDP_VEGA_MIRROR_SENDER || accept_one(l))
        apply_loop(l);
    atomic_store_explicit(&l->done, 1, memory_order_release);
    return NULL;
}

static omdp_vtcp_t *link_new(int role, void *base, uint64_t size, uint32_t max_message)
{
    omdp_vtcp_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->role = role;
    l->base = base;
    l->size = size;
    l->stride = omdp_vega_slot_stride(max_message);
    l->in_cap = 2 * ((uint32_t)sizeof(omdp_vtcp_record_header_t) + l->stride);
    if (l->in_cap < 65536)
        l->in_cap = 65536;
    l->in = malloc(l->in_cap);
    if (!l->in) {
        free(l);
        return NULL;
    }
    atomic_init(&l->fd, -1);
    atomic_init(&l->listen_fd, -1);
    pthread_mutex_init(&l->send_lock, NULL);
    return l;
}

static void link_free(omdp_vtcp_t *l)
{
    int fd = atomic_exchange(&l->fd, -1);
    if (fd >= 0)
        close(fd);
    fd = atomic_exchange(&l->listen_fd, -1);
    if (fd >= 0)
        close(fd);
    if (l->tx)
        omdp_vega_sender_close(l->tx);
    if (l->rx)
        omdp_vega_receiver_close(l->rx);
    pthread_mutex_destroy(&l->send_lock);
    free(l->in);
    free(l);
}

static hello_t ring_hello(uint32_t queue_size, uint32_t max_message, uint32_t mutex, uint32_t wait, uint32_t on_full)
{
    hello_t h = {OMDP_VTCP_MAGIC, OMDP_VTCP_VERSION, queue_size, max_message, mutex ? 1u : 0u, wait, on_full, 0};
    return h;
}

int omdp_vtcp_receiver_listen(const char *host, uint16_t port, void *base, uint64_t size, uint32_t queue_size,
                              uint32_t max_message, uint32_t mutex, uint32_t wait, uint32_t on_full,
                              omdp_vtcp_t **out)
{
    int rc = omdp_vega_check_knobs(queue_size, max_message, wait, on_full);
    if (rc)
        return rc;
    if (size != omdp_vega_region_size(queue_size, max_message))
        return OMDP_VEGA_E_LAYOUT;
    struct sockaddr_in sa;
    if (omdp_sock_resolve(host, port, &sa) != 0)
        return OMDP_VEGA_E_BAD_NAME;
    omdp_vtcp_t *l = link_new(OMDP_VEGA_MIRROR_RECEIVER, base, size, max_message);
    if (!l)
        return OMDP_VEGA_E_SYS;
    l->ring = ring_hello(queue_size, max_message, mutex, wait, on_full);
    if ((rc = omdp_vega_region_create(base, size, queue_size, max_message, mutex, wait, on_full)) ||
        (rc = omdp_vega_receiver_open_local(base, size, &l->rx))) {
        link_free(l);
        return rc;
    }
    omdp_vega_mirror_claim(base, OMDP_VEGA_MIRROR_RECEIVER);
    omdp_vega_receiver_set_mirror(l->rx, publish, l);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    socklen_t len = sizeof sa;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 4) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        link_free(l);
        errno = e;
        return OMDP_VEGA_E_SYS;
    }
    l->port = ntohs(sa.sin_port);
    atomic_store(&l->listen_fd, fd);
    if (pthread_create(&l->thread, NULL, link_thread, l) != 0) {
        link_free(l);
        return OMDP_VEGA_E_SYS;
    }
    l->thread_started = 1;
    *out = l;
    return OMDP_VEGA_OK;
}

int omdp_vtcp_port(const omdp_vtcp_t *l)
{
    return l->port;
}

int omdp_vtcp_accept(omdp_vtcp_t *l, int64_t timeout_ns)
{
    int64_t now = omdp_now_ns();
    int64_t deadline = timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
    while (!atomic_load_explicit(&l->connected, memory_order_acquire)) {
        if (timeout_ns == 0 || omdp_now_ns() >= deadline)
            return OMDP_VEGA_TIMEOUT;
        usleep(200);
    }
    return OMDP_VEGA_OK;
}

omdp_vega_receiver_t *omdp_vtcp_receiver(omdp_vtcp_t *l)
{
    return l->rx;
}

omdp_vega_sender_t *omdp_vtcp_sender(omdp_vtcp_t *l)
{
    return l->tx;
}

/* Connect, retrying while nobody listens yet; the fd or a Vega error. */
static int connect_until(const struct sockaddr_in *sa, int64_t timeout_ns)
{
    int64_t now = omdp_now_ns();
    int64_t deadline = timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return OMDP_VEGA_E_SYS;
        if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
            return fd;
        int e = errno;
        close(fd);
        if (e != ECONNREFUSED && e != EINTR && e != ETIMEDOUT && e != ENETUNREACH && e != EHOSTUNREACH) {
            errno = e;
            return OMDP_VEGA_E_SYS;
        }
        if (omdp_now_ns() >= deadline)
            return OMDP_VEGA_E_NOT_FOUND;
        usleep(2000);
    }
}

int omdp_vtcp_sender_connect(const char *host, uint16_t port, void *base, uint64_t size, uint32_t queue_size,
                             uint32_t max_message, uint32_t mutex, uint32_t wait, uint32_t on_full,
                             int64_t timeout_ns, omdp_vtcp_t **out)
{
    int rc = omdp_vega_check_knobs(queue_size, max_message, wait, on_full);
    if (rc)
        return rc;
    if (size != omdp_vega_region_size(queue_size, max_message))
        return OMDP_VEGA_E_LAYOUT;
    struct sockaddr_in sa;
    if (omdp_sock_resolve(host, port, &sa) != 0 || port == 0)
        return OMDP_VEGA_E_BAD_NAME;
    int fd = connect_until(&sa, timeout_ns);
    if (fd < 0)
        return fd;
    omdp_sock_nodelay(fd);
    hello_t h = ring_hello(queue_size, max_message, mutex, wait, on_full);
    welcome_t w;
    struct iovec iov = {&h, sizeof h};
    int got = omdp_sock_write_all(fd, &iov, 1) != 0 ? -1 : omdp_sock_read_exact(fd, &w, sizeof w,
                                                                                omdp_now_ns() + HELLO_TIMEOUT_NS);
    if (got != 0) {
        close(fd);
        /* hung up on our hello: not a vega-tcp receiver of this version (a tcp one, say) */
        return got == 2 || got == -ECONNRESET ? OMDP_VEGA_E_LAYOUT : OMDP_VEGA_E_PEER_DEAD;
    }
    if (w.verdict != 1) {
        close(fd);
        return OMDP_VEGA_E_LAYOUT;
    }
    omdp_vtcp_t *l = link_new(OMDP_VEGA_MIRROR_SENDER, base, size, max_message);
    if (!l) {
        close(fd);
        return OMDP_VEGA_E_SYS;
    }
    l->ring = h;
    atomic_store(&l->fd, fd);
    if ((rc = omdp_vega_mirror_copy_layout(base, size, &w.layout)) ||
        (rc = omdp_vega_sender_open_local(base, size, &l->tx))) {
        link_free(l);
        return rc;
    }
    omdp_vega_mirror_claim(base, OMDP_VEGA_MIRROR_SENDER);
    omdp_vega_mirror_set_peer(base, OMDP_VEGA_MIRROR_SENDER, OMDP_VEGA_PEER_ATTACHED);
    omdp_vega_sender_set_mirror(l->tx, publish, l);
    atomic_store(&l->connected, 1);
    if (pthread_create(&l->thread, NULL, link_thread, l) != 0) {
        link_free(l);
        return OMDP_VEGA_E_SYS;
    }
    l->thread_started = 1;
    *out = l;
    return OMDP_VEGA_OK;
}

void omdp_vtcp_stats(const omdp_vtcp_t *l, omdp_vtcp_stats_t *out)
{
    omdp_vtcp_t *m = (omdp_vtcp_t *)l;
    out->writes_out = atomic_load_explicit(&m->writes_out, memory_order_relaxed);
    out->bytes_out = atomic_load_explicit(&m->bytes_out, memory_order_relaxed);
    out->writes_in = atomic_load_explicit(&m->writes_in, memory_order_relaxed);
    out->bytes_in = atomic_load_explicit(&m->bytes_in, memory_order_relaxed);
    out->dropped_out = atomic_load_explicit(&m->dropped_out, memory_order_relaxed);
    out->stream_errors = atomic_load_explicit(&m->stream_errors, memory_order_relaxed);
    out->peer_state = omdp_vega_mirror_peer(l->base, l->role);
    out->connected = atomic_load_explicit(&m->connected, memory_order_acquire);
}

const char *omdp_vtcp_error(const omdp_vtcp_t *l)
{
    return atomic_load_explicit(&((omdp_vtcp_t *)l)->error_set, memory_order_acquire) ? l->error : "";
}

int omdp_vtcp_close(omdp_vtcp_t *l)
{
    if (!l)
        return OMDP_VEGA_OK;
    if (atomic_load_explicit(&l->connected, memory_order_acquire)) {
        send_goodbye(l);
        /* let the applier read to the peer's end, so nothing in flight meets a reset */
        int64_t deadline = omdp_now_ns() + OMDP_VTCP_LINGER_NS;
        while (!atomic_load_explicit(&l->done, memory_order_acquire) && omdp_now_ns() < deadline)
            usleep(1000);
    }
    atomic_store_explicit(&l->stop, 1, memory_order_release);
    if (l->thread_started)
        pthread_join(l->thread, NULL);
    link_free(l);
    return OMDP_VEGA_OK;
}

/* ---- partition channels -------------------------------------------------------------- */

static int peer_left(const omdp_vtcp_t *l)
{
    uint32_t st = omdp_vega_mirror_peer(l->base, l->role);
    return st == OMDP_VEGA_PEER_CLOSED || st == OMDP_VEGA_PEER_DEAD;
}

static int vtcp_poll(void *ctx, const uint8_t **data, uint32_t *len, uint64_t *slot)
{
    omdp_vtcp_t *l = ctx;
    const omdp_chan_in_ops_t *ring = omdp_chan_vega_in_ops();
    int r = ring->poll(l->rx, data, len, slot);
    if (r != 0 || !peer_left(l))
        return r;
    /* the state is set after everything the peer wrote was applied: look once more */
    r = ring->poll(l->rx, data, len, slot);
    return r != 0 ? r : OMDP_ERR_PEER_GONE;
}

static int vtcp_release(void *ctx, uint64_t slot)
{
    omdp_vtcp_t *l = ctx;
    return omdp_chan_vega_in_ops()->release(l->rx, slot);
}

static int vtcp_try_put(void *ctx, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len)
{
    omdp_vtcp_t *l = ctx;
    if (peer_left(l))
        return OMDP_ERR_PEER_GONE;
    return omdp_chan_vega_out_ops()->try_put(l->tx, head, head_len, body, body_len);
}

static const omdp_chan_in_ops_t VTCP_IN = {vtcp_poll, vtcp_release};
static const omdp_chan_out_ops_t VTCP_OUT = {vtcp_try_put};

const omdp_chan_in_ops_t *omdp_chan_vtcp_in_ops(void) { return &VTCP_IN; }
const omdp_chan_out_ops_t *omdp_chan_vtcp_out_ops(void) { return &VTCP_OUT; }
