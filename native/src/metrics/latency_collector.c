/* Latency collector core: batch walk, hop arithmetic, live histograms, sample rows (collector.h). */
#include "omdp/collector.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/clock.h"
#include "omdp/stamp_clock.h"

#define NS_PER_S 1000000000LL
#define FIRST_ROWS 4096

/* Stamp-block indexes of each hop's end and start (intended, fh_in, fh_out, de_in, de_out, mc_in). */
static const uint8_t HOP_END[OMDP_LAT_HOPS] = {2, 3, 4, 5, 5, 5};
static const uint8_t HOP_START[OMDP_LAT_HOPS] = {1, 2, 3, 4, 1, 0};

struct omdp_latency_collector {
    omdp_latency_config_t cfg;
    omdp_latency_counters_t counters;
    omdp_hist_t total[OMDP_LAT_HOPS];
    omdp_hist_t this_second[OMDP_LAT_HOPS];
    int64_t second;             /* epoch second this_second covers; 0 before the first sample */
    int64_t last_publish_ns;
    uint64_t candidates;        /* EVERY_N position */
    omdp_stats_t *stats;
    int op_index;
    size_t cap;                 /* rows allocated */
    omdp_sample_columns_t cols;
    size_t handoff_rows;        /* 0: rows stay until the end; else hand them over in chunks this big */
    /* A full chunk waiting for the reader thread (omdp_latency_take_chunk), or NULL. The
     * loop only stores into an empty slot (release); the reader empties it (acquire). */
    _Atomic(omdp_sample_columns_t *) ready;
};

static int valid_field(omdp_id_field_t f)
{
    return f.size == 0 || f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8;
}

static int valid_config(const omdp_latency_config_t *cfg)
{
    const omdp_sample_id_layout_t *id = &cfg->id;
    return (cfg->select == OMDP_LAT_SELECT_FLAGGED || cfg->select == OMDP_LAT_SELECT_EVERY_N) &&
           cfg->sample_every >= 1 && cfg->publish_interval_ns >= 0 && valid_field(id->line) &&
           valid_field(id->block_seq) && valid_field(id->msg_seq) && valid_field(id->engine) &&
           valid_field(id->key) && valid_field(id->category);
}

omdp_latency_collector_t *omdp_latency_collector_new(const omdp_latency_config_t *cfg)
{
    if (!cfg || !valid_config(cfg))
        return NULL;
    omdp_latency_collector_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = *cfg;
    c->op_index = -1;
    c->counters.last_error_offset = -1;
    for (int h = 0; h < OMDP_LAT_HOPS; h++) {
        omdp_hist_init(&c->total[h]);
        omdp_hist_init(&c->this_second[h]);
    }
    return c;
}

static void free_columns(omdp_sample_columns_t *k)
{
    free(k->intended);
    free(k->fh_in);
    free(k->fh_out);
    free(k->de_in);
    free(k->de_out);
    free(k->mc_in);
    free(k->line);
    free(k->block_seq);
    free(k->msg_seq);
    free(k->engine);
    free(k->key);
    free(k->category);
    memset(k, 0, sizeof(*k));
}

void omdp_latency_collector_free(omdp_latency_collector_t *c)
{
    if (!c)
        return;
    omdp_sample_columns_t *chunk = atomic_exchange_explicit(&c->ready, NULL, memory_order_acquire);
    if (chunk) {
        free_columns(chunk);
        free(chunk);
    }
    free_columns(&c->cols);
    free(c);
}

void omdp_latency_free_columns(omdp_sample_columns_t *cols)
{
    if (cols)
        free_columns(cols);
}

int omdp_latency_set_handoff(omdp_latency_collector_t *c, size_t chunk_rows)
{
    if (!c)
        return OMDP_LAT_EINVAL;
    c->handoff_rows = chunk_rows;
    return 0;
}

/* Hand the kept rows over as one chunk once handoff_rows are kept and the slot is empty; a
 * reader that falls behind leaves the rows growing here, up to max_rows (then counted drops). */
static void maybe_hand_off(omdp_latency_collector_t *c)
{
    if (!c->handoff_rows || c->cols.rows < c->handoff_rows ||
        atomic_load_explicit(&c->ready, memory_order_relaxed) != NULL)
        return;
    omdp_sample_columns_t *chunk = malloc(sizeof *chunk);
    if (!chunk)
        return;
    *chunk = c->cols;
    memset(&c->cols, 0, sizeof c->cols);
    c->cap = 0;
    c->counters.rows = 0;
    atomic_store_explicit(&c->ready, chunk, memory_order_release);
}

int64_t omdp_latency_take_chunk(omdp_latency_collector_t *c, omdp_sample_columns_t *out)
{
    if (!c || !out)
        return OMDP_LAT_EINVAL;
    omdp_sample_columns_t *chunk = atomic_exchange_explicit(&c->ready, NULL, memory_order_acquire);
    if (!chunk) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    *out = *chunk;
    free(chunk);
    return (int64_t)out->rows;
}

const char *omdp_latency_op_counter_names(void)
{
    return OMDP_LAT_OP_COUNTERS;
}

int omdp_latency_attach_stats(omdp_latency_collector_t *c, omdp_stats_t *s, int op_index)
{
    if (!c || op_index >= OMDP_STATS_MAX_OPERATORS)
        return OMDP_LAT_EINVAL;
    c->stats = s;
    c->op_index = s ? op_index : -1;
    return 0;
}

/* Grow every column to new_cap rows; 0 or -1 (columns keep their old size on failure). */
#define GROW(field)                                                                   \
    do {                                                                              \
        void *p = realloc(k->field, new_cap * sizeof(*k->field));                     \
        if (!p)                                                                       \
            return -1;                                                                \
        k->field = p;                                                                 \
    } while (0)

static int grow(omdp_latency_collector_t *c, size_t new_cap)
{
    omdp_sample_columns_t *k = &c->cols;
    GROW(intended);
    GROW(fh_in);
    GROW(fh_out);
    GROW(de_in);
    GROW(de_out);
    GROW(mc_in);
    GROW(line);
    GROW(block_seq);
    GROW(msg_seq);
    GROW(engine);
    GROW(key);
    GROW(category);
    c->cap = new_cap;
    return 0;
}

static int has_room(omdp_latency_collector_t *c)
{
    size_t rows = c->cols.rows;
    if ((uint64_t)rows >= c->cfg.max_rows)
        return 0;
    if (rows < c->cap)
        return 1;
    size_t want = c->cap ? c->cap * 2 : FIRST_ROWS;
    if ((uint64_t)want > c->cfg.max_rows)
        want = (size_t)c->cfg.max_rows;
    return grow(c, want) == 0;
}

static void append_row(omdp_latency_collector_t *c, const int64_t *st, const omdp_sample_id_t *id)
{
    if (!has_room(c)) {
        c->counters.rows_dropped++;
        return;
    }
    omdp_sample_columns_t *k = &c->cols;
    size_t r = k->rows++;
    k->intended[r] = st[0];
    k->fh_in[r] = st[1];
    k->fh_out[r] = st[2];
    k->de_in[r] = st[3];
    k->de_out[r] = st[4];
    k->mc_in[r] = st[5];
    k->line[r] = id->line;
    k->block_seq[r] = id->block_seq;
    k->msg_seq[r] = id->msg_seq;
    k->engine[r] = id->engine;
    k->key[r] = id->key;
    k->category[r] = id->category;
    c->counters.rows = k->rows;
}

/* end - start without signed overflow: an out-of-range difference saturates, and the
 * histogram then clamps and counts it. */
static inline int64_t diff(int64_t end, int64_t start)
{
    int64_t d;
    if (__builtin_sub_overflow(end, start, &d))
        return end > start ? INT64_MAX : INT64_MIN;
    return d;
}

/* Record the six hops of one stamp block into a (and b when not NULL). */
static inline void record_hops(const int64_t *st, omdp_hist_t *a, omdp_hist_t *b, uint64_t *missing)
{
    for (int h = 0; h < OMDP_LAT_HOPS; h++) {
        int64_t e = st[HOP_END[h]], s = st[HOP_START[h]];
        if (e == 0 || s == 0) {
            if (missing)
                missing[h]++;
            continue;
        }
        int64_t d = diff(e, s);
        omdp_hist_add(&a[h], d);
        if (b)
            omdp_hist_add(&b[h], d);
    }
}

static int publish(omdp_latency_collector_t *c, int64_t now_ns)
{
    if (!c->stats)
        return 0;
    int rc = omdp_stats_latency_publish_total(c->stats, c->total, c->counters.missing, now_ns);
    if (rc == 0 && c->second > 0)
        rc = omdp_stats_latency_publish_second(c->stats, c->second, c->this_second, now_ns);
    if (rc == 0 && c->op_index >= 0) {
        const omdp_latency_counters_t *k = &c->counters;
        int64_t v[6] = {(int64_t)k->records,     (int64_t)k->samples, (int64_t)k->not_sampled,
                        (int64_t)k->bad_batches, (int64_t)k->rows,    (int64_t)k->rows_dropped};
        rc = omdp_stats_op_publish(c->stats, c->op_index, v, 6, now_ns);
    }
    if (rc == 0)
        c->counters.publishes++;
    else
        c->counters.publish_errors++;
    c->last_publish_ns = now_ns;
    return rc;
}

/* A sample at mc_in belongs to its epoch second; entering a later second publishes the
 * finished one and starts an empty one. Late samples stay in the current second. */
static void roll_second(omdp_latency_collector_t *c, int64_t mc_in)
{
    int64_t sec = mc_in / NS_PER_S;
    if (sec <= c->second)
        return;
    if (c->second > 0) {
        publish(c, mc_in);
        for (int h = 0; h < OMDP_LAT_HOPS; h++)
            omdp_hist_init(&c->this_second[h]);
    }
    c->second = sec;
}

static void maybe_publish(omdp_latency_collector_t *c, int64_t now_ns)
{
    if (c->stats && c->cfg.publish_interval_ns > 0 && now_ns - c->last_publish_ns >= c->cfg.publish_interval_ns)
        publish(c, now_ns);
}

static uint64_t read_field(const uint8_t *rec, size_t len, omdp_id_field_t f, uint64_t *oob)
{
    if (f.size == 0)
        return 0;
    if ((size_t)f.offset + f.size > len) {
        (*oob)++;
        return 0;
    }
    const uint8_t *p = rec + f.offset;
    switch (f.size) {
    case 1:
        return p[0];
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static void extract_id(omdp_latency_collector_t *c, const uint8_t *rec, size_t len, uint16_t source,
                       omdp_sample_id_t *id)
{
    const omdp_sample_id_layout_t *l = &c->cfg.id;
    uint64_t *oob = &c->counters.id_out_of_bounds;
    memset(id, 0, sizeof(*id));
    id->line = (uint16_t)read_field(rec, len, l->line, oob);
    id->block_seq = read_field(rec, len, l->block_seq, oob);
    id->msg_seq = read_field(rec, len, l->msg_seq, oob);
    id->engine = l->engine.size ? (uint16_t)read_field(rec, len, l->engine, oob) : source;
    id->key = (uint32_t)read_field(rec, len, l->key, oob);
    id->category = (uint8_t)read_field(rec, len, l->category, oob);
}

static int is_sample(omdp_latency_collector_t *c, const omdp_record_header_t *h)
{
    if (c->cfg.record_type && h->type != c->cfg.record_type)
        return 0;
    if (c->cfg.select == OMDP_LAT_SELECT_FLAGGED)
        return (h->flags & OMDP_RF_SAMPLED) != 0;
    return (c->candidates++ % c->cfg.sample_every) == 0;
}

static void take_sample(omdp_latency_collector_t *c, const int64_t *st, const omdp_sample_id_t *id)
{
    c->counters.samples++;
    record_hops(st, c->total, c->stats ? c->this_second : NULL, c->counters.missing);
    append_row(c, st, id);
    maybe_hand_off(c);
}

int64_t omdp_latency_collect_batch(omdp_latency_collector_t *c, const void *batch, size_t nbytes, uint16_t source,
                                   int64_t mc_in)
{
    if (!c || (nbytes > 0 && !batch) || mc_in < 0)
        return OMDP_LAT_EINVAL;
    if (mc_in == 0)
        mc_in = omdp_stamp_ns();
    c->counters.batches++;
    roll_second(c, mc_in);
    const uint8_t *p = batch;
    size_t off = 0;
    int64_t taken = 0;
    int bad = 0;
    while (off < nbytes) {
        size_t left = nbytes - off;
        /* A copy of the header: no alignment is assumed of the batch (a transport's slot,
         * a caller's buffer), and nothing is read before it is known to be inside it. */
        omdp_record_header_t h;
        if (left < OMDP_RECORD_HEADER_SIZE) {
            bad = 1;
            break;
        }
        memcpy(&h, p + off, sizeof h);
        if (h.length < OMDP_RECORD_HEADER_SIZE || (h.length & 7u) || h.length > left) {
            bad = 1;
            break;
        }
        c->counters.records++;
        if (!is_sample(c, &h)) {
            c->counters.not_sampled++;
            off += h.length;
            continue;
        }
        const omdp_stamps_t *s = &h.stamps;
        int64_t st[6] = {s->intended, s->fh_in, s->fh_out, s->de_in, s->de_out, mc_in};
        omdp_sample_id_t id;
        extract_id(c, p + off, h.length, source, &id);
        take_sample(c, st, &id);
        taken++;
        off += h.length;
    }
    if (bad) {
        c->counters.bad_batches++;
        c->counters.last_error_offset = (int64_t)off;
    }
    maybe_publish(c, mc_in);
    return bad ? OMDP_LAT_EBADREC : taken;
}

int64_t omdp_latency_collect_rows(omdp_latency_collector_t *c, const omdp_stamps_t *stamps,
                                  const omdp_sample_id_t *ids, size_t n)
{
    if (!c || (n > 0 && !stamps))
        return OMDP_LAT_EINVAL;
    static const omdp_sample_id_t zero_id;
    int64_t last = 0;
    c->counters.batches++;
    for (size_t i = 0; i < n; i++) {
        const omdp_stamps_t *s = &stamps[i];
        int64_t st[6] = {s->intended, s->fh_in, s->fh_out, s->de_in, s->de_out, s->mc_in};
        if (s->mc_in > 0) {
            roll_second(c, s->mc_in);
            last = s->mc_in > last ? s->mc_in : last;
        }
        c->counters.records++;
        take_sample(c, st, ids ? &ids[i] : &zero_id);
    }
    if (last > 0)
        maybe_publish(c, last);
    return (int64_t)n;
}

int omdp_latency_publish(omdp_latency_collector_t *c, int64_t now_ns)
{
    if (!c)
        return OMDP_LAT_EINVAL;
    if (!c->stats)
        return 0;
    int rc = publish(c, now_ns);
    if (rc == 0)
        rc = omdp_stats_heartbeat(c->stats, now_ns);
    return rc;
}

const omdp_latency_counters_t *omdp_latency_counters(const omdp_latency_collector_t *c)
{
    return c ? &c->counters : NULL;
}

const omdp_hist_t *omdp_latency_hist(const omdp_latency_collector_t *c, int hop)
{
    if (!c || hop < 0 || hop >= OMDP_LAT_HOPS)
        return NULL;
    return &c->total[hop];
}

int64_t omdp_latency_discard_rows(omdp_latency_collector_t *c, size_t n)
{
    if (!c)
        return -1;
    omdp_sample_columns_t *k = &c->cols;
    if (n > k->rows)
        n = k->rows;
    size_t left = k->rows - n;
    if (n && left) {
#define OMDP_MOVE(f) memmove(k->f, k->f + n, left * sizeof *k->f)
        OMDP_MOVE(intended); OMDP_MOVE(fh_in); OMDP_MOVE(fh_out); OMDP_MOVE(de_in); OMDP_MOVE(de_out);
        OMDP_MOVE(mc_in); OMDP_MOVE(line); OMDP_MOVE(block_seq); OMDP_MOVE(msg_seq); OMDP_MOVE(engine);
        OMDP_MOVE(key); OMDP_MOVE(category);
#undef OMDP_MOVE
    }
    k->rows = left;
    c->counters.rows = left;
    return (int64_t)left;
}

int omdp_latency_columns(const omdp_latency_collector_t *c, omdp_sample_columns_t *out)
{
    if (!c || !out)
        return OMDP_LAT_EINVAL;
    *out = c->cols;
    return 0;
}

int omdp_latency_hists_from_columns(const omdp_sample_columns_t *cols, size_t start, size_t end, omdp_hist_t *out,
                                    uint64_t *missing)
{
    if (!cols || !out || start > end || end > cols->rows)
        return OMDP_LAT_EINVAL;
    if (end > start && (!cols->intended || !cols->fh_in || !cols->fh_out || !cols->de_in || !cols->de_out ||
                        !cols->mc_in))
        return OMDP_LAT_EINVAL;
    uint64_t local_missing[OMDP_LAT_HOPS] = {0};
    for (size_t r = start; r < end; r++) {
        int64_t st[6] = {cols->intended[r], cols->fh_in[r], cols->fh_out[r], cols->de_in[r], cols->de_out[r],
                         cols->mc_in[r]};
        record_hops(st, out, NULL, local_missing);
    }
    if (missing)
        for (int h = 0; h < OMDP_LAT_HOPS; h++)
            missing[h] += local_missing[h];
    return 0;
}
