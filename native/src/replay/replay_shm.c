/* Replay shared memory: the ctl segment (control block, sender status, line counters, sent
 * logs) and the intended-time table. Layouts and protocols: omdp/replay.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "omdp/replay.h"
#include "omdp/shm_region.h"
#include "omdp/vega_ring.h" /* omdp_vega_pid_start_time: the owner record */

#define ALIGN128(x) (((x) + 127u) & ~(uint64_t)127u)

_Static_assert(sizeof(omdp_replay_pkt_t) == 48, "omdp_replay_pkt_t is 48 bytes");
_Static_assert(sizeof(omdp_replay_control_t) == 128, "control block is 128 bytes");
_Static_assert(sizeof(omdp_replay_sender_status_t) % 128 == 0, "sender status spans whole 128-byte lines");
_Static_assert(sizeof(omdp_replay_line_stats_t) == 128, "line stats are 128 bytes");
_Static_assert(sizeof(omdp_replay_sent_t) == 40, "sent entry is 40 bytes");
_Static_assert(sizeof(omdp_replay_log_t) == 384, "log header is 384 bytes");
_Static_assert(sizeof(omdp_replay_intended_header_t) == 128, "intended header is 128 bytes");
_Static_assert(sizeof(omdp_replay_frame_t) == 24, "ring frame header is 24 bytes");
_Static_assert(OMDP_REPLAY_HIST_BUCKETS == (1 << OMDP_REPLAY_HIST_SUB_BITS) * 37,
               "histogram: 32 exact buckets, then 36 octaves of 32");

static void set_err(char *err, size_t errlen, const char *what, const char *name, int e)
{
    if (err && errlen)
        snprintf(err, errlen, "%s %s: %s", what, name, strerror(e));
}

void *omdp_replay_shm_create(const char *name, uint64_t size, char *err, size_t errlen)
{
    void *p = NULL;
    omdp_shm_step_t step;
    int rc = omdp_shm_create(name, size, 0, &p, &step);
    if (rc != 0) {
        set_err(err, errlen, step == OMDP_SHM_STEP_NONE ? "shm_create" : omdp_shm_step_name(step, 1), name, -rc);
        return NULL;
    }
    return p;
}

void *omdp_replay_shm_open(const char *name, uint64_t *size, int writable, char *err, size_t errlen)
{
    void *p = NULL;
    omdp_shm_step_t step;
    int rc = omdp_shm_map(name, writable, 0, 1, &p, size, &step);
    if (rc != 0) {
        set_err(err, errlen, omdp_shm_step_name(step, 0), name, rc == -ENODATA ? EINVAL : -rc);
        return NULL;
    }
    return p;
}

void omdp_replay_shm_unmap(void *base, uint64_t size)
{
    if (base && size)
        munmap(base, size);
}

int omdp_replay_shm_unlink(const char *name)
{
    return shm_unlink(name) == 0 ? 0 : -errno;
}

/* ---- ctl segment ---------------------------------------------------------------------- */

static uint64_t log_bytes(uint64_t log_capacity)
{
    return ALIGN128(sizeof(omdp_replay_log_t) + log_capacity * sizeof(omdp_replay_sent_t));
}

uint64_t omdp_replay_ctl_sender_offset(uint32_t i)
{
    return sizeof(omdp_replay_control_t) + (uint64_t)i * sizeof(omdp_replay_sender_status_t);
}

uint64_t omdp_replay_ctl_lines_offset(uint32_t n_senders)
{
    return omdp_replay_ctl_sender_offset(n_senders);
}

uint64_t omdp_replay_ctl_log_offset(uint32_t n_senders, uint64_t log_capacity, uint32_t i)
{
    return omdp_replay_ctl_lines_offset(n_senders) +
           (OMDP_REPLAY_MAX_LINE + 1) * sizeof(omdp_replay_line_stats_t) + (uint64_t)i * log_bytes(log_capacity);
}

uint64_t omdp_replay_ctl_size(uint32_t n_senders, uint64_t log_capacity)
{
    return omdp_replay_ctl_log_offset(n_senders, log_capacity, n_senders);
}

void omdp_replay_ctl_init(void *base, uint32_t n_senders, uint64_t log_capacity, int64_t creator_pid)
{
    omdp_replay_control_t *c = base;
    c->version = OMDP_REPLAY_VERSION;
    c->n_senders = n_senders;
    c->command = OMDP_REPLAY_CMD_RUN;
    c->start_ns = 0;
    c->end_ns = INT64_MAX;
    c->map_seq = 0;
    c->anchor_ns = 0;
    c->anchor_off = 0;
    c->scale = 1.0;
    c->creator_pid = creator_pid;
    c->creator_start_time = omdp_vega_pid_start_time(creator_pid);
    for (uint32_t i = 0; i < n_senders; i++) {
        omdp_replay_sender_status_t *s = (void *)((uint8_t *)base + omdp_replay_ctl_sender_offset(i));
        s->cpu = -1;
        omdp_replay_log_t *log = (void *)((uint8_t *)base + omdp_replay_ctl_log_offset(n_senders, log_capacity, i));
        log->capacity = log_capacity;
    }
    /* The magic last: a reader that sees it sees an initialized segment. */
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->magic), OMDP_REPLAY_CTL_MAGIC, memory_order_release);
}

void omdp_replay_control_set_map(omdp_replay_control_t *c, int64_t anchor_ns, int64_t anchor_off, double scale)
{
    uint64_t s = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&c->map_seq), memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->map_seq), s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->anchor_ns), anchor_ns, memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->anchor_off), anchor_off, memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->scale), scale, memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->map_seq), s + 2, memory_order_release);
}

void omdp_replay_control_get_map(const omdp_replay_control_t *c, int64_t *anchor_ns, int64_t *anchor_off, double *scale)
{
    for (;;) {
        uint64_t s1 = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&c->map_seq), memory_order_acquire);
        if (s1 & 1)
            continue;
        int64_t an = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&c->anchor_ns), memory_order_relaxed);
        int64_t ao = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&c->anchor_off), memory_order_relaxed);
        double sc = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&c->scale), memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(OMDP_REPLAY_ATOMIC(&c->map_seq), memory_order_relaxed) == s1) {
            *anchor_ns = an;
            *anchor_off = ao;
            *scale = sc;
            return;
        }
    }
}

void omdp_replay_control_start(omdp_replay_control_t *c, int64_t start_ns, int64_t end_ns)
{
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->end_ns), end_ns, memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->start_ns), start_ns, memory_order_release);
}

void omdp_replay_control_stop(omdp_replay_control_t *c)
{
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&c->command), OMDP_REPLAY_CMD_STOP, memory_order_release);
}

uint64_t omdp_replay_log_drain(omdp_replay_log_t *log, omdp_replay_sent_t *out, uint64_t max)
{
    const omdp_replay_sent_t *entries = (const void *)((const uint8_t *)log + sizeof(omdp_replay_log_t));
    uint64_t mask = log->capacity - 1;
    uint64_t head = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&log->head), memory_order_acquire);
    uint64_t tail = atomic_load_explicit(OMDP_REPLAY_ATOMIC(&log->tail), memory_order_relaxed);
    uint64_t n = head - tail;
    if (n > max)
        n = max;
    for (uint64_t k = 0; k < n; k++)
        out[k] = entries[(tail + k) & mask];
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&log->tail), tail + n, memory_order_release);
    return n;
}

/* ---- intended-time table -------------------------------------------------------------- */

uint64_t omdp_replay_intended_size(uint32_t max_line, uint64_t capacity)
{
    return sizeof(omdp_replay_intended_header_t) + (uint64_t)max_line * capacity * sizeof(omdp_replay_intended_entry_t) +
           ((uint64_t)max_line + 1) * sizeof(omdp_replay_line_end_t);
}

void omdp_replay_intended_init(omdp_replay_intended_header_t *t, uint32_t max_line, uint64_t capacity,
                               int64_t creator_pid, const char *run_id)
{
    t->version = OMDP_REPLAY_VERSION;
    t->max_line = max_line;
    t->capacity = capacity;
    t->creator_pid = creator_pid;
    t->creator_start_time = omdp_vega_pid_start_time(creator_pid);
    snprintf(t->run_id, sizeof t->run_id, "%s", run_id ? run_id : "");
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&t->magic), OMDP_REPLAY_INTENDED_MAGIC, memory_order_release);
}

uint64_t omdp_replay_intended_lookup_many(const omdp_replay_intended_header_t *t, const uint16_t *lines,
                                          const uint64_t *block_seqs, int64_t *out, uint64_t n)
{
    uint64_t found = 0;
    for (uint64_t i = 0; i < n; i++) {
        int64_t v = 0;
        if (omdp_replay_intended_lookup(t, lines[i], block_seqs[i], &v))
            found++;
        out[i] = v;
    }
    return found;
}
