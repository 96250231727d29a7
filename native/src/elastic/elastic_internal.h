/* Private layout of the elastic engine partition (elastic.h is the contract).
 *
 * Each bucket's hot fields sit on their own cache lines by writer: the dispatcher's input
 * head, the owner's input tail and output head, the collector's output tail. Positions are
 * free-running 64-bit counts (messages for the input ring, bytes for the output ring); a
 * ring is full when head - tail == its size.
 */
#ifndef OMDP_ELASTIC_INTERNAL_H
#define OMDP_ELASTIC_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "omdp/elastic.h"
#include "omdp/relaxed_counter.h"

#define EL_NO_WORKER 0xFFFFFFFFu
#define OMDP_ELASTIC_INLINE_CHUNK 1024u /* records the inline dispatch groups at a time */

typedef struct el_bucket {
    omdp_engine_t *engine;
    omdp_opra_msg_t *in;          /* ring_msgs records */
    uint8_t *out;                 /* out_bytes */
    alignas(64) _Atomic uint64_t in_head;   /* dispatcher */
    alignas(64) _Atomic uint64_t in_tail;   /* owner */
    _Atomic uint64_t out_head;              /* owner */
    alignas(64) _Atomic uint64_t out_tail;  /* collector */
    alignas(64) _Atomic uint32_t owner;     /* written only by the owner (hand-off) and create */
    _Atomic uint32_t want;                  /* written by the control plane */
} el_bucket_t;

typedef struct el_worker {
    struct omdp_elastic *el;
    uint32_t index;
    pthread_t thread;
    int started;
    uint8_t *scratch;             /* engine output before it is copied into a bucket's ring */
    uint32_t scratch_cap;
    alignas(64) _Atomic uint64_t processed;
    _Atomic uint64_t busy_ns;
    _Atomic uint64_t runs;
    _Atomic uint64_t handoffs;
    _Atomic uint64_t alive;
    _Atomic uint64_t tid;
    _Atomic uint32_t owned;       /* buckets it owns now (its own count) */
} el_worker_t;

struct omdp_elastic {
    omdp_elastic_config_t cfg;
    el_bucket_t *buckets;
    el_worker_t *workers;
    pthread_mutex_t lock;         /* suspension only: never held on the data path */
    pthread_cond_t wake;
    int lock_ready;
    alignas(64) _Atomic uint32_t level;
    _Atomic uint32_t stop;
    _Atomic uint32_t asleep;
    _Atomic uint64_t wakeups;
    _Atomic uint64_t moves;
    _Atomic uint64_t level_changes;
    /* dispatcher only: its copy of each bucket's head, the tail it last read, buckets touched */
    uint64_t *d_head;
    uint64_t *d_tail;
    uint32_t *d_touched;
    uint8_t *d_is_touched;
    /* dispatcher only, inline worker 0 (elastic_inline.c): per chunk record, its bucket and
     * its index in its bucket's in-place list; per bucket, its count, list start and path */
    uint16_t *d_bucket_of;
    uint32_t *d_idx;
    uint32_t *d_count;
    uint32_t *d_start;
    uint8_t *d_mode;
    alignas(64) _Atomic uint64_t dispatched; /* dispatcher's counters */
    _Atomic uint64_t ring_full;
    _Atomic uint64_t bad_record;
    _Atomic uint64_t inplace;
    alignas(64) _Atomic uint64_t collected;  /* collector's */
    uint32_t collect_next;                   /* collector: bucket to start at (fairness) */
};

/* elastic_worker.c: the worker thread's body, and one pass of it (also run inline as
 * worker 0 by the dispatching thread when cfg.inline_worker0 is set) */
void *el_worker_main(void *arg);
uint64_t el_worker_pass(el_worker_t *w, uint32_t *owned, uint32_t *handed);

/* elastic_inline.c: dispatch with worker 0 inline (arguments checked by the caller) */
int32_t el_dispatch_inline(omdp_elastic_t *el, const omdp_opra_msg_t *msgs, uint32_t n);

#endif /* OMDP_ELASTIC_INTERNAL_H */
