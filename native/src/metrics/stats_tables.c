/* Stats segment tables: per-line ingest counters, operator/channel counters, signal ring. */
#include <unistd.h>

#include "stats_seqlock.h"

/* Claim a FREE entry: CAS state FREE -> CLAIMED. */
static int claim(_Atomic uint32_t *state)
{
    uint32_t expect = OMDP_STATS_FREE;
    return atomic_compare_exchange_strong_explicit(state, &expect, OMDP_STATS_CLAIMED, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

static uint32_t state_of(const _Atomic uint32_t *state)
{
    return atomic_load_explicit((_Atomic uint32_t *)state, memory_order_acquire);
}

/* ---- lines ---- */

int omdp_stats_line_register(omdp_stats_t *s, uint32_t line)
{
    if (!s)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_line_entry_t *t = s->seg->lines;
    for (int i = 0; i < OMDP_STATS_MAX_LINES; i++) {
        uint32_t st = state_of(&t[i].state);
        if ((st == OMDP_STATS_LIVE || st == OMDP_STATS_CLOSED) && t[i].body.line == line)
            return i;
    }
    for (int i = 0; i < OMDP_STATS_MAX_LINES; i++) {
        if (!claim(&t[i].state))
            continue;
        t[i].body.line = line;
        t[i].body.pid = (int64_t)getpid();
        atomic_store_explicit(&t[i].state, OMDP_STATS_LIVE, memory_order_release);
        return i;
    }
    return OMDP_STATS_EFULL;
}

int omdp_stats_line_publish(omdp_stats_t *s, int index, const omdp_line_counts_t *counts, int64_t now_ns)
{
    if (!s || !counts || index < 0 || index >= OMDP_STATS_MAX_LINES)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_line_entry_t *e = &s->seg->lines[index];
    if (state_of(&e->state) != OMDP_STATS_LIVE)
        return OMDP_STATS_ENOENT;
    uint64_t seq;
    int rc = omdp_seq_write_begin(&e->seq, &seq);
    if (rc != 0)
        return rc;
    e->body.counts = *counts;
    e->body.updated_ns = now_ns;
    omdp_seq_write_end(&e->seq, seq);
    return 0;
}

int omdp_stats_lines_read(const omdp_stats_t *s, omdp_stats_line_t *out, uint32_t cap)
{
    if (!s || (cap > 0 && !out))
        return OMDP_STATS_EINVAL;
    uint32_t n = 0;
    for (int i = 0; i < OMDP_STATS_MAX_LINES && n < cap; i++) {
        const omdp_stats_line_entry_t *e = &s->seg->lines[i];
        uint32_t st = state_of(&e->state);
        if (st != OMDP_STATS_LIVE && st != OMDP_STATS_CLOSED)
            continue;
        int rc = omdp_seq_read(&e->seq, &out[n], &e->body, sizeof(e->body));
        if (rc != 0)
            return rc;
        out[n].state = st;
        n++;
    }
    return (int)n;
}

/* ---- operators and channels ---- */

/* Parse "a,b,c" into the entry's counter names; the count, or -1 on a bad list. */
static int parse_counter_names(const char *list, char names[][OMDP_STATS_COUNTER_NAME_LEN])
{
    if (!list || !list[0])
        return -1;
    int n = 0;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || len >= OMDP_STATS_COUNTER_NAME_LEN || n >= OMDP_STATS_OP_COUNTERS)
            return -1;
        memcpy(names[n], p, len);
        names[n][len] = 0;
        n++;
        if (!end)
            return n;
        p = end + 1;
    }
}

static int live_name_exists(const omdp_stats_segment_t *seg, const char *name)
{
    for (int i = 0; i < OMDP_STATS_MAX_OPERATORS; i++) {
        const omdp_stats_operator_entry_t *e = &seg->operators[i];
        if (state_of(&e->state) == OMDP_STATS_LIVE && strncmp(e->body.name, name, OMDP_STATS_NAME_LEN) == 0)
            return 1;
    }
    return 0;
}

int omdp_stats_op_register(omdp_stats_t *s, const char *name, const char *kind, int32_t cpu, const char *counter_names)
{
    if (!s || !name || !name[0] || !kind)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_operator_t body;
    memset(&body, 0, sizeof(body));
    if (omdp_stats_copy_text(body.name, sizeof(body.name), name) != 0 ||
        omdp_stats_copy_text(body.kind, sizeof(body.kind), kind) != 0)
        return OMDP_STATS_EINVAL;
    int n = parse_counter_names(counter_names, body.counter_names);
    if (n < 0)
        return OMDP_STATS_EINVAL;
    body.n_counters = (uint32_t)n;
    body.cpu = cpu;
    body.pid = (int64_t)getpid();
    if (live_name_exists(s->seg, body.name))
        return OMDP_STATS_EEXIST;
    for (int i = 0; i < OMDP_STATS_MAX_OPERATORS; i++) {
        omdp_stats_operator_entry_t *e = &s->seg->operators[i];
        if (!claim(&e->state)) {
            /* A CLOSED entry is reused only for the same name, so old figures of other
             * names stay visible until the run ends. */
            uint32_t expect = OMDP_STATS_CLOSED;
            if (strncmp(e->body.name, body.name, OMDP_STATS_NAME_LEN) != 0 ||
                !atomic_compare_exchange_strong_explicit(&e->state, &expect, OMDP_STATS_CLAIMED,
                                                         memory_order_acq_rel, memory_order_relaxed))
                continue;
        }
        uint64_t seq;
        int rc = omdp_seq_write_begin(&e->seq, &seq);
        if (rc != 0) {
            atomic_store_explicit(&e->state, OMDP_STATS_CLOSED, memory_order_release);
            return rc;
        }
        e->body = body;
        omdp_seq_write_end(&e->seq, seq);
        atomic_store_explicit(&e->state, OMDP_STATS_LIVE, memory_order_release);
        return i;
    }
    return OMDP_STATS_EFULL;
}

int omdp_stats_op_publish(omdp_stats_t *s, int index, const int64_t *values, uint32_t n, int64_t now_ns)
{
    if (!s || index < 0 || index >= OMDP_STATS_MAX_OPERATORS || (n > 0 && !values))
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    omdp_stats_operator_entry_t *e = &s->seg->operators[index];
    if (state_of(&e->state) != OMDP_STATS_LIVE)
        return OMDP_STATS_ENOENT;
    if (n > e->body.n_counters)
        return OMDP_STATS_EINVAL;
    uint64_t seq;
    int rc = omdp_seq_write_begin(&e->seq, &seq);
    if (rc != 0)
        return rc;
    memcpy(e->body.counters, values, (size_t)n * sizeof(int64_t));
    e->body.updated_ns = now_ns;
    omdp_seq_write_end(&e->seq, seq);
    return 0;
}

int omdp_stats_op_close(omdp_stats_t *s, int index)
{
    if (!s || index < 0 || index >= OMDP_STATS_MAX_OPERATORS)
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    uint32_t expect = OMDP_STATS_LIVE;
    if (!atomic_compare_exchange_strong_explicit(&s->seg->operators[index].state, &expect, OMDP_STATS_CLOSED,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return OMDP_STATS_ENOENT;
    return 0;
}

int omdp_stats_ops_read(const omdp_stats_t *s, omdp_stats_operator_t *out, uint32_t cap)
{
    if (!s || (cap > 0 && !out))
        return OMDP_STATS_EINVAL;
    uint32_t n = 0;
    for (int i = 0; i < OMDP_STATS_MAX_OPERATORS && n < cap; i++) {
        const omdp_stats_operator_entry_t *e = &s->seg->operators[i];
        uint32_t st = state_of(&e->state);
        if (st != OMDP_STATS_LIVE && st != OMDP_STATS_CLOSED)
            continue;
        int rc = omdp_seq_read(&e->seq, &out[n], &e->body, sizeof(e->body));
        if (rc != 0)
            return rc;
        out[n].state = st;
        out[n].name[OMDP_STATS_NAME_LEN - 1] = 0;
        out[n].kind[OMDP_STATS_KIND_LEN - 1] = 0;
        if (out[n].n_counters > OMDP_STATS_OP_COUNTERS)
            out[n].n_counters = OMDP_STATS_OP_COUNTERS;
        n++;
    }
    return (int)n;
}

/* ---- signals ---- */

int omdp_stats_signals_push(omdp_stats_t *s, const omdp_stats_signal_t *sig, uint32_t n)
{
    if (!s || (n > 0 && !sig))
        return OMDP_STATS_EINVAL;
    if (!s->writable)
        return OMDP_STATS_EROFS;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t p = atomic_fetch_add_explicit(&s->seg->signal_head, 1, memory_order_relaxed);
        omdp_stats_signal_entry_t *e = &s->seg->signals[p % OMDP_STATS_SIGNALS];
        atomic_store_explicit(&e->seq, 2 * p + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        e->body = sig[i];
        e->body.kind[OMDP_STATS_KIND_LEN - 1] = 0;
        e->body.series[OMDP_STATS_SERIES_LEN - 1] = 0;
        atomic_store_explicit(&e->seq, 2 * p + 2, memory_order_release);
    }
    return 0;
}

int64_t omdp_stats_signals_total(const omdp_stats_t *s)
{
    if (!s)
        return OMDP_STATS_EINVAL;
    return (int64_t)atomic_load_explicit((_Atomic uint64_t *)&s->seg->signal_head, memory_order_acquire);
}

int omdp_stats_signals_read(const omdp_stats_t *s, omdp_stats_signal_t *out, uint32_t cap)
{
    if (!s || (cap > 0 && !out))
        return OMDP_STATS_EINVAL;
    uint64_t head = atomic_load_explicit((_Atomic uint64_t *)&s->seg->signal_head, memory_order_acquire);
    uint32_t n = 0;
    for (uint64_t k = 0; k < OMDP_STATS_SIGNALS && k < head && n < cap; k++) {
        uint64_t p = head - 1 - k;
        const omdp_stats_signal_entry_t *e = &s->seg->signals[p % OMDP_STATS_SIGNALS];
        _Atomic uint64_t *q = (_Atomic uint64_t *)&e->seq;
        /* Accept only the finished write of position p: a slot still being written or
         * already overwritten by a later lap is skipped. */
        if (atomic_load_explicit(q, memory_order_acquire) != 2 * p + 2)
            continue;
        memcpy(&out[n], &e->body, sizeof(e->body));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(q, memory_order_relaxed) != 2 * p + 2)
            continue;
        n++;
    }
    return (int)n;
}
