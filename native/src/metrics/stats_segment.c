/* Stats segment lifecycle: naming, create/open/close/unlink, header, heartbeat, run info. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "omdp/shm_region.h"
#include "stats_seqlock.h"

static int valid_run_id(const char *run_id)
{
    if (!run_id || !run_id[0] || run_id[0] == '.')
        return 0;
    size_t n = strnlen(run_id, OMDP_STATS_RUN_ID_LEN);
    if (n >= OMDP_STATS_RUN_ID_LEN)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = run_id[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

int omdp_stats_name(const char *run_id, char *out, size_t cap)
{
    if (!valid_run_id(run_id) || !out)
        return OMDP_STATS_EINVAL;
    int n = snprintf(out, cap, "omdp-%s-stats", run_id);
    return (n < 0 || (size_t)n >= cap) ? OMDP_STATS_EINVAL : 0;
}

static int shm_path(const char *run_id, char *out)
{
    out[0] = '/';
    return omdp_stats_name(run_id, out + 1, OMDP_STATS_SHM_NAME_LEN - 1);
}

size_t omdp_stats_layout_size(void)
{
    return sizeof(omdp_stats_segment_t);
}

static void fill_header(omdp_stats_header_t *h, const char *run_id, int64_t now_ns)
{
    h->version = OMDP_STATS_VERSION;
    h->hops = OMDP_STATS_HOPS;
    h->ring_seconds = OMDP_STATS_RING_SECONDS;
    h->max_lines = OMDP_STATS_MAX_LINES;
    h->max_operators = OMDP_STATS_MAX_OPERATORS;
    h->op_counters = OMDP_STATS_OP_COUNTERS;
    h->signals = OMDP_STATS_SIGNALS;
    h->hist_buckets = OMDP_HIST_BUCKETS;
    h->total_size = sizeof(omdp_stats_segment_t);
    h->pid = (int64_t)getpid();
    h->start_ns = now_ns;
    atomic_store_explicit(&h->heartbeat_ns, now_ns, memory_order_relaxed);
    atomic_store_explicit(&h->closed_ns, 0, memory_order_relaxed);
    omdp_stats_copy_text(h->run_id, sizeof(h->run_id), run_id);
}

int omdp_stats_create(const char *run_id, int64_t now_ns, omdp_stats_t **out)
{
    char path[OMDP_STATS_SHM_NAME_LEN];
    if (!out || shm_path(run_id, path) != 0)
        return OMDP_STATS_EINVAL;
    omdp_stats_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    size_t size = sizeof(omdp_stats_segment_t);
    void *base = NULL;
    int rc = omdp_shm_create(path, size, 0, &base, NULL);
    if (rc != 0) {
        free(s);
        return rc == -EEXIST ? OMDP_STATS_EEXIST : rc;
    }
    s->seg = base;
    s->size = size;
    s->writable = 1;
    s->owner = 1;
    omdp_stats_copy_text(s->run_id, sizeof(s->run_id), run_id);
    /* ftruncate gives zeroed pages: every seq is 0, every table entry FREE, every histogram
     * empty (count 0) and every ring slot holds second 0, which no reader asks for; pages
     * are touched only as writers fill them. */
    fill_header(&s->seg->header, run_id, now_ns);
    atomic_store_explicit(&s->seg->header.magic, OMDP_STATS_MAGIC, memory_order_release);
    *out = s;
    return 0;
}

static int check_header(const omdp_stats_header_t *h, size_t size)
{
    if (atomic_load_explicit((_Atomic uint64_t *)&h->magic, memory_order_acquire) != OMDP_STATS_MAGIC)
        return OMDP_STATS_ELAYOUT;
    if (h->version != OMDP_STATS_VERSION || h->total_size != sizeof(omdp_stats_segment_t) ||
        size < sizeof(omdp_stats_segment_t) || h->hops != OMDP_STATS_HOPS ||
        h->ring_seconds != OMDP_STATS_RING_SECONDS || h->max_lines != OMDP_STATS_MAX_LINES ||
        h->max_operators != OMDP_STATS_MAX_OPERATORS || h->op_counters != OMDP_STATS_OP_COUNTERS ||
        h->signals != OMDP_STATS_SIGNALS || h->hist_buckets != OMDP_HIST_BUCKETS)
        return OMDP_STATS_ELAYOUT;
    return 0;
}

int omdp_stats_open(const char *run_id, int writable, omdp_stats_t **out)
{
    char path[OMDP_STATS_SHM_NAME_LEN];
    if (!out || shm_path(run_id, path) != 0)
        return OMDP_STATS_EINVAL;
    void *base = NULL;
    uint64_t size = 0;
    int rc = omdp_shm_map(path, writable, 0, sizeof(omdp_stats_segment_t), &base, &size, NULL);
    if (rc != 0)
        return rc == -ENOENT ? OMDP_STATS_ENOENT : rc == -ENODATA ? OMDP_STATS_ELAYOUT : rc;
    rc = check_header(&((omdp_stats_segment_t *)base)->header, (size_t)size);
    omdp_stats_t *s = rc == 0 ? calloc(1, sizeof(*s)) : NULL;
    if (!s) {
        munmap(base, (size_t)size);
        return rc != 0 ? rc : -ENOMEM;
    }
    s->seg = base;
    s->size = (size_t)size;
    s->writable = writable ? 1 : 0;
    omdp_stats_copy_text(s->run_id, sizeof(s->run_id), run_id);
    *out = s;
    return 0;
}

void omdp_stats_close(omdp_stats_t *s, int64_t now_ns)
{
    if (!s)
        return;
    if (s->owner) {
        atomic_store_explicit(&s->seg->header.closed_ns, now_ns, memory_order_release);
        char path[OMDP_STATS_SHM_NAME_LEN];
        if (shm_path(s->run_id, path) == 0)
            shm_unlink(path);
    }
    munmap(s->seg, s->size);
    free(s);
}

int omdp_stats_unlink(const char *run_id)
{
    char path[OMDP_STATS_SHM_NAME_LEN];
    if (shm_path(run_id, path) != 0)
        return OMDP_STATS_EINVAL;
    if (shm_unlink(path) != 0)
        return errno == ENOENT ? OMDP_STATS_ENOENT : -errno;
    return 0;
}

int omdp_stats_read_info(const omdp_stats_t *s, omdp_stats_info_t *out)
{
    if (!s || !out)
        return OMDP_STATS_EINVAL;
    const omdp_stats_header_t *h = &s->seg->header;
    memset(out, 0, sizeof(*out));
    out->magic = atomic_load_explicit((_Atomic uint64_t *)&h->magic, memory_order_acquire);
    out->version = h->version;
    out->hops = h->hops;
    out->ring_seconds = h->ring_seconds;
    out->max_lines = h->max_lines;
    out->max_operators = h->max_operators;
    out->op_counters = h->op_counters;
    out->signals = h->signals;
    out->hist_buckets = h->hist_buckets;
    out->total_size = h->total_size;
    out->pid = h->pid;
    out->start_ns = h->start_ns;
    out->heartbeat_ns = atomic_load_explicit((_Atomic int64_t *)&h->heartbeat_ns, memory_order_relaxed);
    out->closed_ns = atomic_load_explicit((_Atomic int64_t *)&h->closed_ns, memory_order_acquire);
    memcpy(out->run_id, h->run_id, sizeof(out->run_id));
    out->run_id[sizeof(out->run_id) - 1] = 0;
    return 0;
}

int omdp_stats_heartbeat(omdp_stats_t *s, int64_t now_ns)
{
    if (!s)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    atomic_store_explicit(&s->seg->header.heartbeat_ns, now_ns, memory_order_relaxed);
    return 0;
}

int omdp_stats_run_info_update(omdp_stats_t *s, const omdp_stats_run_info_t *info, uint32_t mask)
{
    if (!s || !info || (mask & ~OMDP_RUN_ALL) || info->knobs_len >= OMDP_STATS_KNOBS_LEN ||
        info->state > OMDP_RUN_FAILED)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_run_block_t *b = &s->seg->run;
    omdp_stats_run_info_t *t = &b->info;
    uint64_t seq;
    int rc = omdp_seq_write_begin(&b->seq, &seq);
    if (rc != 0)
        return rc;
    if (mask & OMDP_RUN_TARGET_PPS)
        t->target_pps = info->target_pps;
    if (mask & OMDP_RUN_ACHIEVED_PPS)
        t->achieved_pps = info->achieved_pps;
    if (mask & OMDP_RUN_SAMPLE_EVERY)
        t->sample_every = info->sample_every;
    if (mask & OMDP_RUN_STATE)
        t->state = info->state;
    /* Text fields always end in NUL whatever the caller handed in. */
    if (mask & OMDP_RUN_TOPOLOGY) {
        memcpy(t->topology, info->topology, sizeof t->topology);
        t->topology[OMDP_STATS_TEXT_LEN - 1] = 0;
    }
    if (mask & OMDP_RUN_CONFIG) {
        memcpy(t->config, info->config, sizeof t->config);
        t->config[OMDP_STATS_TEXT_LEN - 1] = 0;
    }
    if (mask & OMDP_RUN_DIR) {
        memcpy(t->run_dir, info->run_dir, sizeof t->run_dir);
        t->run_dir[OMDP_STATS_PATH_LEN - 1] = 0;
    }
    if (mask & OMDP_RUN_KNOBS) {
        memcpy(t->knobs_json, info->knobs_json, info->knobs_len);
        t->knobs_json[info->knobs_len] = 0;
        t->knobs_len = info->knobs_len;
    }
    t->updated_ns = info->updated_ns;
    omdp_seq_write_end(&b->seq, seq);
    return 0;
}

int omdp_stats_run_info_read(const omdp_stats_t *s, omdp_stats_run_info_t *out)
{
    if (!s || !out)
        return OMDP_STATS_EINVAL;
    return omdp_seq_read(&s->seg->run.seq, out, &s->seg->run.info, sizeof(*out));
}
