/* Vega's waits, whatever the medium: a full ring (put_full, claim_wait) and an empty one
 * (wait_data, get_wait), by the channel's strategy (spin, spin-yield, spin-block on a
 * futex), with peer checks, so a dead or closed peer ends a wait with an error. Built on
 * vega_ring.h's steps and vega_peer.c; vega.h's put and get call in here. */
#define _GNU_SOURCE
#include "omdp/vega_ring.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "omdp/clock.h"

#define PEER_CHECK_NS 1000000LL   /* look at the peer's pid at most every millisecond */
#define YIELD_AFTER_POLLS 64      /* spin-yield: pure spinning before yielding */
#define BLOCK_AFTER_POLLS 4096    /* spin-block: pure spinning before sleeping */
#define BLOCK_SLICE_NS 1000000LL  /* a sleep never lasts longer, so peer checks keep running */

/* ---- futex sleep ---- */

/* Sleep on `w` unless `ready` turns true after announcing the sleep (Dekker with the
 * waker's fence-then-check). At most `max_ns`. */
static void sleep_on(omdp_vega_wake_t *w, int (*ready)(void *), void *arg, int64_t max_ns)
{
    uint32_t seen = atomic_load_explicit(&w->futex, memory_order_acquire);
    atomic_store_explicit(&w->waiting, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (!ready(arg)) {
        struct timespec ts = {.tv_sec = max_ns / 1000000000LL, .tv_nsec = max_ns % 1000000000LL};
        syscall(SYS_futex, (uint32_t *)&w->futex, FUTEX_WAIT, seen, &ts, NULL, 0);
    }
    atomic_store_explicit(&w->waiting, 0, memory_order_relaxed);
}

static int credit_ready(void *arg)
{
    return omdp_vega_room((omdp_vega_sender_t *)arg) > 0;
}

static int data_ready(void *arg)
{
    return omdp_vega_available((omdp_vega_receiver_t *)arg);
}

/* One step of waiting by the channel's strategy; 1 when it slept or yielded. */
static int wait_step(uint32_t wait, uint64_t polls, omdp_vega_wake_t *w, int (*ready)(void *), void *arg,
                     int64_t now, int64_t deadline)
{
    if (wait == OMDP_VEGA_WAIT_SPIN_YIELD && polls > YIELD_AFTER_POLLS) {
        sched_yield();
        return 1;
    }
    if (wait == OMDP_VEGA_WAIT_SPIN_BLOCK && polls > BLOCK_AFTER_POLLS) {
        int64_t slice = deadline - now < BLOCK_SLICE_NS ? deadline - now : BLOCK_SLICE_NS;
        if (slice > 0)
            sleep_on(w, ready, arg, slice);
        return 1;
    }
    omdp_vega_pause();
    return 0;
}

static int64_t deadline_of(int64_t timeout_ns, int64_t now)
{
    return timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
}

/* The receiver as the sender sees it: an error code when gone, else 0. */
static int receiver_gone(omdp_vega_sender_t *tx)
{
    int peer = omdp_vega_sender_peer(tx);
    if (peer == OMDP_VEGA_PEER_CLOSED)
        return OMDP_VEGA_E_PEER_CLOSED;
    if (peer == OMDP_VEGA_PEER_DEAD)
        return OMDP_VEGA_E_PEER_DEAD;
    return 0;
}

int omdp_vega_put_full(omdp_vega_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns)
{
    omdp_counter_add(&tx->ctl->tx_count.full_events, 1);
    if (tx->on_full == OMDP_VEGA_ON_FULL_DROP) {
        omdp_counter_add(&tx->ctl->tx_count.drops, 1);
        /* a dropping sender never waits, so it looks at its peer here */
        int gone = receiver_gone(tx);
        return gone ? gone : OMDP_VEGA_FULL;
    }
    if (timeout_ns == 0)
        return OMDP_VEGA_FULL;
    int64_t now = omdp_now_ns();
    int64_t deadline = deadline_of(timeout_ns, now);
    int64_t next_peer_check = now + PEER_CHECK_NS;
    uint64_t polls = 0;
    for (;;) {
        if (omdp_vega_room(tx) > 0) {
            omdp_counter_add(&tx->ctl->tx_count.spins, polls);
            uint8_t *slot = omdp_vega_tx_slot(tx);
            memcpy(slot + OMDP_VEGA_SLOT_HEADER, data, size);
            omdp_vega_seal(tx, slot, size);
            omdp_vega_after_put(tx, 1, size);
            return OMDP_VEGA_OK;
        }
        polls++;
        int slept = wait_step(tx->wait, polls, &tx->ctl->credit_wake, credit_ready, tx, now, deadline);
        if (slept || (polls & 255) == 0) {
            now = omdp_now_ns();
            if (now >= next_peer_check) {
                int gone = receiver_gone(tx);
                if (gone) {
                    omdp_counter_add(&tx->ctl->tx_count.spins, polls);
                    return gone;
                }
                next_peer_check = now + PEER_CHECK_NS;
            }
            if (now >= deadline) {
                omdp_counter_add(&tx->ctl->tx_count.spins, polls);
                return OMDP_VEGA_TIMEOUT;
            }
        }
    }
}

void *omdp_vega_claim_wait(omdp_vega_sender_t *tx, int64_t timeout_ns)
{
    if (!tx->mutex_on) {
        uint64_t owner = atomic_load_explicit(&tx->owner, memory_order_relaxed);
        if (owner && owner != (uint64_t)pthread_self())
            return NULL; /* the thread check fails at once, waiting would not help */
    }
    int64_t now = omdp_now_ns();
    int64_t deadline = deadline_of(timeout_ns, now);
    int64_t next_peer_check = now + PEER_CHECK_NS;
    uint64_t polls = 0;
    for (;;) {
        void *p = omdp_vega_claim(tx);
        if (p || tx->claimed)
            return p;
        polls++;
        wait_step(tx->wait, polls, &tx->ctl->credit_wake, credit_ready, tx, now, deadline);
        now = omdp_now_ns();
        if (now >= deadline)
            return NULL;
        if (now >= next_peer_check) {
            if (receiver_gone(tx))
                return NULL;
            next_peer_check = now + PEER_CHECK_NS;
        }
    }
}

int omdp_vega_wait_data(omdp_vega_receiver_t *rx, int64_t timeout_ns)
{
    if (omdp_vega_available(rx))
        return OMDP_VEGA_OK;
    if (timeout_ns == 0)
        return OMDP_VEGA_TIMEOUT;
    int64_t now = omdp_now_ns();
    int64_t deadline = deadline_of(timeout_ns, now);
    int64_t next_peer_check = now + PEER_CHECK_NS;
    uint64_t polls = 0;
    for (;;) {
        if (omdp_vega_available(rx)) {
            omdp_counter_add(&rx->ctl->rx_count.spins, polls);
            return OMDP_VEGA_OK;
        }
        polls++;
        int slept = wait_step(rx->wait, polls, &rx->ctl->data_wake, data_ready, rx, now, deadline);
        if (slept || (polls & 255) == 0) {
            now = omdp_now_ns();
            if (now >= next_peer_check) {
                int peer = omdp_vega_receiver_peer(rx);
                if (peer == OMDP_VEGA_PEER_CLOSED || peer == OMDP_VEGA_PEER_DEAD) {
                    /* whatever the sender published before it went is still to be read */
                    omdp_counter_add(&rx->ctl->rx_count.spins, polls);
                    if (omdp_vega_available(rx))
                        return OMDP_VEGA_OK;
                    return peer == OMDP_VEGA_PEER_CLOSED ? OMDP_VEGA_E_PEER_CLOSED : OMDP_VEGA_E_PEER_DEAD;
                }
                next_peer_check = now + PEER_CHECK_NS;
            }
            if (now >= deadline) {
                omdp_counter_add(&rx->ctl->rx_count.spins, polls);
                return OMDP_VEGA_TIMEOUT;
            }
        }
    }
}

int omdp_vega_get_wait(omdp_vega_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns)
{
    int rc = omdp_vega_wait_data(rx, timeout_ns);
    return rc == OMDP_VEGA_OK ? omdp_vega_try_get(rx, msg) : rc;
}
