/* seq_source, relay, seq_sink (seq_ops.h). */
#include "omdp/seq_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/clock.h"

/* ---- seq_source ---------------------------------------------------------------------- */

typedef struct seq_source {
    omdp_seq_source_params_t prm;
    uint32_t source;
    uint64_t emitted;
    uint64_t batches;
    int64_t start_ns;
    uint8_t *buf;
} seq_source_t;

static int seq_source_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != sizeof(omdp_seq_source_params_t) || !init->params)
        return omdp_op_init_fail(init, "params: expected omdp_seq_source_params_t");
    omdp_seq_source_params_t prm;
    memcpy(&prm, init->params, sizeof prm);
    if (prm.batch < 1 || prm.batch > OMDP_SEQ_MAX_BATCH)
        return omdp_op_init_fail(init, "batch must be 1..4096");
    if (prm.record_size < OMDP_SEQ_RECORD_MIN || prm.record_size > 65528 || prm.record_size % 8)
        return omdp_op_init_fail(init, "record_size must be a multiple of 8 in 80..65528");
    if (!(prm.rate >= 0.0) || isinf(prm.rate))
        return omdp_op_init_fail(init, "rate must be >= 0 and finite");
    if ((uint64_t)prm.source_base + init->replica >= OMDP_SEQ_MAX_SOURCES)
        return omdp_op_init_fail(init, "source id (source_base + replica) must be < 65536");
    seq_source_t *s = calloc(1, sizeof *s);
    if (!s)
        return OMDP_ERR_NOMEM;
    s->buf = aligned_alloc(64, ((size_t)prm.batch * prm.record_size + 63) / 64 * 64);
    if (!s->buf) {
        free(s);
        return OMDP_ERR_NOMEM;
    }
    s->prm = prm;
    s->source = prm.source_base + init->replica;
    *state = s;
    return OMDP_OK;
}

static int seq_source_poll(void *state, const omdp_emitter_t *em)
{
    seq_source_t *s = state;
    const omdp_seq_source_params_t *prm = &s->prm;
    if (prm->count && s->emitted >= prm->count)
        return OMDP_POLL_DONE;
    int64_t now = omdp_now_ns();
    if (s->start_ns == 0)
        s->start_ns = now;
    uint64_t n = prm->batch;
    if (prm->rate > 0.0) {
        double due = (double)(now - s->start_ns) * prm->rate / 1e9;
        uint64_t due_n = due > 0 ? (uint64_t)due + 1 : 1;
        if (due_n <= s->emitted)
            return OMDP_POLL_IDLE;
        if (due_n - s->emitted < n)
            n = due_n - s->emitted;
    }
    if (prm->count && prm->count - s->emitted < n)
        n = prm->count - s->emitted;
    uint32_t fill = (prm->record_size - OMDP_SEQ_RECORD_MIN) / 8;
    for (uint64_t k = 0; k < n; k++) {
        uint8_t *r = s->buf + k * prm->record_size;
        omdp_seq_record_t rec;
        memset(&rec, 0, sizeof rec);
        rec.hdr.type = OMDP_RT_SEQ;
        rec.hdr.length = (uint16_t)prm->record_size;
        uint64_t seq = s->emitted + k;
        rec.hdr.stamps.intended = prm->rate > 0.0 ? s->start_ns + (int64_t)((double)seq * 1e9 / prm->rate) : now;
        rec.source = s->source;
        rec.seq = seq;
        rec.check = omdp_seq_check(s->source, seq);
        memcpy(r, &rec, sizeof rec);
        uint64_t *w = (uint64_t *)(r + OMDP_SEQ_RECORD_MIN);
        for (uint32_t j = 0; j < fill; j++)
            w[j] = rec.check + j;
    }
    s->emitted += n;
    s->batches++;
    int rc = omdp_emit(em, 0, s->buf, (uint32_t)(n * prm->record_size));
    return rc < 0 ? rc : OMDP_POLL_PRODUCED;
}

static uint32_t seq_source_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    seq_source_t *s = state;
    omdp_counter_t c[] = {{"records", s->emitted}, {"batches", s->batches}, {"source", s->source}};
    uint32_t n = sizeof c / sizeof c[0];
    memcpy(out, c, (n < max ? n : max) * sizeof c[0]);
    return n;
}

static void seq_source_close(void *state)
{
    seq_source_t *s = state;
    free(s->buf);
    free(s);
}

static const omdp_operator_vtable_t SEQ_SOURCE = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "seq_source",
    .n_inputs = 0,
    .n_outputs = 1,
    .init = seq_source_init,
    .poll = seq_source_poll,
    .counters = seq_source_counters,
    .close = seq_source_close,
};

const omdp_operator_vtable_t *omdp_seq_source_vtable(void) { return &SEQ_SOURCE; }

/* ---- relay ----------------------------------------------------------------------------- */

typedef struct relay {
    uint64_t batches, records, bad_batches;
} relay_t;

static int relay_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != 0)
        return omdp_op_init_fail(init, "relay takes no parameters");
    relay_t *r = calloc(1, sizeof *r);
    if (!r)
        return OMDP_ERR_NOMEM;
    *state = r;
    return OMDP_OK;
}

static int relay_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                         const omdp_emitter_t *em)
{
    relay_t *r = state;
    int64_t n = omdp_batch_count(records, nbytes);
    r->batches++;
    if (n < 0) {
        r->bad_batches++;
        return OMDP_OK;
    }
    r->records += (uint64_t)n;
    return omdp_emit(em, 0, records, nbytes);
}

static uint32_t relay_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    relay_t *r = state;
    omdp_counter_t c[] = {{"batches", r->batches}, {"records", r->records}, {"bad_batches", r->bad_batches}};
    uint32_t n = sizeof c / sizeof c[0];
    memcpy(out, c, (n < max ? n : max) * sizeof c[0]);
    return n;
}

static void relay_close(void *state) { free(state); }

static const omdp_operator_vtable_t RELAY = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "relay",
    .n_inputs = 1,
    .n_outputs = 1,
    .init = relay_init,
    .process_batch = relay_process,
    .counters = relay_counters,
    .close = relay_close,
};

const omdp_operator_vtable_t *omdp_relay_vtable(void) { return &RELAY; }

/* ---- seq_sink -------------------------------------------------------------------------- */

typedef struct seq_sink {
    omdp_seq_sink_params_t prm;
    uint64_t *next; /* per source: the next expected seq */
    uint64_t records, batches, bytes, sources, gaps, out_of_order, bad_check, bad_record, bad_source, foreign;
    uint64_t expected_sum; /* sum of next[] over sources: records a complete run delivers */
    int64_t first_ns, last_ns;
    uint64_t latency_sum_ns, latency_max_ns;
} seq_sink_t;

static int seq_sink_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != sizeof(omdp_seq_sink_params_t) || !init->params)
        return omdp_op_init_fail(init, "params: expected omdp_seq_sink_params_t");
    omdp_seq_sink_params_t prm;
    memcpy(&prm, init->params, sizeof prm);
    if (prm.max_sources < 1 || prm.max_sources > OMDP_SEQ_MAX_SOURCES)
        return omdp_op_init_fail(init, "max_sources must be 1..65536");
    seq_sink_t *s = calloc(1, sizeof *s);
    if (!s)
        return OMDP_ERR_NOMEM;
    s->next = calloc(prm.max_sources, sizeof *s->next);
    if (!s->next) {
        free(s);
        return OMDP_ERR_NOMEM;
    }
    s->prm = prm;
    *state = s;
    return OMDP_OK;
}

static int seq_record_ok(const seq_sink_t *s, const uint8_t *r, uint16_t len, const omdp_seq_record_t *rec)
{
    if (rec->check != omdp_seq_check(rec->source, rec->seq))
        return 0;
    if (s->prm.verify_fill) {
        uint32_t fill = (uint32_t)(len - OMDP_SEQ_RECORD_MIN) / 8;
        for (uint32_t j = 0; j < fill; j++) {
            uint64_t w;
            memcpy(&w, r + OMDP_SEQ_RECORD_MIN + 8 * j, sizeof w);
            if (w != rec->check + j)
                return 0;
        }
    }
    return 1;
}

static int seq_sink_process(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                            const omdp_emitter_t *em)
{
    seq_sink_t *s = state;
    int64_t now = omdp_now_ns();
    if (!s->first_ns)
        s->first_ns = now;
    s->last_ns = now;
    s->batches++;
    uint32_t off = 0;
    const uint8_t *r;
    int rc;
    while ((rc = omdp_batch_next(records, nbytes, &off, &r)) == 1) {
        omdp_seq_record_t rec;
        uint16_t len;
        memcpy(&len, r + offsetof(omdp_record_header_t, length), sizeof len);
        if (len < OMDP_SEQ_RECORD_MIN) {
            s->bad_record++;
            continue;
        }
        memcpy(&rec, r, sizeof rec);
        if (rec.hdr.type != OMDP_RT_SEQ) {
            s->foreign++;
            continue;
        }
        if (!seq_record_ok(s, r, len, &rec)) {
            s->bad_check++;
            continue;
        }
        if (rec.source >= s->prm.max_sources) {
            s->bad_source++;
            continue;
        }
        s->records++;
        s->bytes += len;
        if (rec.hdr.stamps.intended > 0 && now > rec.hdr.stamps.intended) {
            uint64_t lat = (uint64_t)(now - rec.hdr.stamps.intended);
            s->latency_sum_ns += lat;
            if (lat > s->latency_max_ns)
                s->latency_max_ns = lat;
        }
        uint64_t *next = &s->next[rec.source];
        if (*next == 0 && rec.seq == 0)
            s->sources++;
        if (rec.seq == *next) {
            (*next)++;
            s->expected_sum++;
        } else if (rec.seq > *next) {
            if (*next == 0)
                s->sources++;
            s->gaps += rec.seq - *next;
            s->expected_sum += rec.seq + 1 - *next;
            *next = rec.seq + 1;
        } else {
            s->out_of_order++;
        }
    }
    if (rc < 0)
        s->bad_record++;
    return OMDP_OK;
}

static uint32_t seq_sink_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    seq_sink_t *s = state;
    omdp_counter_t c[] = {
        {"records", s->records},       {"batches", s->batches},         {"bytes", s->bytes},
        {"sources", s->sources},       {"expected", s->expected_sum},   {"gaps", s->gaps},
        {"out_of_order", s->out_of_order}, {"bad_check", s->bad_check}, {"bad_record", s->bad_record},
        {"bad_source", s->bad_source}, {"foreign", s->foreign},         {"first_ns", (uint64_t)s->first_ns},
        {"last_ns", (uint64_t)s->last_ns}, {"latency_sum_ns", s->latency_sum_ns},
        {"latency_max_ns", s->latency_max_ns},
    };
    uint32_t n = sizeof c / sizeof c[0];
    memcpy(out, c, (n < max ? n : max) * sizeof c[0]);
    return n;
}

static void seq_sink_close(void *state)
{
    seq_sink_t *s = state;
    free(s->next);
    free(s);
}

static const omdp_operator_vtable_t SEQ_SINK = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "seq_sink",
    .n_inputs = 1,
    .n_outputs = 0,
    .init = seq_sink_init,
    .process_batch = seq_sink_process,
    .counters = seq_sink_counters,
    .close = seq_sink_close,
};

const omdp_operator_vtable_t *omdp_seq_sink_vtable(void) { return &SEQ_SINK; }
