/* The feed handler's inputs: multicast sockets (epoll + recvmmsg) or the multicast packet
 * ring (feed_handler_rxring.c), and the replayer's Vega ring (feed_handler.h). Every packet received goes to omdp_fh_process_packet
 * (feed_handler_packet.c); the operator (feed_handler_op.c) polls, drains and closes them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "omdp/clock.h"
#include "omdp/stamp_clock.h"
#include "feed_handler_internal.h"
#include "feed_handler_xdp.h"

/* ---- multicast ------------------------------------------------------------------------ */

static int open_multicast(feed_handler_t *fh, char *err, size_t errlen)
{
    fh->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (fh->epfd < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        return -1;
    }
    uint32_t n_fds = 0;
    for (uint32_t i = 0; i < fh->n_lines; i++)
        for (uint32_t c = 0; c < OMDP_FH_COPIES; c++) {
            int fd = fh->lines[i].fd[c];
            if (fd < 0)
                continue;
            struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (i << 1) | c};
            if (epoll_ctl(fh->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
                snprintf(err, errlen, "line %u copy %c: epoll_ctl(fd %d): %s", fh->lines[i].line, "AB"[c], fd,
                         strerror(errno));
                return -1;
            }
            n_fds++;
        }
    fh->n_fds = n_fds;
    fh->events = calloc(n_fds, sizeof *fh->events);
    fh->mm = calloc(fh->batch, sizeof *fh->mm);
    fh->iov = calloc(fh->batch, sizeof *fh->iov);
    fh->rxbuf = malloc((size_t)fh->batch * FH_RX_BYTES);
    if (!fh->events || !fh->mm || !fh->iov || !fh->rxbuf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t k = 0; k < fh->batch; k++) {
        fh->iov[k].iov_base = fh->rxbuf + (size_t)k * FH_RX_BYTES;
        fh->iov[k].iov_len = FH_RX_BYTES;
        fh->mm[k].msg_hdr.msg_iov = &fh->iov[k];
        fh->mm[k].msg_hdr.msg_iovlen = 1;
    }
    return 0;
}

/* Every readable socket: one recvmmsg of up to `batch` datagrams each. */
static int poll_multicast(feed_handler_t *fh, const omdp_emitter_t *em, int *produced)
{
    int ready = epoll_wait(fh->epfd, fh->events, (int)fh->n_fds, 0);
    if (ready < 0) {
        if (errno != EINTR)
            fh->receive_errors++;
        return OMDP_OK;
    }
    for (int r = 0; r < ready; r++) {
        uint32_t li = fh->events[r].data.u32 >> 1, copy = fh->events[r].data.u32 & 1;
        int got = recvmmsg(fh->lines[li].fd[copy], fh->mm, fh->batch, MSG_DONTWAIT, NULL);
        int64_t fh_in = omdp_stamp_ns();
        fh->receive_calls++;
        if (got < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                fh->receive_errors++;
            continue;
        }
        for (int k = 0; k < got; k++) {
            uint32_t len = fh->mm[k].msg_len;
            if (fh->mm[k].msg_hdr.msg_flags & MSG_TRUNC || len > FH_RX_BYTES) {
                fh->bad_frames++; /* larger than any OPRA packet */
                continue;
            }
            int rc = omdp_fh_process_packet(fh, li, copy, fh->iov[k].iov_base, len, fh_in, 0, em);
            if (rc < 0)
                return rc;
        }
        if (got > 0)
            *produced = 1;
    }
    return omdp_fh_flush(fh, em); /* what this poll found leaves now: no waiting for more */
}

/* ---- ring ----------------------------------------------------------------------------- */

/* Hand back the `n` slots this poll took (consecutive, from `first`), with one credit write:
 * a packet is decoded out of its slot before the next is taken, so the slots are free, and a
 * credit per packet was one more write to the line the replayer reads. */
static int release_taken(feed_handler_t *fh, uint32_t first, uint32_t n)
{
    if (n == 0)
        return OMDP_OK;
    return omdp_vega_release_batch(fh->ring, first, n) == OMDP_VEGA_OK ? OMDP_OK : OMDP_ERR_CHANNEL;
}

/* Ask for the first lines of the ring's next slot while this packet is decoded: its frame
 * and packet were written by the replayer on another core, so each line is a transfer, and
 * a packet's decode is time enough for them to arrive. A slot not written yet costs nothing
 * more: its lines come back once the replayer has written them, as they would anyway. */
#define FH_RING_PREFETCH_LINES 6 /* slot header, frame and a typical packet (~290 bytes) */
static inline void prefetch_next_slot(const omdp_vega_receiver_t *rx)
{
    const uint8_t *slot = rx->slots + (size_t)(rx->read_seq & rx->mask) * rx->stride;
    omdp_fh_prefetch_lines(slot, rx->stride < 64u * FH_RING_PREFETCH_LINES ? rx->stride : 64u * FH_RING_PREFETCH_LINES);
}

/* Up to `batch` frames from the ring; *empty set when it had none. */
static int poll_ring(feed_handler_t *fh, const omdp_emitter_t *em, int *produced, int *empty)
{
    omdp_vega_msg_t msg;
    uint32_t first = 0, taken = 0;
    *empty = 0;
    for (uint32_t k = 0; k < fh->batch; k++) {
        int rc = omdp_vega_try_get(fh->ring, &msg);
        if (rc == OMDP_VEGA_EMPTY) {
            *empty = k == 0;
            break; /* the ring is empty: what was taken leaves now */
        }
        if (rc != OMDP_VEGA_OK) {
            release_taken(fh, first, taken);
            omdp_fh_flush(fh, em);
            return OMDP_ERR_CHANNEL; /* a corrupt slot: the ring cannot be read past it */
        }
        int64_t fh_in = omdp_stamp_ns(); /* the handler has the packet from now on */
        if (k == 0) {
            first = msg.slot_id;
            /* Back-pressure: with this first message taken, is the ring's last slot written
             * too? Then the ring was full and the replayer waits for this handler. */
            omdp_vega_msg_t last;
            if (omdp_vega_peek(fh->ring, fh->ring->read_seq + fh->ring->queue_size - 2, &last) == OMDP_VEGA_OK)
                fh->ring_full_polls++;
        }
        taken++;
        prefetch_next_slot(fh->ring);
        fh->receive_calls++;
        omdp_replay_frame_t h;
        int r = OMDP_OK;
        if (msg.size < sizeof h) {
            fh->bad_frames++;
        } else {
            memcpy(&h, msg.data, sizeof h);
            uint8_t li = h.line <= OMDP_FH_MAX_LINE ? fh->line_index[h.line] : FH_NO_LINE;
            if ((uint32_t)h.length > msg.size - sizeof h || h.copy >= OMDP_FH_COPIES)
                fh->bad_frames++;
            else if (li == FH_NO_LINE)
                fh->unknown_line++;
            else
                r = omdp_fh_process_packet(fh, li, h.copy, msg.data + sizeof h, h.length, fh_in, h.intended_ns, em);
        }
        if (r < 0) {
            release_taken(fh, first, taken);
            return r;
        }
        *produced = 1;
    }
    int rr = release_taken(fh, first, taken);
    int rc = omdp_fh_flush(fh, em);
    return rr < 0 ? rr : rc;
}

/* ---- the input as a whole ------------------------------------------------------------- */

int omdp_fh_input_open(feed_handler_t *fh, char *err, size_t errlen)
{
    if (fh->input == OMDP_FH_INPUT_MULTICAST && fh->receive == OMDP_FH_RECEIVE_PACKET_RING)
        return omdp_fh_rxring_open(fh, err, errlen);
    if (fh->input == OMDP_FH_INPUT_MULTICAST && fh->receive == OMDP_FH_RECEIVE_XDP)
        return omdp_fh_xdp_open(fh, err, errlen);
    if (fh->input == OMDP_FH_INPUT_MULTICAST)
        return open_multicast(fh, err, errlen);
    return 0;
}

/* One poll of the multicast input, by sockets or the packet ring. */
static int poll_mc(feed_handler_t *fh, const omdp_emitter_t *em, int *produced)
{
    if (fh->receive == OMDP_FH_RECEIVE_PACKET_RING)
        return omdp_fh_rxring_poll(fh, em, produced);
    if (fh->receive == OMDP_FH_RECEIVE_XDP)
        return omdp_fh_xdp_poll(fh, em, produced);
    return poll_multicast(fh, em, produced);
}

void omdp_fh_input_close(feed_handler_t *fh)
{
    omdp_fh_rxring_close(fh);
    omdp_fh_xdp_close(fh);
    if (fh->epfd >= 0)
        close(fh->epfd);
    fh->epfd = -1;
    free(fh->events);
    free(fh->mm);
    free(fh->iov);
    free(fh->rxbuf);
    fh->events = NULL;
    fh->mm = NULL;
    fh->iov = NULL;
    fh->rxbuf = NULL;
}

int omdp_fh_input_poll(feed_handler_t *fh, const omdp_emitter_t *em)
{
    int produced = 0, rc;
    if (fh->input == OMDP_FH_INPUT_MULTICAST) {
        rc = poll_mc(fh, em, &produced);
        if (rc < 0)
            return rc;
        return produced ? OMDP_POLL_PRODUCED : OMDP_POLL_IDLE;
    }
    int empty = 0;
    rc = poll_ring(fh, em, &produced, &empty);
    if (rc < 0)
        return rc;
    if (produced || !empty)
        return OMDP_POLL_PRODUCED;
    /* Idle: has the sender left (closed, or died) with everything read? Asked every
     * FH_PEER_CHECK_NS, the clock read only every FH_PEER_CHECK_POLLS idle polls: a clock
     * read on every idle poll was 5% of a busy partition's time (it goes idle between
     * bursts), and the answer is only needed within milliseconds. */
    if (++fh->idle_polls_since_clock < FH_PEER_CHECK_POLLS)
        return OMDP_POLL_IDLE;
    fh->idle_polls_since_clock = 0;
    int64_t now = omdp_now_ns();
    if (now < fh->next_peer_check_ns)
        return OMDP_POLL_IDLE;
    fh->next_peer_check_ns = now + FH_PEER_CHECK_NS;
    int peer = omdp_vega_receiver_peer(fh->ring);
    if (peer != OMDP_VEGA_PEER_CLOSED && peer != OMDP_VEGA_PEER_DEAD)
        return OMDP_POLL_IDLE;
    /* The sender's last frames were published before it closed: take them, then end. */
    rc = poll_ring(fh, em, &produced, &empty);
    if (rc < 0)
        return rc;
    if (produced)
        return OMDP_POLL_PRODUCED;
    fh->ring_closed = 1;
    return OMDP_POLL_DONE;
}

int omdp_fh_input_drain(feed_handler_t *fh, const omdp_emitter_t *em)
{
    /* Bounded: whatever is queued now, and no more than a few rounds of it. */
    for (int round = 0; round < 4096; round++) {
        int produced = 0, empty = 1, rc;
        if (fh->input == OMDP_FH_INPUT_MULTICAST)
            rc = poll_mc(fh, em, &produced);
        else
            rc = poll_ring(fh, em, &produced, &empty);
        if (rc < 0)
            return rc;
        if (!produced)
            break;
    }
    if (fh->receive == OMDP_FH_RECEIVE_PACKET_RING)
        omdp_fh_rxring_count_drops(fh); /* the ring's losses since the last look */
    return OMDP_OK;
}
