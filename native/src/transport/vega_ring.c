/* Vega's set-up that does not depend on the medium: knob checks, a region's layout, and
 * binding a sender or a receiver to a region (vega_ring.h). Uses nothing but that header
 * and the clock; the waits are vega_wait.c, the channels vega_shm.c. */
#define _GNU_SOURCE
#include "omdp/vega_ring.h"

#include <stdlib.h>
#include <unistd.h>

#include "omdp/clock.h"

int omdp_vega_check_knobs(uint32_t queue_size, uint32_t max_message, uint32_t wait, uint32_t on_full)
{
    if (queue_size < OMDP_VEGA_MIN_QUEUE_SIZE || queue_size > OMDP_VEGA_MAX_QUEUE_SIZE ||
        (queue_size & (queue_size - 1)))
        return OMDP_VEGA_E_BAD_SPEC;
    if (max_message < OMDP_VEGA_MIN_MESSAGE || max_message > OMDP_VEGA_MAX_MESSAGE_LIMIT)
        return OMDP_VEGA_E_BAD_SPEC;
    if (wait > OMDP_VEGA_WAIT_SPIN_BLOCK || on_full > OMDP_VEGA_ON_FULL_DROP)
        return OMDP_VEGA_E_BAD_SPEC;
    return OMDP_VEGA_OK;
}

static uint64_t fresh_nonce(void)
{
    uint64_t x = (uint64_t)omdp_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&x;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x | 1u;
}

/* Lay out a region (zeroed memory of `size` bytes). The magic is not stored: the creator
 * stores it (release) once its own side is set up. */
int omdp_vega_region_init(void *base, uint64_t size, uint32_t queue_size, uint32_t max_message,
                          uint32_t mutex, uint32_t wait, uint32_t on_full)
{
    int rc = omdp_vega_check_knobs(queue_size, max_message, wait, on_full);
    if (rc)
        return rc;
    if (!base || ((uintptr_t)base & (OMDP_VEGA_SPAN - 1)) || size < omdp_vega_region_size(queue_size, max_message))
        return OMDP_VEGA_E_LAYOUT;
    omdp_vega_layout_t *l = &((omdp_vega_ctl_t *)base)->layout;
    l->version = OMDP_VEGA_VERSION;
    l->queue_size = queue_size;
    l->max_message = max_message;
    l->slot_stride = omdp_vega_slot_stride(max_message);
    l->wait = wait;
    l->on_full = on_full;
    l->mutex = mutex ? 1u : 0u;
    l->log2_queue = (uint32_t)__builtin_ctz(queue_size);
    l->nonce = fresh_nonce();
    l->slots_offset = omdp_vega_slots_offset();
    l->total_size = omdp_vega_region_size(queue_size, max_message);
    l->created_ns = omdp_now_ns();
    return OMDP_VEGA_OK;
}

static int layout_ok(const omdp_vega_layout_t *l, uint64_t size)
{
    return l->version == OMDP_VEGA_VERSION &&
           omdp_vega_check_knobs(l->queue_size, l->max_message, l->wait, l->on_full) == OMDP_VEGA_OK &&
           l->slot_stride == omdp_vega_slot_stride(l->max_message) &&
           l->log2_queue == (uint32_t)__builtin_ctz(l->queue_size) &&
           l->slots_offset == omdp_vega_slots_offset() &&
           l->total_size == omdp_vega_region_size(l->queue_size, l->max_message) && l->total_size <= size;
}

int omdp_vega_sender_init(omdp_vega_sender_t *tx, void *base, uint64_t size)
{
    omdp_vega_ctl_t *ctl = base;
    const omdp_vega_layout_t *l = &ctl->layout;
    if (!layout_ok(l, size))
        return OMDP_VEGA_E_LAYOUT;
    memset(tx, 0, sizeof(*tx));
    tx->base = base;
    tx->ctl = ctl;
    tx->slots_offset = l->slots_offset;
    tx->slots = (uint8_t *)base + l->slots_offset;
    tx->queue_size = l->queue_size;
    tx->mask = l->queue_size - 1;
    tx->log2_queue = l->log2_queue;
    tx->max_message = l->max_message;
    tx->stride = l->slot_stride;
    tx->wait = l->wait;
    tx->on_full = l->on_full;
    tx->mutex_on = l->mutex;
    tx->nonce = l->nonce;
    /* a sender starts where the ring stands (0 for a fresh ring) */
    tx->cached_credit = atomic_load_explicit(&ctl->credit, memory_order_acquire);
    tx->seq = tx->cached_credit;
    atomic_init(&tx->owner, 0);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&tx->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    return OMDP_VEGA_OK;
}

int omdp_vega_receiver_init(omdp_vega_receiver_t *rx, void *base, uint64_t size)
{
    omdp_vega_ctl_t *ctl = base;
    const omdp_vega_layout_t *l = &ctl->layout;
    if (!layout_ok(l, size))
        return OMDP_VEGA_E_LAYOUT;
    uint8_t *released = calloc(l->queue_size, 1);
    if (!released)
        return OMDP_VEGA_E_SYS;
    memset(rx, 0, sizeof(*rx));
    rx->base = base;
    rx->ctl = ctl;
    rx->slots_offset = l->slots_offset;
    rx->slots = (uint8_t *)base + l->slots_offset;
    rx->queue_size = l->queue_size;
    rx->mask = l->queue_size - 1;
    rx->log2_queue = l->log2_queue;
    rx->max_message = l->max_message;
    rx->stride = l->slot_stride;
    rx->wait = l->wait;
    rx->on_full = l->on_full;
    rx->nonce = l->nonce;
    rx->released = released;
    rx->read_seq = rx->release_seq = atomic_load_explicit(&ctl->credit, memory_order_acquire);
    return OMDP_VEGA_OK;
}

void omdp_vega_sender_set_mirror(omdp_vega_sender_t *tx, omdp_vega_mirror_fn fn, void *ctx)
{
    tx->mirror = fn;
    tx->mirror_ctx = ctx;
}

void omdp_vega_receiver_set_mirror(omdp_vega_receiver_t *rx, omdp_vega_mirror_fn fn, void *ctx)
{
    rx->mirror = fn;
    rx->mirror_ctx = ctx;
}
