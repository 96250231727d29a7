/* The dispatching thread as worker 0 (cfg.inline_worker0): the records of the buckets it
 * owns are run through their engines straight from the caller's batch, without the copy
 * into their input rings (elastic.h "In place").
 *
 * Rule: a bucket's messages in a chunk run in place when worker 0 owns the bucket, its
 * `want` is worker 0, its input ring is empty and can hold all of them, and its output ring
 * has room for at least one message's output; otherwise they are copied into its ring as by
 * the copying dispatch. Those the engine does not take in place (its output ring filled)
 * are copied, in order, into the ring, which is empty, and wait for the next pass.
 * An empty ring means every earlier message of the bucket has been run, so running these
 * now is the same stream position as queueing them and running them at the next pass: per
 * bucket order and exactly-once are those of the ring. A bucket asked of another worker
 * (want != 0) is copied into its ring, which worker 0's next pass hands over with it; a
 * bucket handed to worker 0 with a backlog keeps going through its ring until the backlog
 * is run. Only worker 0 (this thread) runs an engine it owns, so nothing else is waited for.
 *
 * Work per chunk of up to OMDP_ELASTIC_INLINE_CHUNK records: (1) each record's bucket and
 * the count per bucket, (2) the path per touched bucket, (3) in stream order: ring copies
 * (stopping at the first full ring) and, per in-place bucket, its records' indices,
 * (4) one gathered engine call per in-place bucket into worker 0's scratch, then into the
 * bucket's output ring. */
#include <string.h>

#include "elastic_internal.h"
#include "omdp/clock.h"

#define BAD_BUCKET 0xFFFFu

/* Path of a bucket for this chunk (d_mode). */
enum { MODE_UNSEEN, MODE_INPLACE, MODE_RING };

static uint8_t choose(omdp_elastic_t *el, uint32_t b, uint32_t count)
{
    el_bucket_t *k = &el->buckets[b];
    if (atomic_load_explicit(&k->owner, memory_order_acquire) != 0u ||
        atomic_load_explicit(&k->want, memory_order_acquire) != 0u)
        return MODE_RING;
    /* worker 0 owns it, so this thread wrote in_tail last (or acquired it with owner) */
    if (el->d_head[b] != atomic_load_explicit(&k->in_tail, memory_order_relaxed) || count > el->cfg.ring_msgs)
        return MODE_RING;
    uint64_t ohead = atomic_load_explicit(&k->out_head, memory_order_relaxed);
    uint64_t ofree = el->cfg.out_bytes - (ohead - atomic_load_explicit(&k->out_tail, memory_order_acquire));
    return ofree >= OMDP_ENGINE_MAX_OUT_PER_MSG ? MODE_INPLACE : MODE_RING;
}

/* Run bucket b's gathered records (idx[0..n)) through its engine; what the engine could not
 * take (its output ring filled) is queued in the bucket's empty ring, in order. */
static void run_inplace(omdp_elastic_t *el, uint32_t b, const omdp_opra_msg_t *msgs, uint32_t n_msgs,
                        const uint32_t *idx, uint32_t n)
{
    el_worker_t *w = &el->workers[0];
    el_bucket_t *k = &el->buckets[b];
    const uint64_t omask = el->cfg.out_bytes - 1u;
    uint64_t ohead = atomic_load_explicit(&k->out_head, memory_order_relaxed);
    uint64_t ofree = el->cfg.out_bytes - (ohead - atomic_load_explicit(&k->out_tail, memory_order_acquire));
    uint32_t cap = (uint32_t)(ofree < w->scratch_cap ? ofree : w->scratch_cap) & ~7u;
    uint32_t len = 0;
    int32_t got = omdp_engine_process_gather(k->engine, msgs, n_msgs, idx, n, w->scratch, cap, &len);
    if (got < 0)
        got = 0;
    if (len) {
        uint64_t at = ohead & omask, first = omask + 1u - at;
        if (first >= len) {
            memcpy(k->out + at, w->scratch, len);
        } else {
            memcpy(k->out + at, w->scratch, first);
            memcpy(k->out, w->scratch + first, len - first);
        }
        atomic_store_explicit(&k->out_head, ohead + len, memory_order_release);
    }
    /* whatever is left: the ring is empty and holds n (choose), so it fits */
    const uint64_t mask = el->cfg.ring_msgs - 1u;
    for (uint32_t j = (uint32_t)got; j < n; j++) {
        memcpy(&k->in[el->d_head[b] & mask], &msgs[idx[j]], sizeof msgs[0]);
        el->d_head[b]++;
    }
    if ((uint32_t)got < n)
        atomic_store_explicit(&k->in_head, el->d_head[b], memory_order_release);
    if (got) {
        omdp_counter_add(&w->processed, (uint64_t)got);
        omdp_counter_add(&el->inplace, (uint64_t)got);
        omdp_counter_add(&w->runs, 1u);
    }
}

/* One chunk (n <= OMDP_ELASTIC_INLINE_CHUNK). Returns how many were taken; sets *bad. */
static uint32_t dispatch_chunk(omdp_elastic_t *el, const omdp_opra_msg_t *msgs, uint32_t n, uint64_t *bad,
                               int *full)
{
    const uint32_t nb = el->cfg.buckets;
    const uint64_t size = el->cfg.ring_msgs;
    const uint64_t mask = size - 1u;
    uint16_t *bk = el->d_bucket_of;
    uint32_t *cnt = el->d_count;
    uint8_t *mode = el->d_mode;
    uint32_t n_touched = 0;
    for (uint32_t i = 0; i < n; i++) {
        const omdp_opra_msg_t *m = &msgs[i];
        if (m->hdr.type != OMDP_RT_OPRA_MSG || m->hdr.length != OMDP_OPRA_MSG_SIZE) {
            bk[i] = BAD_BUCKET;
            continue;
        }
        uint32_t b = m->underlying_id & (nb - 1u);
        bk[i] = (uint16_t)b;
        if (cnt[b]++ == 0)
            el->d_touched[n_touched++] = b;
    }
    uint32_t off = 0;
    for (uint32_t t = 0; t < n_touched; t++) {
        uint32_t b = el->d_touched[t];
        mode[b] = choose(el, b, cnt[b]);
        el->d_start[b] = off;
        if (mode[b] == MODE_INPLACE)
            off += cnt[b];
        cnt[b] = el->d_start[b]; /* from here: the next index slot of the bucket */
    }
    uint32_t i = 0;
    for (; i < n; i++) {
        uint32_t b = bk[i];
        if (b == BAD_BUCKET) {
            (*bad)++;
            continue;
        }
        if (mode[b] == MODE_INPLACE) {
            el->d_idx[cnt[b]++] = i;
            continue;
        }
        el_bucket_t *k = &el->buckets[b];
        uint64_t head = el->d_head[b];
        if (head - el->d_tail[b] >= size) {
            el->d_tail[b] = atomic_load_explicit(&k->in_tail, memory_order_acquire);
            if (head - el->d_tail[b] >= size) {
                *full = 1;
                break;
            }
        }
        memcpy(&k->in[head & mask], &msgs[i], sizeof msgs[0]);
        el->d_head[b] = head + 1u;
    }
    for (uint32_t t = 0; t < n_touched; t++) {
        uint32_t b = el->d_touched[t];
        if (mode[b] == MODE_INPLACE) {
            uint32_t start = el->d_start[b];
            if (cnt[b] > start)
                run_inplace(el, b, msgs, n, el->d_idx + start, cnt[b] - start);
        } else {
            atomic_store_explicit(&el->buckets[b].in_head, el->d_head[b], memory_order_release);
        }
        cnt[b] = 0;
        mode[b] = MODE_UNSEEN;
    }
    return i;
}

int32_t el_dispatch_inline(omdp_elastic_t *el, const omdp_opra_msg_t *msgs, uint32_t n)
{
    int64_t t0 = omdp_now_ns();
    uint64_t bad = 0;
    int full = 0;
    uint32_t done = 0;
    while (done < n && !full) {
        uint32_t c = n - done < OMDP_ELASTIC_INLINE_CHUNK ? n - done : OMDP_ELASTIC_INLINE_CHUNK;
        done += dispatch_chunk(el, msgs + done, c, &bad, &full);
    }
    omdp_counter_add(&el->dispatched, done - bad);
    if (bad)
        omdp_counter_add(&el->bad_record, bad);
    if (full)
        omdp_counter_add(&el->ring_full, 1u);
    omdp_counter_add(&el->workers[0].busy_ns, (uint64_t)(omdp_now_ns() - t0));
    return (int32_t)done;
}
