/* An elastic partition's worker thread: passes over the buckets it owns, hands over those
 * asked of it, runs each owned bucket's waiting messages through the bucket's engine, and
 * suspends when it is above the active level and owns nothing (elastic.h). */
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "elastic_internal.h"
#include "omdp/clock.h"

#define SPIN_PASSES 64     /* empty passes spun before yielding */
#define YIELD_PASSES 256   /* ... and yielded before napping */
#define NAP_NS 50000L      /* one nap of an idle active worker */
#define SUSPEND_CHECK_NS 10000000L /* a suspended worker re-checks at least this often */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Copy len bytes into the ring at position pos (with wrap). */
static void ring_write(uint8_t *ring, uint64_t mask, uint64_t pos, const uint8_t *src, uint32_t len)
{
    uint64_t at = pos & mask;
    uint64_t first = mask + 1u - at;
    if (first >= len) {
        memcpy(ring + at, src, len);
    } else {
        memcpy(ring + at, src, first);
        memcpy(ring, src + first, len - first);
    }
}

/* Run the bucket's waiting messages (one contiguous stretch of its input ring, as much as
 * its output ring has room for) through its engine. Returns the messages taken. */
static uint32_t run_bucket(el_worker_t *w, el_bucket_t *k)
{
    const omdp_elastic_config_t *c = &w->el->cfg;
    uint64_t tail = atomic_load_explicit(&k->in_tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&k->in_head, memory_order_acquire);
    if (head == tail)
        return 0;
    uint64_t at = tail & (c->ring_msgs - 1u);
    uint64_t n = head - tail;
    if (n > c->ring_msgs - at)
        n = c->ring_msgs - at;
    uint64_t ohead = atomic_load_explicit(&k->out_head, memory_order_relaxed);
    uint64_t ofree = c->out_bytes - (ohead - atomic_load_explicit(&k->out_tail, memory_order_acquire));
    uint32_t cap = ofree < w->scratch_cap ? (uint32_t)ofree : w->scratch_cap;
    cap &= ~7u;
    if (cap < OMDP_ENGINE_MAX_OUT_PER_MSG)
        return 0; /* the collector is behind: leave the messages queued */
    uint32_t len = 0;
    int32_t got = omdp_engine_process_batch(k->engine, &k->in[at], (uint32_t)n, w->scratch, cap, &len);
    if (got <= 0)
        return 0;
    if (len) {
        ring_write(k->out, c->out_bytes - 1u, ohead, w->scratch, len);
        atomic_store_explicit(&k->out_head, ohead + len, memory_order_release);
    }
    atomic_store_explicit(&k->in_tail, tail + (uint64_t)got, memory_order_release);
    omdp_counter_add(&w->runs, 1u);
    return (uint32_t)got;
}

static int owns_any(const omdp_elastic_t *el, uint32_t index)
{
    for (uint32_t b = 0; b < el->cfg.buckets; b++)
        if (atomic_load_explicit(&el->buckets[b].owner, memory_order_seq_cst) == index)
            return 1;
    return 0;
}

static int should_sleep(omdp_elastic_t *el, uint32_t index)
{
    return !atomic_load_explicit(&el->stop, memory_order_seq_cst) &&
           index >= atomic_load_explicit(&el->level, memory_order_seq_cst) && !owns_any(el, index);
}

/* Block until raised into the level, handed a bucket, or stopped. */
static void suspend(el_worker_t *w)
{
    omdp_elastic_t *el = w->el;
    pthread_mutex_lock(&el->lock);
    atomic_fetch_add_explicit(&el->asleep, 1u, memory_order_seq_cst);
    int slept = 0;
    while (should_sleep(el, w->index)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += SUSPEND_CHECK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&el->wake, &el->lock, &until);
        slept = 1;
    }
    atomic_fetch_sub_explicit(&el->asleep, 1u, memory_order_seq_cst);
    pthread_mutex_unlock(&el->lock);
    if (slept)
        atomic_fetch_add_explicit(&el->wakeups, 1u, memory_order_relaxed);
}

/* Hand bucket k to `to`: everything this worker did to it happens-before the new owner's
 * acquire of `owner`. Wakes the new owner if it is suspended. */
static void hand_over(el_worker_t *w, el_bucket_t *k, uint32_t to)
{
    omdp_elastic_t *el = w->el;
    atomic_store_explicit(&k->owner, to, memory_order_seq_cst);
    omdp_counter_add(&w->handoffs, 1u);
    atomic_fetch_add_explicit(&el->moves, 1u, memory_order_relaxed);
    if (atomic_load_explicit(&el->asleep, memory_order_seq_cst)) {
        pthread_mutex_lock(&el->lock);
        pthread_cond_broadcast(&el->wake);
        pthread_mutex_unlock(&el->lock);
    }
}

/* One pass over the buckets: hand over those asked of this worker, run the others'
 * waiting messages. Returns messages processed; *owned and *handed say what it found. */
uint64_t el_worker_pass(el_worker_t *w, uint32_t *owned_out, uint32_t *handed_out)
{
    omdp_elastic_t *el = w->el;
    const uint32_t nb = el->cfg.buckets;
    int64_t t0 = 0;
    uint64_t did = 0;
    uint32_t owned = 0, handed = 0;
    for (uint32_t b = 0; b < nb; b++) {
        el_bucket_t *k = &el->buckets[b];
        if (atomic_load_explicit(&k->owner, memory_order_acquire) != w->index)
            continue;
        uint32_t want = atomic_load_explicit(&k->want, memory_order_acquire);
        if (want != w->index) {
            hand_over(w, k, want);
            handed++;
            continue;
        }
        owned++;
        if (!t0 && atomic_load_explicit(&k->in_head, memory_order_relaxed) !=
                       atomic_load_explicit(&k->in_tail, memory_order_relaxed))
            t0 = omdp_now_ns(); /* busy time starts at the first bucket with work */
        did += run_bucket(w, k);
    }
    atomic_store_explicit(&w->owned, owned, memory_order_relaxed);
    if (did)
        omdp_counter_add(&w->processed, did);
    if (t0)
        omdp_counter_add(&w->busy_ns, (uint64_t)(omdp_now_ns() - t0));
    *owned_out = owned;
    *handed_out = handed;
    return did;
}

void *el_worker_main(void *arg)
{
    el_worker_t *w = arg;
    omdp_elastic_t *el = w->el;
    uint32_t idle = 0;
    atomic_store_explicit(&w->tid, (uint64_t)syscall(SYS_gettid), memory_order_relaxed);
    atomic_store_explicit(&w->alive, 1u, memory_order_relaxed);
    while (!atomic_load_explicit(&el->stop, memory_order_relaxed)) {
        uint32_t owned, handed;
        uint64_t did = el_worker_pass(w, &owned, &handed);
        if (did || handed) {
            idle = 0;
            continue;
        }
        if (!owned && w->index >= atomic_load_explicit(&el->level, memory_order_relaxed)) {
            suspend(w);
            idle = 0;
            continue;
        }
        idle++;
        if (idle < SPIN_PASSES) {
            cpu_relax();
        } else if (idle < YIELD_PASSES) {
            sched_yield();
        } else {
            struct timespec nap = {0, NAP_NS};
            nanosleep(&nap, NULL);
        }
    }
    atomic_store_explicit(&w->alive, 0u, memory_order_relaxed);
    return NULL;
}
