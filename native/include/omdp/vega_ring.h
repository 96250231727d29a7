/* The Vega ring itself: one protocol over a piece of memory, header-only.
 *
 * the Vega paper section IV, with footer polling from Slash. The region is a control block
 * (one 128-byte span per writer, Agrona style, so the two sides never share a cache line)
 * followed by `queue_size` slots of `slot_stride` bytes (64-byte aligned):
 *
 *   slot:  [begin word: lap tag << 32 | size][payload: size bytes, padded to 8][end word]
 *
 * Sender: waits for a credit, copies the payload into the slot, then seals it
 * (omdp_vega_seal): stores the begin word (release), then the end word (release) right
 * after the payload. The receiver polls only its own memory:
 * the begin word tells it the size, the end word that the payload is complete. Tags change
 * every lap, so bytes left from an earlier lap never read as new; the one place stale
 * payload could match (the word where this message's end word goes) is checked and
 * scrubbed by the sender before the begin word is published. Releasing a slot stores the
 * receiver's release count into the credit span, which the sender polls.
 *
 * Everything either side writes for the other goes through omdp_vega_publish(): "these
 * bytes at this offset of the peer's copy". Over shared memory both sides map the same
 * pages and the primitive does nothing; a mirrored ring (TCP, RDMA WRITE) installs a
 * mirror function and runs this same state machine unchanged.
 *
 * Status codes: 0 ok, positive = try again (FULL, EMPTY, TIMEOUT), negative = error.
 * Counters are single-writer relaxed stores, readable by anyone mapping the region.
 *
 * This header holds the layout, both ends' state and every step that never waits (claim,
 * commit, try_get, release, ...), all inline; nothing in it calls a function defined
 * elsewhere (the futex wake included). It also declares the ring's out-of-line parts,
 * which are built on it alone: the region and its ends (vega_ring.c), the peer's liveness
 * (vega_peer.c) and the waits (vega_wait.c, which also uses vega_peer.c). The API that may
 * wait (put, put_batch, get) and the channel life cycle are vega.h, one level up; include
 * vega.h, not this, from anywhere else.
 */
#ifndef OMDP_VEGA_RING_H
#define OMDP_VEGA_RING_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "omdp/relaxed_counter.h"
#include "omdp/vega_defaults.h"

#define OMDP_VEGA_MAGIC 0x31414745564d444fULL /* "ODMVEGA1" little-endian */
#define OMDP_VEGA_VERSION 1u
#define OMDP_VEGA_SPAN 128
#define OMDP_VEGA_SLOT_ALIGN 64
/* cdef: begin */
#define OMDP_VEGA_SLOT_HEADER 8
/* cdef: end */
#define OMDP_VEGA_SLOT_FOOTER 8
/* cdef: begin */
#define OMDP_VEGA_NAME_MAX 200
/* cdef: end */
#define OMDP_VEGA_PREFETCH_LINES 3 /* lines of a waited-for slot the receiver asks for together (more lines helped p50 of 256-512 B messages but hurt p99 on the test VM) */

/* Status codes. */
/* cdef: begin */
#define OMDP_VEGA_OK 0
#define OMDP_VEGA_FULL 1      /* no credit: would block (or, with on_full=drop, dropped) */
#define OMDP_VEGA_EMPTY 2     /* nothing complete to read */
#define OMDP_VEGA_TIMEOUT 3   /* waited the whole timeout */
#define OMDP_VEGA_E_TOO_BIG (-1)     /* message larger than max_message */
#define OMDP_VEGA_E_PEER_DEAD (-2)   /* the other side's process is gone without closing */
#define OMDP_VEGA_E_PEER_CLOSED (-3) /* the other side closed (and, for a receiver, all read) */
#define OMDP_VEGA_E_CORRUPT (-4)     /* a slot's begin word carries a size over max_message */
#define OMDP_VEGA_E_BAD_SLOT (-5)    /* release of a slot that is not held */
#define OMDP_VEGA_E_THREAD (-6)      /* mutex=false sender used from a second thread */
#define OMDP_VEGA_E_SYS (-7)         /* a system call failed; errno tells which */
#define OMDP_VEGA_E_BAD_SPEC (-8)    /* a knob out of range */
#define OMDP_VEGA_E_LAYOUT (-9)      /* region is not a Vega ring of this version/size */
#define OMDP_VEGA_E_NOT_FOUND (-10)  /* no such channel (yet) */
#define OMDP_VEGA_E_BUSY (-11)       /* the side is already attached by a live process */
#define OMDP_VEGA_E_EXISTS (-12)     /* a channel of this name already exists */
#define OMDP_VEGA_E_BAD_NAME (-13)   /* name empty, too long or with characters outside [A-Za-z0-9._-] */
#define OMDP_VEGA_E_CLAIM (-14)      /* commit without claim, or put while a claim is open */

/* Side states, stored in each side's span. DEAD is only ever reported, never stored. */
#define OMDP_VEGA_PEER_ABSENT 0
#define OMDP_VEGA_PEER_ATTACHED 1
#define OMDP_VEGA_PEER_CLOSED 2
#define OMDP_VEGA_PEER_DEAD 3
/* cdef: end */

#define OMDP_VEGA_CLOSED_TX 1u
#define OMDP_VEGA_CLOSED_RX 2u

/* cdef: begin */
typedef struct omdp_vega_layout {
    uint64_t magic; /* stored last (release) by the creator: the region is ready */
    uint32_t version;
    uint32_t queue_size;
    uint32_t max_message;
    uint32_t slot_stride;
    uint32_t wait;
    uint32_t on_full;
    uint32_t mutex;
    uint32_t log2_queue;
    uint64_t nonce;        /* per channel, mixed into end words */
    uint64_t slots_offset; /* from the start of the region */
    uint64_t total_size;
    int64_t created_ns;
} omdp_vega_layout_t;
/* cdef: end */

typedef struct omdp_vega_side {
    _Atomic int64_t pid;
    _Atomic uint64_t start_time; /* /proc/<pid>/stat starttime: a reused pid is not the peer */
    _Atomic uint32_t state;      /* OMDP_VEGA_PEER_* */
} omdp_vega_side_t;

typedef struct omdp_vega_tx_counters {
    _Atomic uint64_t messages;
    _Atomic uint64_t bytes;
    _Atomic uint64_t full_events; /* puts that found no credit */
    _Atomic uint64_t spins;       /* polls spent waiting for a credit */
    _Atomic uint64_t drops;       /* messages dropped by on_full=drop (or a put timeout) */
} omdp_vega_tx_counters_t;

typedef struct omdp_vega_rx_counters {
    _Atomic uint64_t messages;
    _Atomic uint64_t bytes;
    _Atomic uint64_t spins;  /* polls spent waiting for data */
    _Atomic uint64_t errors; /* corrupt slots seen, bad releases */
} omdp_vega_rx_counters_t;

typedef struct omdp_vega_wake {
    _Atomic uint32_t futex;   /* bumped by the waker */
    _Atomic uint32_t waiting; /* set by the side about to sleep */
} omdp_vega_wake_t;

/* The control block at the start of every region; each member on its own span. */
typedef struct omdp_vega_ctl {
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_layout_t layout;
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_side_t tx;
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_side_t rx;
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_tx_counters_t tx_count;
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_rx_counters_t rx_count;
    _Alignas(OMDP_VEGA_SPAN) _Atomic uint64_t credit; /* receiver's release count; sender polls */
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_wake_t data_wake;   /* receiver sleeps here */
    _Alignas(OMDP_VEGA_SPAN) omdp_vega_wake_t credit_wake; /* sender sleeps here */
    _Alignas(OMDP_VEGA_SPAN) _Atomic uint32_t closed;      /* OMDP_VEGA_CLOSED_* bits */
} omdp_vega_ctl_t;

/* The one remote-write primitive: copy `len` bytes at `offset` of the local region into
 * the same offset of the peer's copy, in call order. NULL over shared memory. */
/* cdef: begin */
typedef void (*omdp_vega_mirror_fn)(void *ctx, uint64_t offset, const void *src, uint32_t len);

/* One received message: the slot to release and a view of the payload. */
typedef struct omdp_vega_msg {
    uint32_t slot_id;
    uint32_t size;
    const uint8_t *data;
} omdp_vega_msg_t;

/* Snapshot of a channel for tools (omdp shm list); plain fields so Python can read it. */
typedef struct omdp_vega_stats {
    uint64_t tx_messages, tx_bytes, tx_full_events, tx_spins, tx_drops;
    uint64_t rx_messages, rx_bytes, rx_spins, rx_errors;
    uint64_t credit;
    int64_t tx_pid, rx_pid;
    uint32_t tx_state, rx_state; /* OMDP_VEGA_PEER_*, DEAD when the pid is gone */
    uint32_t queue_size, max_message, slot_stride, wait, on_full, mutex;
    int64_t created_ns;
    uint64_t total_size;
} omdp_vega_stats_t;
/* cdef: end */

typedef struct omdp_vega_sender {
    uint8_t *base;
    omdp_vega_ctl_t *ctl;
    uint8_t *slots;
    uint64_t seq;           /* next message's sequence number */
    uint64_t cached_credit; /* last credit read: seq - cached_credit < queue_size => room */
    uint64_t nonce;
    uint64_t slots_offset;
    uint32_t queue_size, mask, log2_queue, max_message, stride;
    uint32_t wait, on_full, mutex_on;
    int claimed;
    omdp_vega_mirror_fn mirror;
    void *mirror_ctx;
    _Atomic uint64_t owner; /* mutex=false: the one thread allowed to send */
    pthread_mutex_t lock;
    /* how the region is held (set by the opener, used by close) */
    int kind; /* OMDP_VEGA_REGION_* */
    uint64_t map_size;
    char name[OMDP_VEGA_NAME_MAX + 2];
} omdp_vega_sender_t;

typedef struct omdp_vega_receiver {
    uint8_t *base;
    omdp_vega_ctl_t *ctl;
    uint8_t *slots;
    uint64_t read_seq;    /* next sequence number to read */
    uint64_t release_seq; /* oldest sequence number still held */
    uint64_t nonce;
    uint64_t slots_offset;
    uint32_t queue_size, mask, log2_queue, max_message, stride;
    uint32_t wait, on_full;
    uint8_t *released; /* per slot: released out of order, waiting for older ones */
    omdp_vega_mirror_fn mirror;
    void *mirror_ctx;
    int kind;
    uint64_t map_size;
    char name[OMDP_VEGA_NAME_MAX + 2];
} omdp_vega_receiver_t;

#define OMDP_VEGA_REGION_SHM 0   /* POSIX shared memory mapped by the opener */
#define OMDP_VEGA_REGION_LOCAL 1 /* memory the caller owns (same process, or a mirror's copy) */

/* ---- layout arithmetic ---- */

static inline uint32_t omdp_vega_slot_stride(uint32_t max_message)
{
    uint64_t s = OMDP_VEGA_SLOT_HEADER + (((uint64_t)max_message + 7u) & ~7ull) + OMDP_VEGA_SLOT_FOOTER;
    return (uint32_t)((s + OMDP_VEGA_SLOT_ALIGN - 1) & ~(uint64_t)(OMDP_VEGA_SLOT_ALIGN - 1));
}

static inline uint64_t omdp_vega_slots_offset(void)
{
    return (sizeof(omdp_vega_ctl_t) + 4095u) & ~(uint64_t)4095u;
}

static inline uint64_t omdp_vega_region_size(uint32_t queue_size, uint32_t max_message)
{
    return omdp_vega_slots_offset() + (uint64_t)queue_size * omdp_vega_slot_stride(max_message);
}

/* Lap tag of a sequence number: never 0 (fresh memory), different on consecutive laps. */
static inline uint32_t omdp_vega_tag(uint64_t seq, uint32_t log2_queue)
{
    return (uint32_t)((seq >> log2_queue) % 0xffffffffull) + 1u;
}

static inline uint64_t omdp_vega_begin_word(uint64_t seq, uint32_t log2_queue, uint32_t size)
{
    return ((uint64_t)omdp_vega_tag(seq, log2_queue) << 32) | size;
}

static inline uint64_t omdp_vega_end_word(uint64_t seq, uint32_t log2_queue, uint32_t size, uint64_t nonce)
{
    return (((uint64_t)omdp_vega_tag(seq, log2_queue) << 32) | (uint64_t)size) ^ nonce;
}

static inline uint32_t omdp_vega_end_offset(uint32_t size)
{
    return OMDP_VEGA_SLOT_HEADER + ((size + 7u) & ~7u);
}

static inline void omdp_vega_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The remote-write primitive (see the file comment). */
static inline void omdp_vega_publish(omdp_vega_mirror_fn mirror, void *ctx, const uint8_t *base,
                                     uint64_t offset, uint32_t len)
{
    if (mirror)
        mirror(ctx, offset, base + offset, len);
}

/* Wake every thread asleep on a wake word (the side that announced it sleeps, spin-block
 * only). The two wakes are calls, never inlined into the put and release paths that test
 * for a sleeper (each file that uses one has its own copy). */
static inline void omdp_vega_futex_wake(_Atomic uint32_t *word)
{
    atomic_fetch_add_explicit(word, 1, memory_order_release);
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static __attribute__((noinline, unused)) void omdp_vega_wake_receiver(omdp_vega_ctl_t *ctl)
{
    omdp_vega_futex_wake(&ctl->data_wake.futex);
}

static __attribute__((noinline, unused)) void omdp_vega_wake_sender(omdp_vega_ctl_t *ctl)
{
    omdp_vega_futex_wake(&ctl->credit_wake.futex);
}

/* ---- the ring's out-of-line parts (native/src/transport/), built on this header alone ---- */

/* vega_ring.c: knobs, the region's layout, binding an end to a region. */
int omdp_vega_check_knobs(uint32_t queue_size, uint32_t max_message, uint32_t wait, uint32_t on_full);
int omdp_vega_region_init(void *base, uint64_t size, uint32_t queue_size, uint32_t max_message,
                          uint32_t mutex, uint32_t wait, uint32_t on_full);
int omdp_vega_sender_init(omdp_vega_sender_t *tx, void *base, uint64_t size);
int omdp_vega_receiver_init(omdp_vega_receiver_t *rx, void *base, uint64_t size);
void omdp_vega_sender_set_mirror(omdp_vega_sender_t *tx, omdp_vega_mirror_fn fn, void *ctx);
void omdp_vega_receiver_set_mirror(omdp_vega_receiver_t *rx, omdp_vega_mirror_fn fn, void *ctx);

/* vega_peer.c: is the other side there? Its pid and process start time, and its state. */
int omdp_vega_sender_peer(omdp_vega_sender_t *tx);   /* receiver's OMDP_VEGA_PEER_* */
int omdp_vega_receiver_peer(omdp_vega_receiver_t *rx); /* sender's OMDP_VEGA_PEER_* */
int omdp_vega_side_state(const omdp_vega_side_t *side); /* OMDP_VEGA_PEER_*, DEAD when its pid is gone */
void omdp_vega_side_claim(omdp_vega_side_t *side);      /* this process attaches as that side */
int omdp_vega_pid_alive(int64_t pid, uint64_t start_time);
uint64_t omdp_vega_pid_start_time(int64_t pid);

/* vega_wait.c: the waits (spin, spin-yield, spin-block on a futex), with peer checks, so a
 * dead or closed peer ends a wait with an error. */
int omdp_vega_put_full(omdp_vega_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns);
int omdp_vega_get_wait(omdp_vega_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns);
int omdp_vega_wait_data(omdp_vega_receiver_t *rx, int64_t timeout_ns); /* OK when available */
void *omdp_vega_claim_wait(omdp_vega_sender_t *tx, int64_t timeout_ns);

/* ---- sender ---- */

/* Enter the sender: take the mutex, or (mutex=false) check this is the owning thread. */
static inline int omdp_vega_enter(omdp_vega_sender_t *tx)
{
    if (tx->mutex_on) {
        /* an error-checking mutex: the claiming thread calling again gets E_CLAIM, not a hang */
        int e = pthread_mutex_lock(&tx->lock);
        return e == 0 ? OMDP_VEGA_OK : e == EDEADLK ? OMDP_VEGA_E_CLAIM : OMDP_VEGA_E_SYS;
    }
    uint64_t self = (uint64_t)pthread_self();
    uint64_t owner = atomic_load_explicit(&tx->owner, memory_order_relaxed);
    if (owner == self)
        return OMDP_VEGA_OK;
    uint64_t none = 0;
    if (owner == 0 && atomic_compare_exchange_strong(&tx->owner, &none, self))
        return OMDP_VEGA_OK;
    return OMDP_VEGA_E_THREAD;
}

static inline void omdp_vega_leave(omdp_vega_sender_t *tx)
{
    if (tx->mutex_on)
        pthread_mutex_unlock(&tx->lock);
}

/* Free slots as far as the sender knows, re-reading the credit when it thinks none. */
static inline uint32_t omdp_vega_room(omdp_vega_sender_t *tx)
{
    uint64_t used = tx->seq - tx->cached_credit;
    if (used >= tx->queue_size) {
        tx->cached_credit = atomic_load_explicit(&tx->ctl->credit, memory_order_acquire);
        used = tx->seq - tx->cached_credit;
    }
    return tx->queue_size - (uint32_t)used;
}

static inline uint8_t *omdp_vega_tx_slot(omdp_vega_sender_t *tx)
{
    return tx->slots + (size_t)(tx->seq & tx->mask) * tx->stride;
}

/* Publish the slot at tx->seq whose payload is already in place. */
static inline void omdp_vega_seal(omdp_vega_sender_t *tx, uint8_t *slot, uint32_t size)
{
    uint32_t end_off = omdp_vega_end_offset(size);
    uint64_t end = omdp_vega_end_word(tx->seq, tx->log2_queue, size, tx->nonce);
    _Atomic uint64_t *endp = (_Atomic uint64_t *)(slot + end_off);
    uint64_t slot_off = tx->slots_offset + (uint64_t)(tx->seq & tx->mask) * tx->stride;
    /* Stale bytes where the end word goes must not already equal it (Slash). The
     * begin word's release orders this scrub before anything the receiver reads after it. */
    if (atomic_load_explicit(endp, memory_order_relaxed) == end) {
        atomic_store_explicit(endp, ~end, memory_order_relaxed);
        omdp_vega_publish(tx->mirror, tx->mirror_ctx, tx->base, slot_off + end_off, 8);
    }
    atomic_store_explicit((_Atomic uint64_t *)slot, omdp_vega_begin_word(tx->seq, tx->log2_queue, size),
                          memory_order_release);
    atomic_store_explicit(endp, end, memory_order_release);
    omdp_vega_publish(tx->mirror, tx->mirror_ctx, tx->base, slot_off, end_off + OMDP_VEGA_SLOT_FOOTER);
    tx->seq++;
}

static inline void omdp_vega_after_put(omdp_vega_sender_t *tx, uint64_t n, uint64_t bytes)
{
    omdp_counter_add(&tx->ctl->tx_count.messages, n);
    omdp_counter_add(&tx->ctl->tx_count.bytes, bytes);
    if (tx->wait == OMDP_VEGA_WAIT_SPIN_BLOCK) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&tx->ctl->data_wake.waiting, memory_order_relaxed))
            omdp_vega_wake_receiver(tx->ctl);
    }
}

/* True when put would not wait (paper: ready_to_send). */
static inline int omdp_vega_ready_to_send(omdp_vega_sender_t *tx)
{
    return omdp_vega_room(tx) > 0;
}

/* One attempt, caller inside omdp_vega_enter: OK, FULL or E_TOO_BIG. */
static inline int omdp_vega_try_put_entered(omdp_vega_sender_t *tx, const void *data, uint32_t size)
{
    if (size > tx->max_message)
        return OMDP_VEGA_E_TOO_BIG;
    if (tx->claimed)
        return OMDP_VEGA_E_CLAIM;
    if (omdp_vega_room(tx) == 0)
        return OMDP_VEGA_FULL;
    uint8_t *slot = omdp_vega_tx_slot(tx);
    memcpy(slot + OMDP_VEGA_SLOT_HEADER, data, size);
    omdp_vega_seal(tx, slot, size);
    omdp_vega_after_put(tx, 1, size);
    return OMDP_VEGA_OK;
}
/* Claim the next slot to write a message in place: a pointer to max_message payload bytes,
 * or NULL when the ring is full (or the thread check fails). With mutex on, the mutex is
 * held from claim to commit. Over a mirrored ring write only the bytes you commit: the
 * end-word scrub reads the local copy, which must match what the peer's copy holds. */
static inline void *omdp_vega_claim(omdp_vega_sender_t *tx)
{
    if (omdp_vega_enter(tx))
        return NULL;
    if (tx->claimed || omdp_vega_room(tx) == 0) {
        omdp_vega_leave(tx);
        return NULL;
    }
    tx->claimed = 1;
    return omdp_vega_tx_slot(tx) + OMDP_VEGA_SLOT_HEADER;
}

/* Publish the claimed slot with `size` payload bytes. */
static inline int omdp_vega_commit(omdp_vega_sender_t *tx, uint32_t size)
{
    if (!tx->claimed)
        return OMDP_VEGA_E_CLAIM;
    if (size > tx->max_message)
        return OMDP_VEGA_E_TOO_BIG;
    tx->claimed = 0;
    omdp_vega_seal(tx, omdp_vega_tx_slot(tx), size);
    omdp_vega_after_put(tx, 1, size);
    omdp_vega_leave(tx);
    return OMDP_VEGA_OK;
}

/* Give a claim back unsent. */
static inline int omdp_vega_abandon(omdp_vega_sender_t *tx)
{
    if (!tx->claimed)
        return OMDP_VEGA_E_CLAIM;
    tx->claimed = 0;
    omdp_vega_leave(tx);
    return OMDP_VEGA_OK;
}
/* ---- receiver ---- */

static inline uint8_t *omdp_vega_rx_slot(omdp_vega_receiver_t *rx, uint64_t seq)
{
    return rx->slots + (size_t)(seq & rx->mask) * rx->stride;
}

/* Is the message at `seq` complete? OK (msg filled), EMPTY or E_CORRUPT. */
static inline int omdp_vega_peek(omdp_vega_receiver_t *rx, uint64_t seq, omdp_vega_msg_t *msg)
{
    const uint8_t *slot = omdp_vega_rx_slot(rx, seq);
    uint64_t begin = atomic_load_explicit((_Atomic uint64_t *)slot, memory_order_acquire);
    if ((uint32_t)(begin >> 32) != omdp_vega_tag(seq, rx->log2_queue)) {
        /* ask for the slot's next lines too while waiting (up to OMDP_VEGA_PREFETCH_LINES),
         * so a small message's end word arrives with its begin word instead of one
         * transfer later */
        uint32_t reach = rx->stride < 64u * OMDP_VEGA_PREFETCH_LINES ? rx->stride : 64u * OMDP_VEGA_PREFETCH_LINES;
        for (uint32_t off = 64; off < reach; off += 64)
            __builtin_prefetch(slot + off);
        return OMDP_VEGA_EMPTY;
    }
    uint32_t size = (uint32_t)begin;
    if (size > rx->max_message)
        return OMDP_VEGA_E_CORRUPT;
    uint64_t end = atomic_load_explicit((_Atomic uint64_t *)(slot + omdp_vega_end_offset(size)), memory_order_acquire);
    if (end != omdp_vega_end_word(seq, rx->log2_queue, size, rx->nonce))
        return OMDP_VEGA_EMPTY; /* begin seen, payload still landing */
    msg->slot_id = (uint32_t)(seq & rx->mask);
    msg->size = size;
    msg->data = slot + OMDP_VEGA_SLOT_HEADER;
    return OMDP_VEGA_OK;
}

/* True when get would return a message at once (paper: available). */
static inline int omdp_vega_available(omdp_vega_receiver_t *rx)
{
    omdp_vega_msg_t m;
    if (rx->read_seq - rx->release_seq >= rx->queue_size)
        return 0;
    return omdp_vega_peek(rx, rx->read_seq, &m) == OMDP_VEGA_OK;
}

/* Take the next message without waiting: OK, EMPTY or E_CORRUPT. */
static inline int omdp_vega_try_get(omdp_vega_receiver_t *rx, omdp_vega_msg_t *msg)
{
    if (rx->read_seq - rx->release_seq >= rx->queue_size)
        return OMDP_VEGA_EMPTY; /* every slot is held: nothing new can be there */
    int rc = omdp_vega_peek(rx, rx->read_seq, msg);
    if (rc == OMDP_VEGA_OK) {
        rx->read_seq++;
        omdp_counter_add(&rx->ctl->rx_count.messages, 1);
        omdp_counter_add(&rx->ctl->rx_count.bytes, msg->size);
    } else if (rc == OMDP_VEGA_E_CORRUPT) {
        omdp_counter_add(&rx->ctl->rx_count.errors, 1);
    }
    return rc;
}
/* Up to `max` complete messages into msgs[] without waiting; returns how many (or an error
 * when the first one is corrupt). */
static inline int64_t omdp_vega_get_batch(omdp_vega_receiver_t *rx, omdp_vega_msg_t *msgs, uint32_t max)
{
    uint32_t n = 0;
    uint64_t bytes = 0;
    uint64_t room = rx->queue_size - (rx->read_seq - rx->release_seq);
    if (max > room)
        max = (uint32_t)room;
    while (n < max) {
        int rc = omdp_vega_peek(rx, rx->read_seq, &msgs[n]);
        if (rc != OMDP_VEGA_OK) {
            if (rc == OMDP_VEGA_E_CORRUPT) {
                omdp_counter_add(&rx->ctl->rx_count.errors, 1);
                if (n == 0)
                    return rc;
            }
            break;
        }
        bytes += msgs[n].size;
        rx->read_seq++;
        n++;
    }
    omdp_counter_add(&rx->ctl->rx_count.messages, n);
    omdp_counter_add(&rx->ctl->rx_count.bytes, bytes);
    return n;
}

/* Up to `max` complete messages in consecutive slots, never past the ring's end, so they
 * form one strided block: sizes[] filled, *first_slot set. Returns the count or an error. */
static inline int64_t omdp_vega_get_run(omdp_vega_receiver_t *rx, uint32_t *sizes, uint32_t max, uint32_t *first_slot)
{
    omdp_vega_msg_t m;
    uint32_t first = (uint32_t)(rx->read_seq & rx->mask);
    uint32_t to_end = rx->queue_size - first;
    uint64_t room = rx->queue_size - (rx->read_seq - rx->release_seq);
    if (max > to_end)
        max = to_end;
    if (max > room)
        max = (uint32_t)room;
    uint32_t n = 0;
    uint64_t bytes = 0;
    *first_slot = first;
    while (n < max) {
        int rc = omdp_vega_peek(rx, rx->read_seq, &m);
        if (rc != OMDP_VEGA_OK) {
            if (rc == OMDP_VEGA_E_CORRUPT) {
                omdp_counter_add(&rx->ctl->rx_count.errors, 1);
                if (n == 0)
                    return rc;
            }
            break;
        }
        sizes[n++] = m.size;
        bytes += m.size;
        rx->read_seq++;
    }
    omdp_counter_add(&rx->ctl->rx_count.messages, n);
    omdp_counter_add(&rx->ctl->rx_count.bytes, bytes);
    return n;
}

static inline void omdp_vega_send_credit(omdp_vega_receiver_t *rx)
{
    atomic_store_explicit(&rx->ctl->credit, rx->release_seq, memory_order_release);
    omdp_vega_publish(rx->mirror, rx->mirror_ctx, rx->base, offsetof(omdp_vega_ctl_t, credit), 8);
    if (rx->wait == OMDP_VEGA_WAIT_SPIN_BLOCK) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&rx->ctl->credit_wake.waiting, memory_order_relaxed))
            omdp_vega_wake_sender(rx->ctl);
    }
}

/* Mark one held slot released; no credit sent. 1 when the oldest held slot moved. */
static inline int omdp_vega_mark_released(omdp_vega_receiver_t *rx, uint32_t slot_id)
{
    uint64_t held = rx->read_seq - rx->release_seq;
    if (slot_id >= rx->queue_size)
        return OMDP_VEGA_E_BAD_SLOT;
    uint64_t pos = (slot_id - rx->release_seq) & rx->mask;
    if (pos >= held || rx->released[slot_id])
        return OMDP_VEGA_E_BAD_SLOT;
    if (pos != 0) {
        rx->released[slot_id] = 1; /* out of order: credit waits for the older slots */
        return 0;
    }
    rx->release_seq++;
    while (rx->release_seq < rx->read_seq && rx->released[rx->release_seq & rx->mask]) {
        rx->released[rx->release_seq & rx->mask] = 0;
        rx->release_seq++;
    }
    return 1;
}

/* Hand a slot back to the sender (paper: release_buffer). */
static inline int omdp_vega_release(omdp_vega_receiver_t *rx, uint32_t slot_id)
{
    int rc = omdp_vega_mark_released(rx, slot_id);
    if (rc < 0) {
        omdp_counter_add(&rx->ctl->rx_count.errors, 1);
        return rc;
    }
    if (rc)
        omdp_vega_send_credit(rx);
    return OMDP_VEGA_OK;
}

/* Release `n` slots starting at `first_slot` (wrapping), with one credit write. */
static inline int omdp_vega_release_batch(omdp_vega_receiver_t *rx, uint32_t first_slot, uint32_t n)
{
    int moved = 0;
    for (uint32_t i = 0; i < n; i++) {
        int rc = omdp_vega_mark_released(rx, (first_slot + i) & rx->mask);
        if (rc < 0) {
            omdp_counter_add(&rx->ctl->rx_count.errors, 1);
            if (moved)
                omdp_vega_send_credit(rx);
            return rc;
        }
        moved |= rc;
    }
    if (moved)
        omdp_vega_send_credit(rx);
    return OMDP_VEGA_OK;
}

/* Messages taken by get and not yet released. */
static inline uint32_t omdp_vega_held(const omdp_vega_receiver_t *rx)
{
    return (uint32_t)(rx->read_seq - rx->release_seq);
}

#endif /* OMDP_VEGA_RING_H */
