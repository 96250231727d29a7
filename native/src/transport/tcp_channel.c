/* The `tcp` transport (tcp_channel.h): frames over a TCP stream into receiver-owned slots. */
#define _GNU_SOURCE
#include "omdp/tcp_channel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "omdp/clock.h"
#include "socket_io.h"

#define OUT_CAP (256u * 1024u) /* sender's frame buffer for batches */

typedef struct hello {
    uint32_t magic, version, queue_size, max_message;
} hello_t;

struct omdp_tcp_receiver {
    int listen_fd, fd;
    _Atomic int accepted_fd; /* handed over by the accept thread, -1 until then */
    _Atomic int stop;
    pthread_t acceptor;
    uint32_t queue_size, mask, max_message, slot_size, wait;
    uint8_t *slots;
    uint32_t *sizes;
    uint8_t *released;
    uint64_t fill_seq, read_seq, release_seq;
    int own_slots; /* slots allocated here (else the caller's) */
    uint8_t *in; /* bytes read from the stream, not yet framed */
    uint32_t in_len, in_cap;
    int eof, goodbye, dead, corrupt;
    omdp_tcp_stats_t st;
};

struct omdp_tcp_sender {
    int fd;
    uint32_t queue_size, max_message, on_full, mutex_on;
    _Atomic uint64_t owner;
    pthread_mutex_t lock;
    uint8_t *out;
    int gone;
    omdp_tcp_stats_t st;
};

static void *accept_loop(void *arg);

static int64_t deadline_of(int64_t timeout_ns)
{
    int64_t now = omdp_now_ns();
    return timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
}

static int poll_ms(int64_t deadline)
{
    if (deadline == INT64_MAX)
        return 100;
    int64_t left = deadline - omdp_now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + 999999) / 1000000;
    return ms > 100 ? 100 : (int)ms;
}

/* ---- receiver ---- */

/* Everything a receiver allocated (NULL and half-made receivers included). */
static void receiver_free(omdp_tcp_receiver_t *rx)
{
    if (!rx)
        return;
    if (rx->own_slots)
        free(rx->slots);
    free(rx->sizes);
    free(rx->released);
    free(rx->in);
    free(rx);
}

int omdp_tcp_receiver_listen(const char *host, uint16_t port, uint32_t queue_size, uint32_t max_message,
                             uint32_t wait, void *slot_mem, omdp_tcp_receiver_t **out)
{
    int rc = omdp_vega_check_knobs(queue_size, max_message, wait, OMDP_VEGA_ON_FULL_BLOCK);
    if (rc)
        return rc;
    struct sockaddr_in sa;
    if (omdp_sock_resolve(host, port, &sa) != 0)
        return OMDP_VEGA_E_BAD_NAME;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return OMDP_VEGA_E_SYS;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return OMDP_VEGA_E_SYS;
    }
    omdp_tcp_receiver_t *rx = calloc(1, sizeof *rx);
    uint32_t slot_size = omdp_tcp_slot_size(max_message);
    if (rx) {
        rx->own_slots = slot_mem == NULL;
        rx->slots = slot_mem ? slot_mem : aligned_alloc(64, (size_t)queue_size * slot_size);
        rx->sizes = calloc(queue_size, sizeof(uint32_t));
        rx->released = calloc(queue_size, 1);
        rx->in_cap = 2 * (max_message + 4u) > 65536u ? 2 * (max_message + 4u) : 65536u;
        rx->in = malloc(rx->in_cap);
    }
    if (!rx || !rx->slots || !rx->sizes || !rx->released || !rx->in) {
        receiver_free(rx);
        close(fd);
        return OMDP_VEGA_E_SYS;
    }
    rx->listen_fd = fd;
    rx->fd = -1;
    rx->queue_size = queue_size;
    rx->mask = queue_size - 1;
    rx->max_message = max_message;
    rx->slot_size = slot_size;
    rx->wait = wait;
    rx->st.peer_state = OMDP_VEGA_PEER_ABSENT;
    atomic_init(&rx->accepted_fd, -1);
    atomic_init(&rx->stop, 0);
    if (pthread_create(&rx->acceptor, NULL, accept_loop, rx) != 0) {
        close(fd);
        receiver_free(rx);
        return OMDP_VEGA_E_SYS;
    }
    *out = rx;
    return OMDP_VEGA_OK;
}

int omdp_tcp_receiver_port(const omdp_tcp_receiver_t *rx)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    if (getsockname(rx->listen_fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    return ntohs(sa.sin_port);
}

/* Read exactly n bytes by the deadline (used for the hello only). */
static int read_exact(int fd, void *buf, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = poll_ms(deadline);
        if (poll(&p, 1, ms) <= 0) {
            if (omdp_now_ns() >= deadline)
                return OMDP_VEGA_TIMEOUT;
            continue;
        }
        ssize_t r = recv(fd, (uint8_t *)buf + got, n - got, 0);
        if (r == 0)
            return OMDP_VEGA_E_PEER_DEAD;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return OMDP_VEGA_E_SYS;
        }
        got += (size_t)r;
    }
    return OMDP_VEGA_OK;
}

/* The accept thread: takes the sender's connection and answers its hello whatever the
 * receiver's own thread is doing, so two processes opening channels to each other in any
 * order never wait on one another. */
static void *accept_loop(void *arg)
{
    omdp_tcp_receiver_t *rx = arg;
    while (!atomic_load_explicit(&rx->stop, memory_order_acquire)) {
        struct pollfd p = {.fd = rx->listen_fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept4(rx->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        hello_t h;
        int rc = read_exact(fd, &h, sizeof h, omdp_now_ns() + 2000000000LL);
        uint8_t verdict = rc == OMDP_VEGA_OK && h.magic == OMDP_TCP_MAGIC && h.version == OMDP_TCP_VERSION &&
                          h.queue_size == rx->queue_size && h.max_message == rx->max_message;
        if (rc == OMDP_VEGA_OK)
            send(fd, &verdict, 1, MSG_NOSIGNAL);
        if (!verdict) {
            close(fd);
            continue;
        }
        omdp_sock_nodelay(fd);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        atomic_store_explicit(&rx->accepted_fd, fd, memory_order_release);
        break;
    }
    return NULL;
}

int omdp_tcp_receiver_accept(omdp_tcp_receiver_t *rx, int64_t timeout_ns)
{
    int64_t deadline = deadline_of(timeout_ns);
    for (;;) {
        if (rx->fd >= 0)
            return OMDP_VEGA_OK;
        int fd = atomic_load_explicit(&rx->accepted_fd, memory_order_acquire);
        if (fd >= 0) {
            rx->fd = fd;
            rx->st.peer_state = OMDP_VEGA_PEER_ATTACHED;
            return OMDP_VEGA_OK;
        }
        if (timeout_ns == 0 || omdp_now_ns() >= deadline)
            return OMDP_VEGA_TIMEOUT;
        usleep(200);
    }
}

/* Move complete frames from the input buffer into free slots, then read more. */
static void pump(omdp_tcp_receiver_t *rx)
{
    if (rx->fd < 0 && omdp_tcp_receiver_accept(rx, 0) != OMDP_VEGA_OK)
        return;
    for (;;) {
        uint32_t pos = 0;
        while (rx->in_len - pos >= 4 && rx->fill_seq - rx->release_seq < rx->queue_size) {
            uint32_t size;
            memcpy(&size, rx->in + pos, 4);
            if (size == OMDP_TCP_GOODBYE) {
                rx->goodbye = 1;
                pos += 4;
                continue;
            }
            if (size > rx->max_message) {
                rx->corrupt = 1; /* not a frame we can hold: the stream is out of step */
                rx->st.errors++;
                return;
            }
            if (rx->in_len - pos - 4 < size)
                break;
            uint32_t slot = (uint32_t)(rx->fill_seq & rx->mask);
            memcpy(rx->slots + (size_t)slot * rx->slot_size, rx->in + pos + 4, size);
            rx->sizes[slot] = size;
            rx->fill_seq++;
            pos += 4 + size;
        }
        if (pos) {
            memmove(rx->in, rx->in + pos, rx->in_len - pos);
            rx->in_len -= pos;
        }
        if (rx->fill_seq - rx->release_seq >= rx->queue_size || rx->eof || rx->fd < 0)
            return; /* no room: leave the bytes in the kernel, the window pushes back */
        ssize_t r = recv(rx->fd, rx->in + rx->in_len, rx->in_cap - rx->in_len, MSG_DONTWAIT);
        if (r > 0) {
            rx->in_len += (uint32_t)r;
            continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            rx->eof = 1;
            rx->st.peer_state = rx->goodbye ? OMDP_VEGA_PEER_CLOSED : OMDP_VEGA_PEER_DEAD;
        }
        return;
    }
}

int omdp_tcp_available(omdp_tcp_receiver_t *rx)
{
    if (rx->read_seq == rx->fill_seq)
        pump(rx);
    return rx->read_seq != rx->fill_seq;
}

static int take(omdp_tcp_receiver_t *rx, omdp_vega_msg_t *msg)
{
    uint32_t slot = (uint32_t)(rx->read_seq & rx->mask);
    msg->slot_id = slot;
    msg->size = rx->sizes[slot];
    msg->data = rx->slots + (size_t)slot * rx->slot_size;
    rx->read_seq++;
    rx->st.messages++;
    rx->st.bytes += msg->size;
    return OMDP_VEGA_OK;
}

int omdp_tcp_get(omdp_tcp_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns)
{
    if (omdp_tcp_available(rx))
        return take(rx, msg);
    int64_t deadline = deadline_of(timeout_ns);
    uint64_t polls = 0;
    for (;;) {
        if (rx->corrupt)
            return OMDP_VEGA_E_CORRUPT;
        if (rx->eof)
            return rx->goodbye ? OMDP_VEGA_E_PEER_CLOSED : OMDP_VEGA_E_PEER_DEAD;
        if (timeout_ns == 0)
            return OMDP_VEGA_EMPTY;
        polls++;
        if (rx->wait == OMDP_VEGA_WAIT_SPIN_BLOCK && rx->fd >= 0 && rx->fill_seq - rx->release_seq < rx->queue_size) {
            struct pollfd p = {.fd = rx->fd, .events = POLLIN};
            poll(&p, 1, poll_ms(deadline) > 1 ? 1 : poll_ms(deadline));
        } else if (rx->wait == OMDP_VEGA_WAIT_SPIN_YIELD || rx->fd < 0) {
            sched_yield();
        } else {
            omdp_vega_pause();
        }
        if (omdp_tcp_available(rx)) {
            rx->st.spins += polls;
            return take(rx, msg);
        }
        if ((polls & 63) == 0 && omdp_now_ns() >= deadline) {
            rx->st.spins += polls;
            return OMDP_VEGA_TIMEOUT;
        }
    }
}

int omdp_tcp_release(omdp_tcp_receiver_t *rx, uint32_t slot_id)
{
    uint64_t held = rx->read_seq - rx->release_seq;
    uint64_t pos = (slot_id - rx->release_seq) & rx->mask;
    if (slot_id >= rx->queue_size || pos >= held || rx->released[slot_id]) {
        rx->st.errors++;
        return OMDP_VEGA_E_BAD_SLOT;
    }
    if (pos != 0) {
        rx->released[slot_id] = 1;
        return OMDP_VEGA_OK;
    }
    rx->release_seq++;
    while (rx->release_seq < rx->read_seq && rx->released[rx->release_seq & rx->mask]) {
        rx->released[rx->release_seq & rx->mask] = 0;
        rx->release_seq++;
    }
    return OMDP_VEGA_OK;
}

void omdp_tcp_receiver_stats(const omdp_tcp_receiver_t *rx, omdp_tcp_stats_t *out)
{
    *out = rx->st;
}

int omdp_tcp_receiver_close(omdp_tcp_receiver_t *rx)
{
    if (!rx)
        return OMDP_VEGA_OK;
    atomic_store_explicit(&rx->stop, 1, memory_order_release);
    pthread_join(rx->acceptor, NULL);
    if (rx->fd < 0)
        rx->fd = atomic_load_explicit(&rx->accepted_fd, memory_order_acquire);
    if (rx->fd >= 0) {
        uint8_t bye = 0xff; /* tells a sender whose writes fail that we left in order */
        send(rx->fd, &bye, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(rx->fd);
    }
    close(rx->listen_fd);
    receiver_free(rx);
    return OMDP_VEGA_OK;
}

/* ---- sender ---- */

int omdp_tcp_sender_connect(const char *host, uint16_t port, uint32_t queue_size, uint32_t max_message,
                            uint32_t mutex, uint32_t on_full, int64_t timeout_ns, omdp_tcp_sender_t **out)
{
    int rc = omdp_vega_check_knobs(queue_size, max_message, OMDP_VEGA_WAIT_SPIN, on_full);
    if (rc)
        return rc;
    struct sockaddr_in sa;
    if (omdp_sock_resolve(host, port, &sa) != 0 || port == 0)
        return OMDP_VEGA_E_BAD_NAME;
    int64_t deadline = deadline_of(timeout_ns);
    int fd;
    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return OMDP_VEGA_E_SYS;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            break;
        int e = errno;
        close(fd);
        if (e != ECONNREFUSED && e != EINTR && e != ETIMEDOUT && e != ENETUNREACH) {
            errno = e;
            return OMDP_VEGA_E_SYS;
        }
        if (omdp_now_ns() >= deadline)
            return OMDP_VEGA_E_NOT_FOUND;
        usleep(2000);
    }
    omdp_sock_nodelay(fd);
    hello_t h = {OMDP_TCP_MAGIC, OMDP_TCP_VERSION, queue_size, max_message};
    struct iovec iov = {&h, sizeof h};
    uint8_t verdict = 0;
    if (omdp_sock_write_all(fd, &iov, 1) != 0 || read_exact(fd, &verdict, 1, omdp_now_ns() + 5000000000LL) != OMDP_VEGA_OK) {
        close(fd);
        return OMDP_VEGA_E_PEER_DEAD;
    }
    if (verdict != 1) {
        close(fd);
        return OMDP_VEGA_E_LAYOUT; /* queue_size/max_message differ from the receiver's */
    }
    omdp_tcp_sender_t *tx = calloc(1, sizeof *tx);
    if (!tx || !(tx->out = malloc(OUT_CAP + 4 + max_message))) {
        free(tx);
        close(fd);
        return OMDP_VEGA_E_SYS;
    }
    tx->fd = fd;
    tx->queue_size = queue_size;
    tx->max_message = max_message;
    tx->on_full = on_full;
    tx->mutex_on = mutex;
    pthread_mutex_init(&tx->lock, NULL);
    tx->st.peer_state = OMDP_VEGA_PEER_ATTACHED;
    *out = tx;
    return OMDP_VEGA_OK;
}

static int tx_enter(omdp_tcp_sender_t *tx)
{
    if (tx->mutex_on) {
        pthread_mutex_lock(&tx->lock);
        return OMDP_VEGA_OK;
    }
    uint64_t self = (uint64_t)pthread_self(), none = 0;
    uint64_t owner = atomic_load_explicit(&tx->owner, memory_order_relaxed);
    if (owner == self || (owner == 0 && atomic_compare_exchange_strong(&tx->owner, &none, self)))
        return OMDP_VEGA_OK;
    return OMDP_VEGA_E_THREAD;
}

static void tx_leave(omdp_tcp_sender_t *tx)
{
    if (tx->mutex_on)
        pthread_mutex_unlock(&tx->lock);
}

int omdp_tcp_ready_to_send(omdp_tcp_sender_t *tx)
{
    struct pollfd p = {.fd = tx->fd, .events = POLLOUT};
    return !tx->gone && poll(&p, 1, 0) > 0 && (p.revents & POLLOUT);
}

/* Wait for room in the socket: OK, FULL (drop policy / no wait), TIMEOUT. */
static int wait_room(omdp_tcp_sender_t *tx, int64_t timeout_ns)
{
    if (omdp_tcp_ready_to_send(tx))
        return OMDP_VEGA_OK;
    tx->st.full_events++;
    if (tx->on_full == OMDP_VEGA_ON_FULL_DROP)
        return OMDP_VEGA_FULL;
    if (timeout_ns < 0)
        return OMDP_VEGA_OK; /* the blocking write waits as long as it takes */
    if (timeout_ns == 0)
        return OMDP_VEGA_FULL;
    int64_t deadline = deadline_of(timeout_ns);
    while (omdp_now_ns() < deadline) {
        struct pollfd p = {.fd = tx->fd, .events = POLLOUT};
        if (poll(&p, 1, poll_ms(deadline)) > 0)
            return OMDP_VEGA_OK;
        tx->st.spins++;
    }
    return OMDP_VEGA_TIMEOUT;
}

static int send_failed(omdp_tcp_sender_t *tx)
{
    uint8_t bye;
    tx->gone = 1;
    ssize_t r = recv(tx->fd, &bye, 1, MSG_DONTWAIT);
    tx->st.peer_state = r == 1 && bye == 0xff ? OMDP_VEGA_PEER_CLOSED : OMDP_VEGA_PEER_DEAD;
    return tx->st.peer_state == OMDP_VEGA_PEER_CLOSED ? OMDP_VEGA_E_PEER_CLOSED : OMDP_VEGA_E_PEER_DEAD;
}

int omdp_tcp_put(omdp_tcp_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns)
{
    if (size > tx->max_message)
        return OMDP_VEGA_E_TOO_BIG;
    int rc = tx_enter(tx);
    if (rc)
        return rc;
    if (tx->gone) {
        tx_leave(tx);
        return tx->st.peer_state == OMDP_VEGA_PEER_CLOSED ? OMDP_VEGA_E_PEER_CLOSED : OMDP_VEGA_E_PEER_DEAD;
    }
    rc = wait_room(tx, timeout_ns);
    if (rc != OMDP_VEGA_OK) {
        if (rc == OMDP_VEGA_FULL && tx->on_full == OMDP_VEGA_ON_FULL_DROP)
            tx->st.drops++;
        tx_leave(tx);
        return rc;
    }
    uint32_t hdr = size;
    struct iovec iov[2] = {{&hdr, 4}, {(void *)data, size}};
    if (omdp_sock_write_all(tx->fd, iov, 2) != 0) {
        rc = send_failed(tx);
        tx_leave(tx);
        return rc;
    }
    tx->st.messages++;
    tx->st.bytes += size;
    tx_leave(tx);
    return OMDP_VEGA_OK;
}

int64_t omdp_tcp_put_batch(omdp_tcp_sender_t *tx, const uint8_t *buf, const uint32_t *sizes, uint32_t n,
                           int64_t timeout_ns)
{
    for (uint32_t i = 0; i < n; i++)
        if (sizes[i] > tx->max_message)
            return OMDP_VEGA_E_TOO_BIG;
    int rc = tx_enter(tx);
    if (rc)
        return rc;
    uint32_t done = 0;
    while (done < n) {
        if (tx->gone || (rc = wait_room(tx, timeout_ns)) != OMDP_VEGA_OK) {
            if (tx->gone)
                rc = send_failed(tx);
            else if (rc == OMDP_VEGA_FULL && tx->on_full == OMDP_VEGA_ON_FULL_DROP)
                tx->st.drops += n - done;
            tx_leave(tx);
            return done || rc > 0 ? (int64_t)done : rc;
        }
        uint32_t len = 0, k = done;
        uint64_t bytes = 0;
        while (k < n && (len == 0 || len + 4 + sizes[k] <= OUT_CAP)) {
            memcpy(tx->out + len, &sizes[k], 4);
            memcpy(tx->out + len + 4, buf, sizes[k]);
            len += 4 + sizes[k];
            bytes += sizes[k];
            buf += sizes[k];
            k++;
        }
        struct iovec iov = {tx->out, len};
        if (omdp_sock_write_all(tx->fd, &iov, 1) != 0) {
            rc = send_failed(tx);
            tx_leave(tx);
            return done ? (int64_t)done : rc;
        }
        tx->st.messages += k - done;
        tx->st.bytes += bytes;
        done = k;
    }
    tx_leave(tx);
    return done;
}

void omdp_tcp_sender_stats(const omdp_tcp_sender_t *tx, omdp_tcp_stats_t *out)
{
    *out = tx->st;
}

int omdp_tcp_sender_close(omdp_tcp_sender_t *tx)
{
    if (!tx)
        return OMDP_VEGA_OK;
    if (!tx->gone) {
        uint32_t bye = OMDP_TCP_GOODBYE;
        struct iovec iov = {&bye, 4};
        omdp_sock_write_all(tx->fd, &iov, 1);
    }
    close(tx->fd);
    pthread_mutex_destroy(&tx->lock);
    free(tx->out);
    free(tx);
    return OMDP_VEGA_OK;
}
