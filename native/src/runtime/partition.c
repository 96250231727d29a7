/* The partition loop: fused operators, depth-first emit, multiplexed channels (partition.h). */
#include "omdp/partition.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "omdp/clock.h"
#include "omdp/relaxed_counter.h"
#include "omdp/stamp_clock.h"

/* Counters written by the loop thread only and read by others: relaxed atomics without a
 * read-modify-write instruction (single writer). */
#define READ(field) atomic_load_explicit(&(field), memory_order_relaxed)

enum { TO_OP = 0, TO_CHANNEL = 1 };

typedef struct target {
    uint32_t kind;  /* TO_OP or TO_CHANNEL */
    uint32_t index; /* operator or output channel */
    uint32_t port;  /* input port of the operator, or route within the channel */
} target_t;

typedef struct target_list {
    target_t *t;
    uint32_t n;
} target_list_t;

struct omdp_emitter {
    omdp_partition_t *p;
    uint32_t op;
};

typedef struct op_slot {
    const omdp_operator_vtable_t *vt;
    void *state;
    int owned;       /* initialised here: closed by omdp_partition_free */
    int source_done; /* loop thread only */
    omdp_emitter_t em;
    target_list_t *out; /* one list per output port */
    _Atomic uint64_t batches_in, bytes_in, batches_out, bytes_out;
} op_slot_t;

typedef struct gone_hook {
    uint32_t op;
    omdp_peer_gone_fn fn;
    uint64_t note;
} gone_hook_t;

typedef struct in_chan {
    omdp_chan_in_ops_t ops;
    void *ctx;
    int set;
    int ended; /* loop thread only */
    int left;  /* loop thread only: its sender left without EOS; awaiting the supervisor's word */
    target_list_t *routes;
    uint32_t n_routes;
    _Atomic uint64_t frames, bytes, bad_frames;
    _Atomic uint32_t ended_seen;
    _Atomic uint32_t peer_gone; /* its sender died: drain what it committed, then ended */
    gone_hook_t *hooks;         /* called once it is drained after its sender died */
    uint32_t n_hooks;
} in_chan_t;

typedef struct out_chan {
    omdp_chan_out_ops_t ops;
    void *ctx;
    int set;
    int drop_when_full;
    uint32_t max_message;
    _Atomic uint64_t frames, bytes, full_waits, drops, too_big, bad_batches;
    _Atomic uint32_t ended_sent;
    _Atomic uint32_t peer_gone; /* its receiver died: frames are dropped (counted), no EOS */
} out_chan_t;

struct omdp_partition {
    uint32_t n_ops, n_in, n_out;
    int wait;
    int await_word; /* a peer leaving without EOS waits for omdp_partition_peer_gone, no failure */
    op_slot_t *ops;
    in_chan_t *ins;
    out_chan_t *outs;
    uint32_t *order;
    uint32_t n_order;
    _Atomic int stop;
    _Atomic uint32_t state;
    _Atomic uint64_t loops, idle_loops, frames_in, frames_out, discarded, sources_done, inputs_ended, busy_ns;
    _Atomic int64_t last_progress_ns;
    char err[256];
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* OMDP_WAIT_SPIN_BLOCK: spin this many polls, then sleep; an idle loop's sleeps double from
 * the first to the longest (a back-off, as Agrona's BackoffIdleStrategy parks), a full
 * output's stay at the first. A partition of this kind (replayer, signal and ingest
 * collectors) idles most of the time on the CPU the real-time replayer needs: the signal
 * collector's loop took 1.28 s of CPU in a 20 s run at 10x with a fixed 50 us sleep, 0.57 s
 * with the back-off (docs/benchmarks.md). A frame arriving after a long idle stretch waits
 * up to the longest sleep. */
#define SPIN_BLOCK_SPINS 1024u
#define SPIN_BLOCK_SLEEP_NS 50000L
#define SPIN_BLOCK_SLEEP_MAX_NS 1000000L
#define SPIN_BLOCK_DOUBLINGS 5u /* 50, 100, 200, 400, 800 us, then the longest */

static void idle_wait(const omdp_partition_t *p, uint32_t *spins, int backoff)
{
    switch (p->wait) {
    case OMDP_WAIT_SPIN_YIELD:
        sched_yield();
        break;
    case OMDP_WAIT_SPIN_BLOCK: {
        if (*spins < SPIN_BLOCK_SPINS) {
            ++*spins;
            cpu_relax();
            break;
        }
        long ns = SPIN_BLOCK_SLEEP_NS;
        if (backoff) {
            uint32_t k = *spins - SPIN_BLOCK_SPINS;
            ns = k >= SPIN_BLOCK_DOUBLINGS ? SPIN_BLOCK_SLEEP_MAX_NS : SPIN_BLOCK_SLEEP_NS << k;
            if (k < SPIN_BLOCK_DOUBLINGS)
                ++*spins;
        }
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        break;
    }
    default:
        cpu_relax();
        break;
    }
}

static int fail(omdp_partition_t *p, int code, const char *fmt, const char *what, uint32_t a)
{
    char ctx[160];
    snprintf(ctx, sizeof ctx, fmt, what, a);
    snprintf(p->err, sizeof p->err, "%s: %s", ctx, omdp_strerror(code));
    return code;
}

static int setup_error(omdp_partition_t *p, const char *msg, uint32_t a, uint32_t b)
{
    snprintf(p->err, sizeof p->err, msg, a, b);
    return OMDP_ERR_STATE;
}

static int add_target(target_list_t *l, target_t t)
{
    target_t *n = realloc(l->t, (size_t)(l->n + 1) * sizeof *n);
    if (!n)
        return OMDP_ERR_NOMEM;
    n[l->n++] = t;
    l->t = n;
    return OMDP_OK;
}

omdp_partition_t *omdp_partition_new(uint32_t n_ops, uint32_t n_inputs, uint32_t n_outputs, int wait)
{
    if (n_ops == 0 || n_ops > 1u << 16 || n_inputs > 1u << 16 || n_outputs > 1u << 16)
        return NULL;
    omdp_partition_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n_ops = n_ops;
    p->n_in = n_inputs;
    p->n_out = n_outputs;
    p->wait = wait;
    p->ops = calloc(n_ops, sizeof *p->ops);
    p->ins = calloc(n_inputs ? n_inputs : 1, sizeof *p->ins);
    p->outs = calloc(n_outputs ? n_outputs : 1, sizeof *p->outs);
    if (!p->ops || !p->ins || !p->outs) {
        omdp_partition_free(p);
        return NULL;
    }
    for (uint32_t i = 0; i < n_ops; i++) {
        p->ops[i].em.p = p;
        p->ops[i].em.op = i;
    }
    return p;
}

static int place_op(omdp_partition_t *p, uint32_t op, const omdp_operator_vtable_t *vt)
{
    if (atomic_load(&p->state) != OMDP_PSTATE_SETUP)
        return setup_error(p, "operator %u: partition already started", op, 0);
    if (op >= p->n_ops)
        return setup_error(p, "operator %u out of range (%u operators)", op, p->n_ops);
    if (p->ops[op].vt)
        return setup_error(p, "operator %u set twice", op, 0);
    if (!vt || vt->abi != OMDP_OPERATOR_ABI)
        return setup_error(p, "operator %u: vtable ABI %u, runtime speaks %u", op, vt ? vt->abi : 0);
    if (vt->n_inputs > 0 && !vt->process_batch)
        return setup_error(p, "operator %u has %u inputs but no process_batch", op, vt->n_inputs);
    if (vt->n_inputs == 0 && !vt->poll)
        return setup_error(p, "operator %u has no inputs and no poll (not a source)", op, 0);
    p->ops[op].out = calloc(vt->n_outputs ? vt->n_outputs : 1, sizeof(target_list_t));
    if (!p->ops[op].out)
        return OMDP_ERR_NOMEM;
    return OMDP_OK;
}

int omdp_partition_init_op(omdp_partition_t *p, uint32_t op, const omdp_operator_vtable_t *vt,
                           const omdp_op_init_t *init)
{
    int r = place_op(p, op, vt);
    if (r < 0)
        return r;
    void *state = NULL;
    if (!vt->init)
        return setup_error(p, "operator %u: vtable has no init", op, 0);
    r = vt->init(&state, init);
    if (r < 0) {
        snprintf(p->err, sizeof p->err, "%s: %s", init && init->name ? init->name : "operator",
                 init && init->err && init->err[0] ? init->err : omdp_strerror(r));
        free(p->ops[op].out);
        p->ops[op].out = NULL;
        return r;
    }
    p->ops[op].vt = vt;
    p->ops[op].state = state;
    p->ops[op].owned = 1;
    return OMDP_OK;
}

int omdp_partition_attach_op(omdp_partition_t *p, uint32_t op, const omdp_operator_vtable_t *vt, void *state)
{
    int r = place_op(p, op, vt);
    if (r < 0)
        return r;
    p->ops[op].vt = vt;
    p->ops[op].state = state;
    return OMDP_OK;
}

static int check_out_port(omdp_partition_t *p, uint32_t op, uint32_t port)
{
    if (atomic_load(&p->state) != OMDP_PSTATE_SETUP)
        return setup_error(p, "connect after start (operator %u)", op, 0);
    if (op >= p->n_ops || !p->ops[op].vt)
        return setup_error(p, "operator %u is not set", op, 0);
    if (port >= p->ops[op].vt->n_outputs)
        return setup_error(p, "operator %u has no output port %u", op, port);
    return OMDP_OK;
}

static int check_in_port(omdp_partition_t *p, uint32_t op, uint32_t port)
{
    if (op >= p->n_ops || !p->ops[op].vt)
        return setup_error(p, "operator %u is not set", op, 0);
    if (port >= p->ops[op].vt->n_inputs)
        return setup_error(p, "operator %u has no input port %u", op, port);
    return OMDP_OK;
}

int omdp_partition_connect(omdp_partition_t *p, uint32_t op, uint32_t port, uint32_t dst_op, uint32_t dst_port)
{
    int r = check_out_port(p, op, port);
    if (r == OMDP_OK)
        r = check_in_port(p, dst_op, dst_port);
    if (r == OMDP_OK && dst_op == op)
        r = setup_error(p, "operator %u connected to itself", op, 0);
    if (r < 0)
        return r;
    return add_target(&p->ops[op].out[port], (target_t){TO_OP, dst_op, dst_port});
}

int omdp_partition_connect_out(omdp_partition_t *p, uint32_t op, uint32_t port, uint32_t out, uint32_t route)
{
    int r = check_out_port(p, op, port);
    if (r < 0)
        return r;
    if (out >= p->n_out)
        return setup_error(p, "output channel %u out of range (%u outputs)", out, p->n_out);
    if (route == OMDP_ROUTE_NONE)
        return setup_error(p, "route %u is reserved", route, 0);
    return add_target(&p->ops[op].out[port], (target_t){TO_CHANNEL, out, route});
}

int omdp_partition_connect_in(omdp_partition_t *p, uint32_t in, uint32_t route, uint32_t dst_op, uint32_t dst_port)
{
    if (atomic_load(&p->state) != OMDP_PSTATE_SETUP)
        return setup_error(p, "connect after start (input %u)", in, 0);
    if (in >= p->n_in)
        return setup_error(p, "input channel %u out of range (%u inputs)", in, p->n_in);
    if (route >= 1u << 16)
        return setup_error(p, "route %u out of range on input %u", route, in);
    int r = check_in_port(p, dst_op, dst_port);
    if (r < 0)
        return r;
    in_chan_t *c = &p->ins[in];
    if (route >= c->n_routes) {
        target_list_t *n = realloc(c->routes, (size_t)(route + 1) * sizeof *n);
        if (!n)
            return OMDP_ERR_NOMEM;
        memset(n + c->n_routes, 0, (size_t)(route + 1 - c->n_routes) * sizeof *n);
        c->routes = n;
        c->n_routes = route + 1;
    }
    return add_target(&c->routes[route], (target_t){TO_OP, dst_op, dst_port});
}

int omdp_partition_await_word(omdp_partition_t *p, int on)
{
    if (atomic_load(&p->state) != OMDP_PSTATE_SETUP)
        return setup_error(p, "await_word after start", 0, 0);
    p->await_word = on != 0;
    return OMDP_OK;
}

int omdp_partition_on_peer_gone(omdp_partition_t *p, uint32_t in, uint32_t op, omdp_peer_gone_fn fn, uint64_t note)
{
    if (atomic_load(&p->state) != OMDP_PSTATE_SETUP)
        return setup_error(p, "peer-gone hook after start (input %u)", in, 0);
    if (in >= p->n_in)
        return setup_error(p, "input channel %u out of range (%u inputs)", in, p->n_in);
    if (op >= p->n_ops || !fn)
        return setup_error(p, "peer-gone hook: operator %u out of range (%u operators) or no function", op, p->n_ops);
    in_chan_t *c = &p->ins[in];
    gone_hook_t *n = realloc(c->hooks, (size_t)(c->n_hooks + 1) * sizeof *n);
    if (!n)
        return OMDP_ERR_NOMEM;
    n[c->n_hooks++] = (gone_hook_t){op, fn, note};
    c->hooks = n;
    return OMDP_OK;
}

/* Input i's sender died and everything it committed was read: the input ends, and the
 * operators that asked are told (they may emit). */
static int end_gone_input(omdp_partition_t *p, uint32_t i)
{
    in_chan_t *c = &p->ins[i];
    c->ended = 1;
    omdp_counter_add(&p->inputs_ended, 1);
    for (uint32_t k = 0; k < c->n_hooks; k++) {
        op_slot_t *o = &p->ops[c->hooks[k].op];
        if (!o->vt)
            continue;
        int r = c->hooks[k].fn(o->state, c->hooks[k].note, &o->em);
        if (r < 0)
            return fail(p, r, "peer-gone hook of %s operator %u", o->vt->kind, c->hooks[k].op);
    }
    return OMDP_OK;
}

int omdp_partition_set_input(omdp_partition_t *p, uint32_t in, const omdp_chan_in_ops_t *ops, void *ctx)
{
    if (in >= p->n_in)
        return setup_error(p, "input channel %u out of range (%u inputs)", in, p->n_in);
    if (!ops || !ops->poll || !ops->release)
        return setup_error(p, "input channel %u: incomplete ops", in, 0);
    p->ins[in].ops = *ops;
    p->ins[in].ctx = ctx;
    p->ins[in].set = 1;
    return OMDP_OK;
}

int omdp_partition_set_output(omdp_partition_t *p, uint32_t out, const omdp_chan_out_ops_t *ops, void *ctx,
                              uint32_t max_message, int drop_when_full)
{
    if (out >= p->n_out)
        return setup_error(p, "output channel %u out of range (%u outputs)", out, p->n_out);
    if (!ops || !ops->try_put)
        return setup_error(p, "output channel %u: incomplete ops", out, 0);
    if (max_message < OMDP_FRAME_HEADER_SIZE + OMDP_RECORD_HEADER_SIZE)
        return setup_error(p, "output channel %u: max_message %u cannot hold one record", out, max_message);
    p->outs[out].ops = *ops;
    p->outs[out].ctx = ctx;
    p->outs[out].max_message = max_message;
    p->outs[out].drop_when_full = drop_when_full;
    p->outs[out].set = 1;
    return OMDP_OK;
}

int omdp_partition_set_order(omdp_partition_t *p, const uint32_t *order, uint32_t n)
{
    if (n != p->n_ops)
        return setup_error(p, "order has %u operators, partition %u", n, p->n_ops);
    uint32_t *o = malloc((size_t)n * sizeof *o);
    if (!o)
        return OMDP_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if (order[i] >= p->n_ops) {
            free(o);
            return setup_error(p, "order names operator %u of %u", order[i], p->n_ops);
        }
        o[i] = order[i];
    }
    free(p->order);
    p->order = o;
    p->n_order = n;
    return OMDP_OK;
}

/* ---- the hot path ---------------------------------------------------------------- */

static int deliver(omdp_partition_t *p, uint32_t op, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    op_slot_t *o = &p->ops[op];
    omdp_counter_add(&o->batches_in, 1);
    omdp_counter_add(&o->bytes_in, nbytes);
    return o->vt->process_batch(o->state, port, records, nbytes, &o->em);
}

#define FRAME_DROPPED 1 /* put_frame: the frame was dropped and counted, not sent */

static int put_frame(omdp_partition_t *p, out_chan_t *o, uint32_t route, uint32_t flags, const uint8_t *body,
                     uint32_t len, int may_drop)
{
    omdp_frame_header_t h = {route, flags};
    uint32_t spins = 0;
    for (;;) {
        if (atomic_load_explicit(&o->peer_gone, memory_order_acquire)) {
            if (!(flags & OMDP_FRAME_EOS))
                omdp_counter_add(&o->drops, 1);
            return FRAME_DROPPED;
        }
        int r = o->ops.try_put(o->ctx, (const uint8_t *)&h, OMDP_FRAME_HEADER_SIZE, body, len);
        if (r == OMDP_OK)
            return OMDP_OK;
        if (r < 0 && !(r == OMDP_ERR_PEER_GONE && p->await_word))
            return r;
        if (may_drop && o->drop_when_full) {
            omdp_counter_add(&o->drops, 1);
            return FRAME_DROPPED;
        }
        if (atomic_load_explicit(&p->stop, memory_order_acquire) >= OMDP_STOP_NOW)
            return OMDP_ERR_STOPPED;
        omdp_counter_add(&o->full_waits, 1);
        idle_wait(p, &spins, 0);
    }
}

static int send_chunk(omdp_partition_t *p, out_chan_t *o, uint32_t route, const uint8_t *body, uint32_t len)
{
    int r = put_frame(p, o, route, 0, body, len, 1);
    if (r == OMDP_OK) {
        omdp_counter_add(&o->frames, 1);
        omdp_counter_add(&o->bytes, len);
        omdp_counter_add(&p->frames_out, 1);
    }
    return r == FRAME_DROPPED ? OMDP_OK : r;
}

/* One batch into one channel: as one frame when it fits, else split at record boundaries.
 * A record that alone exceeds max_message is counted and skipped; a batch that stops
 * tiling is sent up to the last good record and the rest counted. */
static int send_batch(omdp_partition_t *p, uint32_t out, uint32_t route, const uint8_t *records, uint32_t nbytes)
{
    out_chan_t *o = &p->outs[out];
    uint32_t cap = o->max_message - OMDP_FRAME_HEADER_SIZE;
    if (nbytes <= cap)
        return send_chunk(p, o, route, records, nbytes);
    uint32_t chunk = 0, cur = 0, prev = 0;
    const uint8_t *rec;
    int r;
    for (;;) {
        prev = cur;
        r = omdp_batch_next(records, nbytes, &cur, &rec);
        if (r <= 0)
            break;
        if (cur - prev > cap) {
            if (prev > chunk && (r = send_chunk(p, o, route, records + chunk, prev - chunk)) < 0)
                return r;
            omdp_counter_add(&o->too_big, 1);
            chunk = cur;
            continue;
        }
        if (cur - chunk > cap) {
            if ((r = send_chunk(p, o, route, records + chunk, prev - chunk)) < 0)
                return r;
            chunk = prev;
        }
    }
    if (r < 0)
        omdp_counter_add(&o->bad_batches, 1);
    if (prev > chunk)
        return send_chunk(p, o, route, records + chunk, prev - chunk);
    return OMDP_OK;
}

int omdp_emit(const omdp_emitter_t *em, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    if (!em)
        return OMDP_ERR_STATE;
    omdp_partition_t *p = em->p;
    op_slot_t *src = &p->ops[em->op];
    if (port >= src->vt->n_outputs)
        return OMDP_ERR_PORT;
    if (nbytes == 0)
        return OMDP_OK;
    omdp_counter_add(&src->batches_out, 1);
    omdp_counter_add(&src->bytes_out, nbytes);
    const target_list_t *l = &src->out[port];
    if (l->n == 0) {
        omdp_counter_add(&p->discarded, 1);
        return OMDP_OK;
    }
    for (uint32_t i = 0; i < l->n; i++) {
        const target_t *t = &l->t[i];
        int r = t->kind == TO_OP ? deliver(p, t->index, t->port, records, nbytes)
                                 : send_batch(p, t->index, t->port, records, nbytes);
        if (r < 0)
            return r;
    }
    return OMDP_OK;
}

/* Receive at most one frame from input `i`: 1 when one was handled, 0 when none was
 * there, or a negative error. */
static int pump_input(omdp_partition_t *p, uint32_t i)
{
    in_chan_t *c = &p->ins[i];
    const uint8_t *data = NULL;
    uint32_t len = 0;
    uint64_t slot = 0;
    int r = c->ops.poll(c->ctx, &data, &len, &slot);
    if (r <= 0)
        return r;
    int rc = OMDP_OK;
    omdp_frame_header_t h;
    if (len < OMDP_FRAME_HEADER_SIZE || !data) {
        omdp_counter_add(&c->bad_frames, 1);
    } else {
        memcpy(&h, data, sizeof h);
        const uint8_t *body = data + OMDP_FRAME_HEADER_SIZE;
        uint32_t blen = len - OMDP_FRAME_HEADER_SIZE;
        if (h.flags & OMDP_FRAME_EOS) {
            c->ended = 1;
            atomic_store_explicit(&c->ended_seen, 1, memory_order_relaxed);
            omdp_counter_add(&p->inputs_ended, 1);
        } else if (h.route >= c->n_routes || c->routes[h.route].n == 0 || omdp_batch_count(body, blen) < 0) {
            omdp_counter_add(&c->bad_frames, 1);
        } else {
            omdp_counter_add(&c->frames, 1);
            omdp_counter_add(&c->bytes, blen);
            omdp_counter_add(&p->frames_in, 1);
            const target_list_t *l = &c->routes[h.route];
            for (uint32_t k = 0; k < l->n && rc == OMDP_OK; k++)
                rc = deliver(p, l->t[k].index, l->t[k].port, body, blen);
        }
    }
    int rr = c->ops.release(c->ctx, slot);
    if (rc < 0)
        return rc;
    return rr < 0 ? rr : 1;
}

static int finish(omdp_partition_t *p)
{
    for (uint32_t k = 0; k < p->n_ops; k++) {
        uint32_t i = p->order ? p->order[k] : k;
        op_slot_t *o = &p->ops[i];
        if (o->vt->end_of_stream) {
            int r = o->vt->end_of_stream(o->state, &o->em);
            if (r < 0)
                return fail(p, r, "end_of_stream of %s operator %u", o->vt->kind, i);
        }
    }
    for (uint32_t i = 0; i < p->n_out; i++) {
        int r = put_frame(p, &p->outs[i], OMDP_ROUTE_NONE, OMDP_FRAME_EOS, NULL, 0, 0);
        if (r < 0)
            return fail(p, r, "%s %u", "sending end of stream on output", i);
        if (r == OMDP_OK)
            atomic_store_explicit(&p->outs[i].ended_sent, 1, memory_order_relaxed);
    }
    return OMDP_OK;
}

static int check_ready(omdp_partition_t *p)
{
    for (uint32_t i = 0; i < p->n_ops; i++)
        if (!p->ops[i].vt)
            return setup_error(p, "operator %u is not set", i, 0);
    for (uint32_t i = 0; i < p->n_in; i++)
        if (!p->ins[i].set)
            return setup_error(p, "input channel %u is not set", i, 0);
    for (uint32_t i = 0; i < p->n_out; i++)
        if (!p->outs[i].set)
            return setup_error(p, "output channel %u is not set", i, 0);
    return OMDP_OK;
}

int omdp_partition_run(omdp_partition_t *p)
{
    uint32_t expected = OMDP_PSTATE_SETUP;
    if (!atomic_compare_exchange_strong(&p->state, &expected, OMDP_PSTATE_RUNNING))
        return setup_error(p, "run called twice (state %u)", expected, 0);
    int rc = check_ready(p);
    if (rc < 0) {
        atomic_store(&p->state, OMDP_PSTATE_FAILED);
        return rc;
    }
    uint32_t n_sources = 0, n_done = 0, spins = 0;
    for (uint32_t i = 0; i < p->n_ops; i++)
        n_sources += p->ops[i].vt->n_inputs == 0;
    atomic_store_explicit(&p->last_progress_ns, omdp_now_ns(), memory_order_relaxed);
    /* Busy time: the stamp-clock time of the iterations that did work, each from the end of
     * the iteration (or idle wait) before it. A spinning loop's thread CPU time is its wall
     * time whatever its load; this is the part spent working. */
    int64_t t_iter = omdp_stamp_ns();
    for (;;) {
        int stop = atomic_load_explicit(&p->stop, memory_order_acquire);
        if (stop >= OMDP_STOP_NOW) {
            rc = OMDP_ERR_STOPPED;
            break;
        }
        int progressed = 0;
        for (uint32_t i = 0; i < p->n_ops && n_done < n_sources; i++) {
            op_slot_t *o = &p->ops[i];
            if (o->vt->n_inputs != 0 || o->source_done)
                continue;
            int r = stop >= OMDP_STOP_SOURCES ? OMDP_POLL_DONE : o->vt->poll(o->state, &o->em);
            if (r < 0) {
                rc = fail(p, r, "source %s (operator %u)", o->vt->kind, i);
                goto out;
            }
            if (r == OMDP_POLL_DONE) {
                o->source_done = 1;
                n_done++;
                omdp_counter_add(&p->sources_done, 1);
            } else if (r == OMDP_POLL_PRODUCED) {
                progressed = 1;
            }
        }
        uint32_t n_ended = 0;
        for (uint32_t i = 0; i < p->n_in; i++) {
            if (p->ins[i].ended) {
                n_ended++;
                continue;
            }
            /* read before the poll: a sender declared dead had committed all it ever will */
            int gone = atomic_load_explicit(&p->ins[i].peer_gone, memory_order_acquire);
            int r = p->ins[i].left ? 0 : pump_input(p, i);
            if (gone && (r == 0 || r == OMDP_ERR_PEER_GONE)) { /* drained: its stream ends here, without EOS */
                if ((rc = end_gone_input(p, i)) < 0)
                    goto out;
                progressed = 1;
                continue;
            }
            if (r == OMDP_ERR_PEER_GONE && p->await_word) { /* drained and left: the word will come */
                p->ins[i].left = 1;
                continue;
            }
            if (r < 0) {
                rc = fail(p, r, "%s %u", "input channel", i);
                goto out;
            }
            progressed |= r;
        }
        omdp_counter_add(&p->loops, 1);
        if (progressed) {
            spins = 0;
            int64_t now = omdp_stamp_ns();
            omdp_counter_add(&p->busy_ns, (uint64_t)(now > t_iter ? now - t_iter : 0));
            t_iter = now;
            atomic_store_explicit(&p->last_progress_ns, now, memory_order_relaxed);
            continue;
        }
        if (n_done == n_sources && n_ended == p->n_in) {
            rc = finish(p);
            break;
        }
        omdp_counter_add(&p->idle_loops, 1);
        idle_wait(p, &spins, 1);
        t_iter = omdp_stamp_ns();
    }
out:
    atomic_store(&p->state, rc == OMDP_OK ? OMDP_PSTATE_ENDED
                            : rc == OMDP_ERR_STOPPED ? OMDP_PSTATE_STOPPED : OMDP_PSTATE_FAILED);
    return rc;
}

/* ---- any thread ---------------------------------------------------------------------- */

void omdp_partition_request_stop(omdp_partition_t *p, int level)
{
    int cur = atomic_load_explicit(&p->stop, memory_order_relaxed);
    while (level > cur &&
           !atomic_compare_exchange_weak_explicit(&p->stop, &cur, level, memory_order_release, memory_order_relaxed))
        ;
}

int omdp_partition_peer_gone(omdp_partition_t *p, int output, uint32_t index)
{
    if (output ? index >= p->n_out : index >= p->n_in)
        return OMDP_ERR_STATE;
    atomic_store_explicit(output ? &p->outs[index].peer_gone : &p->ins[index].peer_gone, 1, memory_order_release);
    return OMDP_OK;
}

void omdp_partition_stats(const omdp_partition_t *p, omdp_partition_stats_t *out)
{
    omdp_partition_t *q = (omdp_partition_t *)p;
    out->loops = READ(q->loops);
    out->idle_loops = READ(q->idle_loops);
    out->frames_in = READ(q->frames_in);
    out->frames_out = READ(q->frames_out);
    out->discarded = READ(q->discarded);
    out->sources_done = READ(q->sources_done);
    out->inputs_ended = READ(q->inputs_ended);
    out->busy_ns = READ(q->busy_ns);
    out->last_progress_ns = READ(q->last_progress_ns);
    out->state = atomic_load(&q->state);
}

int omdp_partition_op_stats(const omdp_partition_t *p, uint32_t op, omdp_op_stats_t *out)
{
    if (op >= p->n_ops)
        return OMDP_ERR_STATE;
    op_slot_t *o = &((omdp_partition_t *)p)->ops[op];
    out->batches_in = READ(o->batches_in);
    out->bytes_in = READ(o->bytes_in);
    out->batches_out = READ(o->batches_out);
    out->bytes_out = READ(o->bytes_out);
    return OMDP_OK;
}

int omdp_partition_chan_stats(const omdp_partition_t *p, int output, uint32_t index, omdp_chan_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (output) {
        if (index >= p->n_out)
            return OMDP_ERR_STATE;
        out_chan_t *c = &((omdp_partition_t *)p)->outs[index];
        out->frames = READ(c->frames);
        out->bytes = READ(c->bytes);
        out->full_waits = READ(c->full_waits);
        out->drops = READ(c->drops);
        out->too_big = READ(c->too_big);
        out->bad_frames = READ(c->bad_batches);
        out->ended = READ(c->ended_sent);
        out->peer_gone = READ(c->peer_gone);
    } else {
        if (index >= p->n_in)
            return OMDP_ERR_STATE;
        in_chan_t *c = &((omdp_partition_t *)p)->ins[index];
        out->frames = READ(c->frames);
        out->bytes = READ(c->bytes);
        out->bad_frames = READ(c->bad_frames);
        out->ended = READ(c->ended_seen);
        out->peer_gone = READ(c->peer_gone);
    }
    return OMDP_OK;
}

const char *omdp_partition_error(const omdp_partition_t *p)
{
    return p->err;
}

uint32_t omdp_partition_op_counters(omdp_partition_t *p, uint32_t op, omdp_counter_t *out, uint32_t max)
{
    if (op >= p->n_ops || !p->ops[op].vt || !p->ops[op].vt->counters)
        return 0;
    return p->ops[op].vt->counters(p->ops[op].state, out, max);
}

void omdp_partition_free(omdp_partition_t *p)
{
    if (!p)
        return;
    if (p->ops) {
        for (uint32_t i = 0; i < p->n_ops; i++) {
            op_slot_t *o = &p->ops[i];
            if (o->owned && o->vt->close)
                o->vt->close(o->state);
            if (o->out) {
                for (uint32_t k = 0; k < (o->vt ? o->vt->n_outputs : 0); k++)
                    free(o->out[k].t);
                free(o->out);
            }
        }
    }
    if (p->ins) {
        for (uint32_t i = 0; i < p->n_in; i++) {
            for (uint32_t k = 0; k < p->ins[i].n_routes; k++)
                free(p->ins[i].routes[k].t);
            free(p->ins[i].routes);
            free(p->ins[i].hooks);
        }
    }
    free(p->ops);
    free(p->ins);
    free(p->outs);
    free(p->order);
    free(p);
}
