/* The elastic engine partition: underlying buckets processed by a pool of worker threads
 * whose active level changes at run time (the "elastic scaling" paper, docs/architecture.md
 * "Sources"), with buckets moved between workers without loss (AIR's master-less hand-off).
 *
 * Layout. Underlying u belongs to bucket u % buckets (a power of two). Each bucket has its own decision engine
 * (engine.h: its books, NBBO, signals) and two single-producer single-consumer rings: an
 * input ring of OPRA message records, written by the dispatching thread
 * (omdp_elastic_dispatch), and an output ring of what the bucket's engine appended (samples,
 * signals), drained by the collecting thread (omdp_elastic_collect). The dispatcher and the
 * collector may be one thread (the partition's) or two.
 *
 * Ownership. At any time exactly one worker owns a bucket: only it reads the bucket's input
 * ring, runs its engine and writes its output ring. Moving a bucket (omdp_elastic_move,
 * omdp_elastic_set_level) only writes the bucket's `want`; the owner, between two runs of
 * that bucket, sees it and hands the bucket over by storing the new owner with release
 * order; the new owner's acquire load of it then sees the engine state and the ring
 * positions as the old owner left them. The hand-off point is a position in the bucket's
 * own stream that both sides see, so every message is processed exactly once and in order,
 * output included (one output ring per bucket), and no thread waits for another: no
 * master in the data path, no stop-the-world.
 *
 * Threads. Workers are created at create and never destroyed before destroy: a worker at or
 * above the active level that owns no bucket blocks on a condition variable (suspended);
 * raising the level wakes it. An active worker with nothing to do spins briefly, then
 * yields, then sleeps in short naps, so an idle pool gives its cores back.
 */
#ifndef OMDP_ELASTIC_H
#define OMDP_ELASTIC_H

#include <stdint.h>

#include "omdp/engine.h"
#include "omdp/opra_msg.h"

/* cdef: begin */
#define OMDP_ELASTIC_MAX_WORKERS 64
#define OMDP_ELASTIC_MAX_BUCKETS 1024
#define OMDP_ELASTIC_MAX_RING (1u << 20)   /* messages per bucket input ring */

#define OMDP_ELASTIC_OK 0
#define OMDP_ELASTIC_EINVAL -1   /* a NULL pointer, or a setting out of range */
#define OMDP_ELASTIC_ENOMEM -2
#define OMDP_ELASTIC_ETHREAD -3  /* a worker thread could not be started */
#define OMDP_ELASTIC_EENGINE -4  /* a bucket's engine refused its config (engine.h error) */

typedef struct omdp_elastic_config {
    omdp_engine_config_t engine; /* every bucket's engine (max_series, max_groups: per bucket) */
    uint32_t workers;     /* pool size, 1..OMDP_ELASTIC_MAX_WORKERS */
    uint32_t buckets;     /* power of two, 1..OMDP_ELASTIC_MAX_BUCKETS */
    uint32_t ring_msgs;   /* input ring per bucket, power of two, 16..OMDP_ELASTIC_MAX_RING */
    uint32_t out_bytes;   /* output ring per bucket, power of two >= 4 x OMDP_ENGINE_MAX_OUT_PER_MSG */
    uint32_t level;       /* initial active level, 1..workers */
    uint32_t inline_worker0; /* 1: worker 0 is no thread: the dispatching thread runs its passes
                              * (omdp_elastic_pass), so level 1 costs no second core */
} omdp_elastic_config_t;

/* Cumulative counters of the partition (relaxed reads, any thread). */
typedef struct omdp_elastic_counters {
    uint64_t dispatched;    /* messages taken: written to bucket input rings or run in place */
    uint64_t processed;     /* messages taken by bucket engines */
    uint64_t ring_full;     /* dispatch calls that stopped at a full bucket ring */
    uint64_t bad_record;    /* input records not OPRA messages: skipped by the dispatcher */
    uint64_t collected;     /* output bytes collected */
    uint64_t moves;         /* hand-offs done (a bucket changed owner) */
    uint64_t level;         /* active level now */
    uint64_t level_changes; /* set_level calls that changed it */
    uint64_t suspended;     /* workers blocked now */
    uint64_t wakeups;       /* suspended workers woken */
    uint64_t inplace;       /* messages inline worker 0 ran straight from the dispatched batch
                             * (never copied into a ring; counted in dispatched and processed) */
} omdp_elastic_counters_t;

/* One worker's counters. */
typedef struct omdp_elastic_worker_stats {
    uint64_t processed;  /* messages it ran through engines */
    uint64_t busy_ns;    /* time spent in engine runs and hand-offs */
    uint64_t runs;       /* engine calls */
    uint64_t handoffs;   /* buckets it handed over */
    uint64_t alive;      /* 1 while its thread runs */
    uint64_t tid;        /* its kernel thread id (to pin it: sched_setaffinity), 0 before it
                          * started and for an inline worker 0 */
} omdp_elastic_worker_stats_t;

typedef struct omdp_elastic omdp_elastic_t;
/* cdef: end */

/* Create the partition and start its workers (buckets spread round-robin over the first
 * `level` workers); NULL on error with *err set (OMDP_ELASTIC_*). */
omdp_elastic_t *omdp_elastic_create(const omdp_elastic_config_t *cfg, int *err);
/* Stop and join the workers, free everything. Messages still queued are not processed. */
void omdp_elastic_destroy(omdp_elastic_t *el);

/* Dispatcher (one thread): copy msgs[0..n) (8-byte aligned) into their buckets' rings, in
 * order. With cfg.inline_worker0 the records of a bucket that worker 0 owns (and is not
 * asked to give up) whose ring is empty are instead run through its engine here, in place
 * (elastic_inline.c: same stream position, so the same order and exactly-once). Returns how
 * many were taken: fewer than n when the next message's ring is full (call again later
 * with the rest); OMDP_ELASTIC_EINVAL on bad arguments. Records that are not OPRA messages
 * are counted and skipped (taken). */
int32_t omdp_elastic_dispatch(omdp_elastic_t *el, const omdp_opra_msg_t *msgs, uint32_t n);

/* Inline worker 0 (cfg.inline_worker0): one pass of worker 0 over its buckets, run by the
 * dispatching thread; returns the messages it processed (0 when not inline). */
uint64_t omdp_elastic_pass(omdp_elastic_t *el);

/* Collector (one thread): move whole output records from the bucket output rings into out
 * (8-byte aligned) from *out_len (updated), bucket by bucket; returns the bytes added.
 * Records of one bucket keep their order. */
uint32_t omdp_elastic_collect(omdp_elastic_t *el, uint8_t *out, uint32_t out_cap, uint32_t *out_len);

/* Messages dispatched but not yet processed, plus output not yet collected (in bytes): both
 * zero when the partition is drained. */
uint64_t omdp_elastic_backlog(const omdp_elastic_t *el, uint64_t *out_bytes);

/* Ask that `bucket` be owned by `worker` (control plane, any one thread). The owner hands it
 * over at its next pass. A worker at or above the level may be named (it is kept awake
 * while it owns buckets). */
int omdp_elastic_move(omdp_elastic_t *el, uint32_t bucket, uint32_t worker);
/* Set the active level (1..workers): buckets of workers at or above it are moved round-robin
 * to the active ones, whose share is balanced; suspended workers below it are woken. */
int omdp_elastic_set_level(omdp_elastic_t *el, uint32_t level);

/* The worker that owns a bucket now, and the one asked for (equal once handed over). */
int32_t omdp_elastic_owner(const omdp_elastic_t *el, uint32_t bucket, uint32_t *wanted);

void omdp_elastic_read_counters(const omdp_elastic_t *el, omdp_elastic_counters_t *out);
int omdp_elastic_read_worker(const omdp_elastic_t *el, uint32_t worker, omdp_elastic_worker_stats_t *out);
/* Sum of the bucket engines' counters. */
void omdp_elastic_engine_counters(const omdp_elastic_t *el, omdp_engine_counters_t *out);
/* A bucket's engine (for snapshots and pricing; do not process batches with it). */
omdp_engine_t *omdp_elastic_bucket_engine(omdp_elastic_t *el, uint32_t bucket);

const char *omdp_elastic_strerror(int err);

#endif /* OMDP_ELASTIC_H */
