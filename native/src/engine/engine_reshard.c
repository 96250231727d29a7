/* The marker / hold / install state machine in front of one engine (engine_reshard.h). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "omdp/clock.h"
#include "omdp/engine_reshard.h"

_Static_assert(sizeof(omdp_reshard_marker_t) == OMDP_RESHARD_MARKER_SIZE, "marker record size");

enum { ROLE_NONE, ROLE_FROM, ROLE_TO };

enum {
    K_MARKERS_SEEN, K_MARKERS_BAD, K_MARKERS_DUPLICATE, K_MARKERS_UNEXPECTED, K_EXPORTS, K_INSTALLS,
    K_STATE_BYTES_OUT, K_STATE_BYTES_IN, K_SERIES_IN, K_HELD, K_HELD_MAX, K_HOLD_MAX_NS, K_INSTALL_TIMEOUTS,
    K_STATE_LOST, K_HELD_OVERFLOW, K_EXPORTS_AT_END, K_MARKERS_LATE, K_REFS_CARRIED, K_COUNT
};

static const char *const NAMES[K_COUNT] = {
    "reshard_markers_seen", "reshard_markers_bad", "reshard_markers_duplicate", "reshard_markers_unexpected",
    "reshard_exports", "reshard_installs", "reshard_state_bytes_out", "reshard_state_bytes_in",
    "reshard_series_in", "reshard_held", "reshard_held_max", "reshard_hold_max_ns", "reshard_install_timeouts",
    "reshard_state_lost", "reshard_held_overflow", "reshard_exports_at_end", "reshard_markers_late",
    "reshard_refs_carried",
};

struct omdp_engine_reshard {
    omdp_reshard_seg_t *seg;
    omdp_engine_t *engine;
    uint32_t index, buckets, n_engines, n_fh;
    uint64_t all_fh;        /* mask of every feed handler's bit */
    /* the move in progress here (0: none) and the last one finished here */
    uint64_t move, done;
    uint32_t role, bucket, from, to;
    uint64_t seen;          /* feed handlers whose marker of `move` (or, with none in progress,
                             * of `done`) came */
    int holding;
    int64_t hold_start_ns;
    omdp_opra_msg_t *held;
    uint32_t n_held, cap_held;
    /* the last install's limits, kept through the first pricing publish after it */
    uint32_t *carry_slots;
    omdp_series_ref_t *carry_refs;
    uint32_t n_carry, cap_carry, carry_front;
    uint64_t k[K_COUNT];
};

omdp_engine_reshard_t *omdp_engine_reshard_new(omdp_reshard_seg_t *seg, omdp_engine_t *engine, uint32_t engine_index,
                                               char *err, size_t errlen)
{
    omdp_reshard_totals_t t;
    if (!seg || !engine) {
        snprintf(err, errlen, "reshard: no segment or no engine");
        return NULL;
    }
    omdp_reshard_totals(seg, &t);
    if (engine_index >= t.n_engines) {
        snprintf(err, errlen, "reshard: engine %u of the segment's %u engines", engine_index, t.n_engines);
        return NULL;
    }
    omdp_engine_reshard_t *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->seg = seg;
    r->engine = engine;
    r->index = engine_index;
    r->buckets = t.buckets;
    r->n_engines = t.n_engines;
    r->n_fh = t.n_fh;
    r->all_fh = t.n_fh >= 64 ? ~0ull : (1ull << t.n_fh) - 1u;
    r->done = t.installed; /* moves finished before this engine started are none of its business */
    omdp_reshard_attach(seg);
    return r;
}

void omdp_engine_reshard_free(omdp_engine_reshard_t *r)
{
    if (!r)
        return;
    free(r->held);
    free(r->carry_slots);
    free(r->carry_refs);
    free(r);
}

int32_t omdp_engine_reshard_holding(const omdp_engine_reshard_t *r)
{
    return r && r->holding ? (int32_t)r->bucket : -1;
}

uint32_t omdp_engine_reshard_counters(const omdp_engine_reshard_t *r, omdp_counter_t *out, uint32_t max)
{
    for (uint32_t i = 0; i < K_COUNT && i < max; i++)
        out[i] = (omdp_counter_t){NAMES[i], r->k[i]};
    return K_COUNT;
}

/* ---- the engine giving the bucket up ------------------------------------------------------- */

static void export_state(omdp_engine_reshard_t *r)
{
    uint64_t cap;
    uint8_t *area = omdp_reshard_handover_area(r->seg, &cap);
    uint32_t n = 0;
    int64_t bytes = omdp_engine_export_bucket(r->engine, r->buckets, r->bucket, area, cap, &n);
    omdp_reshard_handover_t h = {.move_id = r->move, .bucket = r->bucket, .n_series = n};
    if (bytes < 0) { /* did not fit: the move completes without the state, counted at both ends */
        h.n_series = UINT32_MAX;
        bytes = sizeof h;
        n = 0;
        r->k[K_STATE_LOST]++;
    }
    memcpy(area, &h, sizeof h);
    omdp_reshard_publish_export(r->seg, r->move, r->index, n, (uint64_t)bytes, omdp_now_ns());
    r->k[K_EXPORTS]++;
    r->k[K_STATE_BYTES_OUT] += (uint64_t)bytes;
    r->done = r->move;
    r->move = 0;
    r->role = ROLE_NONE;
}

/* ---- the engine taking it ------------------------------------------------------------------- */

static int hold(omdp_engine_reshard_t *r, const uint8_t *rec)
{
    if (r->n_held == r->cap_held) {
        uint32_t cap = r->cap_held ? r->cap_held * 2 : 1024;
        if (cap > OMDP_ENGINE_RESHARD_MAX_HELD)
            return 0;
        omdp_opra_msg_t *p = realloc(r->held, (size_t)cap * sizeof *p);
        if (!p)
            return 0;
        r->held = p;
        r->cap_held = cap;
    }
    memcpy(&r->held[r->n_held++], rec, sizeof(omdp_opra_msg_t));
    r->k[K_HELD]++;
    return 1;
}

/* Install the exported state when it is there (or without it when `force`); then run the
 * held messages. 1: installed, 0: not yet, negative: fn's error. */
static int try_install(omdp_engine_reshard_t *r, int force, omdp_msg_run_fn fn, void *ctx, const omdp_emitter_t *em)
{
    if (omdp_reshard_exported(r->seg) < r->move) {
        if (!force)
            return 0;
        r->k[K_INSTALL_TIMEOUTS]++;
    } else {
        uint64_t cap;
        const uint8_t *area = omdp_reshard_handover_area(r->seg, &cap);
        omdp_reshard_handover_t h;
        memcpy(&h, area, sizeof h);
        uint64_t room = (cap - sizeof h) / sizeof(omdp_reshard_series_t);
        if (h.move_id != r->move || h.bucket != r->bucket || h.n_series == UINT32_MAX || h.n_series > room) {
            r->k[K_STATE_LOST]++;
        } else {
            const omdp_reshard_series_t *s = (const omdp_reshard_series_t *)(area + sizeof h);
            r->n_carry = 0;
            if (h.n_series > r->cap_carry) {
                uint32_t *sl = realloc(r->carry_slots, h.n_series * sizeof *sl);
                if (sl)
                    r->carry_slots = sl;
                omdp_series_ref_t *rf = sl ? realloc(r->carry_refs, h.n_series * sizeof *rf) : NULL;
                if (rf)
                    r->carry_refs = rf;
                r->cap_carry = sl && rf ? h.n_series : 0;
            }
            int carry = h.n_series <= r->cap_carry;
            r->k[K_SERIES_IN] += omdp_engine_import_series(r->engine, s, h.n_series, carry ? r->carry_slots : NULL);
            r->k[K_STATE_BYTES_IN] += sizeof h + (uint64_t)h.n_series * sizeof *s;
            if (carry) {
                for (uint32_t i = 0; i < h.n_series; i++)
                    r->carry_refs[i] = (omdp_series_ref_t){s[i].band_lo, s[i].band_hi, s[i].parity_lo, s[i].parity_hi};
                r->n_carry = h.n_series;
                r->carry_front = omdp_engine_refs_in_use(r->engine); /* a publish pending now is patched too */
            }
        }
    }
    int64_t now = omdp_now_ns();
    int64_t hold_ns = now - r->hold_start_ns;
    uint64_t n = r->n_held;
    r->holding = 0;
    r->n_held = 0;
    int rc = n ? fn(ctx, r->held, (uint32_t)n, em) : OMDP_OK;
    if ((uint64_t)hold_ns > r->k[K_HOLD_MAX_NS])
        r->k[K_HOLD_MAX_NS] = (uint64_t)hold_ns;
    if (n > r->k[K_HELD_MAX])
        r->k[K_HELD_MAX] = n;
    r->k[K_INSTALLS]++;
    omdp_reshard_publish_install(r->seg, r->move, r->bucket, r->index, n, hold_ns, omdp_now_ns());
    r->done = r->move;
    r->move = 0;
    r->role = ROLE_NONE;
    return rc < 0 ? rc : 1;
}

/* ---- markers -------------------------------------------------------------------------------- */

static int on_marker(omdp_engine_reshard_t *r, const uint8_t *rec, uint32_t len, omdp_msg_run_fn fn, void *ctx,
                     const omdp_emitter_t *em)
{
    omdp_reshard_marker_t m;
    if (len != sizeof m) {
        r->k[K_MARKERS_BAD]++;
        return OMDP_OK;
    }
    memcpy(&m, rec, sizeof m);
    if (m.move_id == 0 || m.buckets != r->buckets || m.bucket >= r->buckets || m.from >= r->n_engines ||
        m.to >= r->n_engines || m.from == m.to || m.fh >= r->n_fh || m.n_fh != r->n_fh ||
        (m.from != r->index && m.to != r->index)) {
        r->k[K_MARKERS_BAD]++;
        return OMDP_OK;
    }
    if (m.move_id <= r->done) {
        uint64_t bit = 1ull << m.fh;
        if (m.move_id == r->done && r->move == 0 && !(r->seen & bit)) {
            /* the new engine may install before a slower handler's marker reaches it: that
             * handler's messages of the bucket follow its marker, so they find the state */
            r->seen |= bit;
            r->k[K_MARKERS_SEEN]++;
            r->k[K_MARKERS_LATE]++;
        } else {
            r->k[K_MARKERS_DUPLICATE]++;
        }
        return OMDP_OK;
    }
    if (r->move == 0) {
        r->move = m.move_id;
        r->role = m.from == r->index ? ROLE_FROM : ROLE_TO;
        r->bucket = m.bucket;
        r->from = m.from;
        r->to = m.to;
        r->seen = 0;
        if (r->role == ROLE_TO) {
            r->holding = 1;
            r->hold_start_ns = omdp_now_ns();
        }
    } else if (m.move_id != r->move) {
        r->k[K_MARKERS_UNEXPECTED]++; /* another move while one is in progress here */
        return OMDP_OK;
    } else if (m.bucket != r->bucket || m.from != r->from || m.to != r->to) {
        r->k[K_MARKERS_BAD]++; /* the same move told differently */
        return OMDP_OK;
    }
    uint64_t bit = 1ull << m.fh;
    if (r->seen & bit) {
        r->k[K_MARKERS_DUPLICATE]++;
        return OMDP_OK;
    }
    r->seen |= bit;
    r->k[K_MARKERS_SEEN]++;
    if (r->role == ROLE_FROM) {
        if (r->seen == r->all_fh)
            export_state(r);
        return OMDP_OK;
    }
    int rc = try_install(r, 0, fn, ctx, em);
    return rc < 0 ? rc : OMDP_OK;
}

/* ---- batches -------------------------------------------------------------------------------- */

int omdp_engine_reshard_batch(omdp_engine_reshard_t *r, const uint8_t *records, uint32_t nbytes,
                              omdp_opra_msg_t *scratch, omdp_msg_run_fn fn, void *ctx, const omdp_emitter_t *em,
                              omdp_msg_run_counts_t *counts)
{
    int rc;
    if (r->holding && (rc = try_install(r, 0, fn, ctx, em)) < 0)
        return rc;
    if (r->n_carry && omdp_engine_carry_refs(r->engine, r->carry_slots, r->carry_refs, r->n_carry, &r->carry_front)) {
        r->k[K_REFS_CARRIED]++;
        r->n_carry = 0; /* the next publish was computed from a snapshot with the series in it */
    }
    uint32_t off = 0, start = 0;
    const uint8_t *rec;
    while ((rc = omdp_batch_next(records, nbytes, &off, &rec)) == 1) {
        struct {
            uint16_t type, length;
        } h; /* the header's first two fields: all this walk needs of most records */
        memcpy(&h, rec, sizeof h);
        int special = h.type == OMDP_RT_RESHARD;
        if (!special && r->holding && h.type == OMDP_RT_OPRA_MSG && h.length == sizeof(omdp_opra_msg_t)) {
            uint32_t uid;
            memcpy(&uid, rec + offsetof(omdp_opra_msg_t, underlying_id), sizeof uid);
            special = uid != OMDP_NO_UNDERLYING && (uid & (r->buckets - 1u)) == r->bucket;
        }
        if (!special)
            continue;
        uint32_t at = (uint32_t)(rec - records);
        if (at > start &&
            (rc = omdp_engine_for_each_msg_run(records + start, at - start, scratch, fn, ctx, em, counts)) < 0)
            return rc;
        start = off;
        if (h.type == OMDP_RT_RESHARD) {
            if ((rc = on_marker(r, rec, h.length, fn, ctx, em)) < 0)
                return rc;
        } else if (!hold(r, rec)) {
            r->k[K_HELD_OVERFLOW]++; /* no room to hold it: run now, out of its turn (counted) */
            if ((rc = omdp_engine_for_each_msg_run(rec, h.length, scratch, fn, ctx, em, counts)) < 0)
                return rc;
        }
    }
    /* the rest (a malformed tail included: the walk below counts it) */
    if (start < nbytes)
        return omdp_engine_for_each_msg_run(records + start, nbytes - start, scratch, fn, ctx, em, counts);
    return OMDP_OK;
}

int omdp_engine_reshard_finish(omdp_engine_reshard_t *r, int64_t wait_ns, omdp_msg_run_fn fn, void *ctx,
                               const omdp_emitter_t *em)
{
    if (r->role == ROLE_FROM) {
        /* every input has ended, so no message of the bucket is still coming: the state is
         * final even without the markers of handlers that ended before the move */
        r->k[K_EXPORTS_AT_END]++;
        export_state(r);
    }
    if (!r->holding)
        return OMDP_OK;
    int64_t until = omdp_now_ns() + wait_ns;
    while (omdp_reshard_exported(r->seg) < r->move && omdp_now_ns() < until) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    int rc = try_install(r, 1, fn, ctx, em);
    return rc < 0 ? rc : OMDP_OK;
}

/* ---- without an emitter ---------------------------------------------------------------------- */

typedef struct into {
    omdp_engine_t *engine;
    uint8_t *out;
    uint32_t cap;
    uint32_t *len;
} into_t;

static int run_into(void *ctx, const omdp_opra_msg_t *msgs, uint32_t n, const omdp_emitter_t *em)
{
    into_t *t = ctx;
    (void)em;
    int32_t got = omdp_engine_process_batch(t->engine, msgs, n, t->out, t->cap, t->len);
    if (got < 0)
        return got == OMDP_ENGINE_EOUTSMALL ? OMDP_ERR_TOO_BIG : OMDP_ERR_STATE;
    return (uint32_t)got == n ? OMDP_OK : OMDP_ERR_TOO_BIG;
}

int omdp_engine_reshard_process(omdp_engine_reshard_t *r, const uint8_t *records, uint32_t nbytes, uint8_t *out,
                                uint32_t out_cap, uint32_t *out_len)
{
    into_t t = {r->engine, out, out_cap, out_len};
    omdp_opra_msg_t *scratch = aligned_alloc(64, OMDP_ENGINE_SCRATCH_RECORDS * sizeof(omdp_opra_msg_t));
    if (!scratch)
        return OMDP_ERR_NOMEM;
    omdp_msg_run_counts_t counts = {0};
    int rc = omdp_engine_reshard_batch(r, records, nbytes, scratch, run_into, &t, NULL, &counts);
    free(scratch);
    return rc;
}

int omdp_engine_reshard_finish_into(omdp_engine_reshard_t *r, int64_t wait_ns, uint8_t *out, uint32_t out_cap,
                                    uint32_t *out_len)
{
    into_t t = {r->engine, out, out_cap, out_len};
    return omdp_engine_reshard_finish(r, wait_ns, run_into, &t, NULL);
}
