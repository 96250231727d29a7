/* The elastic partition's data-plane ends that the partition's own thread runs: dispatch
 * (messages into their buckets' input rings) and collect (bucket output rings into one
 * buffer), and the backlog both leave (elastic.h). */
#include <string.h>

#include "elastic_internal.h"

/* Publish the heads of the buckets this call wrote, so workers see whole runs. */
static void publish(omdp_elastic_t *el, uint32_t n_touched)
{
    for (uint32_t i = 0; i < n_touched; i++) {
        uint32_t b = el->d_touched[i];
        atomic_store_explicit(&el->buckets[b].in_head, el->d_head[b], memory_order_release);
        el->d_is_touched[b] = 0;
    }
}

int32_t omdp_elastic_dispatch(omdp_elastic_t *el, const omdp_opra_msg_t *msgs, uint32_t n)
{
    if (!el || (!msgs && n) || ((uintptr_t)msgs & 7u) || n > INT32_MAX)
        return OMDP_ELASTIC_EINVAL;
    if (el->cfg.inline_worker0)
        return el_dispatch_inline(el, msgs, n);
    const uint32_t nb = el->cfg.buckets;
    const uint64_t size = el->cfg.ring_msgs;
    const uint64_t mask = size - 1u;
    uint32_t n_touched = 0;
    uint64_t bad = 0, full = 0;
    uint32_t i = 0;
    for (; i < n; i++) {
        const omdp_opra_msg_t *m = &msgs[i];
        if (m->hdr.type != OMDP_RT_OPRA_MSG || m->hdr.length != OMDP_OPRA_MSG_SIZE) {
            bad++;
            continue;
        }
        uint32_t b = m->underlying_id & (nb - 1u);
        el_bucket_t *k = &el->buckets[b];
        uint64_t head = el->d_head[b];
        if (head - el->d_tail[b] >= size) {
            el->d_tail[b] = atomic_load_explicit(&k->in_tail, memory_order_acquire);
            if (head - el->d_tail[b] >= size) {
                full = 1;
                break;
            }
        }
        memcpy(&k->in[head & mask], m, sizeof *m);
        el->d_head[b] = head + 1u;
        if (!el->d_is_touched[b]) {
            el->d_is_touched[b] = 1;
            el->d_touched[n_touched++] = b;
        }
    }
    publish(el, n_touched);
    omdp_counter_add(&el->dispatched, i - bad);
    if (bad)
        omdp_counter_add(&el->bad_record, bad);
    if (full)
        omdp_counter_add(&el->ring_full, 1u);
    return (int32_t)i;
}

/* Copy len bytes at ring position pos (with wrap) into dst. */
static void ring_read(const uint8_t *ring, uint64_t mask, uint64_t pos, uint8_t *dst, uint32_t len)
{
    uint64_t at = pos & mask;
    uint64_t first = mask + 1u - at;
    if (first >= len) {
        memcpy(dst, ring + at, len);
    } else {
        memcpy(dst, ring + at, first);
        memcpy(dst + first, ring, len - first);
    }
}

uint32_t omdp_elastic_collect(omdp_elastic_t *el, uint8_t *out, uint32_t out_cap, uint32_t *out_len)
{
    if (!el || !out || !out_len || *out_len > out_cap || ((uintptr_t)out & 7u) || (*out_len & 7u))
        return 0;
    const uint32_t nb = el->cfg.buckets;
    const uint64_t mask = el->cfg.out_bytes - 1u;
    uint32_t start = *out_len, pos = start;
    uint32_t b0 = el->collect_next;
    int room = 1;
    for (uint32_t j = 0; j < nb && room; j++) {
        uint32_t b = (b0 + j) % nb;
        el_bucket_t *k = &el->buckets[b];
        uint64_t tail = atomic_load_explicit(&k->out_tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&k->out_head, memory_order_acquire);
        uint64_t t = tail;
        while (t < head) {
            /* records start 8-aligned and the ring is a power of two >= 8: the first 8
             * header bytes (type, length, flags) never wrap */
            uint16_t len;
            memcpy(&len, k->out + (t & mask) + 2u, sizeof len);
            if (len < OMDP_RECORD_HEADER_SIZE || (len & 7u) || len > head - t) {
                t = head; /* cannot happen: the engine writes whole records; drop the rest */
                break;
            }
            if (out_cap - pos < len) {
                room = 0;
                el->collect_next = b;
                break;
            }
            ring_read(k->out, mask, t, out + pos, len);
            pos += len;
            t += len;
        }
        if (t != tail)
            atomic_store_explicit(&k->out_tail, t, memory_order_release);
    }
    if (room)
        el->collect_next = (b0 + 1u) % nb;
    *out_len = pos;
    omdp_counter_add(&el->collected, pos - start);
    return pos - start;
}

uint64_t omdp_elastic_backlog(const omdp_elastic_t *el, uint64_t *out_bytes)
{
    uint64_t msgs = 0, bytes = 0;
    if (el) {
        for (uint32_t b = 0; b < el->cfg.buckets; b++) {
            const el_bucket_t *k = &el->buckets[b];
            uint64_t tail = atomic_load_explicit(&k->in_tail, memory_order_acquire);
            msgs += atomic_load_explicit(&k->in_head, memory_order_acquire) - tail;
            uint64_t otail = atomic_load_explicit(&k->out_tail, memory_order_acquire);
            bytes += atomic_load_explicit(&k->out_head, memory_order_acquire) - otail;
        }
    }
    if (out_bytes)
        *out_bytes = bytes;
    return msgs;
}
