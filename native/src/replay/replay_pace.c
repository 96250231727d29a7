/* Replay's pacing loop: every packet at its intended time on an absolute schedule.
 *
 * The intended time of each packet comes from the shared time map (omdp/replay.h), so sleeps
 * and late sends never accumulate into drift. Far from a deadline the loop sleeps (in steps
 * of at most 1 ms, so stop and rate changes take effect at once); within spin_ns of it, it
 * spins on the clock. When it falls behind, every packet already due goes out in one batch.
 * A real-time loop also keeps the rest budget of omdp/replay.h ("real time"), so the kernel
 * never throttles it. A few packets ahead of its position the loop asks the caches for what
 * those packets will touch (replay_lookahead.h): its cost per packet is what makes the
 * pacing error of a microburst.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "omdp/clock.h"
#include "omdp/opra_fast.h"
#include "omdp/opra_obi.h"
#include "omdp/replay.h"
#include "replay_lookahead.h"
#include "replay_sink.h"

/* C11 atomics on the plain fields of the shared blocks (omdp/replay.h). */
#define LOAD_ACQ(p) atomic_load_explicit(OMDP_REPLAY_ATOMIC(p), memory_order_acquire)
#define LOAD_RLX(p) atomic_load_explicit(OMDP_REPLAY_ATOMIC(p), memory_order_relaxed)
#define STORE_RLX(p, v) atomic_store_explicit(OMDP_REPLAY_ATOMIC(p), (v), memory_order_relaxed)
#define STORE_REL(p, v) atomic_store_explicit(OMDP_REPLAY_ATOMIC(p), (v), memory_order_release)
/* Counters have one writer (this sender); readers in other processes see whole values. */
#define BUMP(p, d) STORE_RLX((p), LOAD_RLX(p) + (d))

#define SLEEP_STEP_NS 1000000LL      /* longest sleep between looks at the control block */
#define START_POLL_NS 200000LL       /* how often a ready sender looks for the start */
#define PARENT_CHECK_NS 10000000LL   /* how often a sender checks that its service lives */
#define CPU_CLOCK_NS 10000000LL      /* how often the loop publishes its CPU time */

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

typedef struct time_map {
    int64_t anchor_ns;
    int64_t anchor_off;
    double scale;
    uint64_t seq;
} time_map_t;

static void load_map(const omdp_replay_control_t *c, time_map_t *m)
{
    for (;;) {
        uint64_t s1 = LOAD_ACQ(&c->map_seq);
        if (s1 & 1) {
            omdp_replay_cpu_relax();
            continue;
        }
        int64_t an = LOAD_RLX(&c->anchor_ns);
        int64_t ao = LOAD_RLX(&c->anchor_off);
        double sc = LOAD_RLX(&c->scale);
        atomic_thread_fence(memory_order_acquire);
        if (LOAD_RLX(&c->map_seq) == s1) {
            m->anchor_ns = an;
            m->anchor_off = ao;
            m->scale = sc;
            m->seq = s1;
            return;
        }
    }
}

static inline int64_t map_eval(const time_map_t *m, int64_t off)
{
    double x = (double)(off - m->anchor_off) * m->scale;
    return m->anchor_ns + (x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(0.5 - x));
}

static void sleep_until(int64_t t_ns)
{
    struct timespec ts = {.tv_sec = t_ns / 1000000000LL, .tv_nsec = t_ns % 1000000000LL};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The rest budget of a real-time loop (omdp/replay.h, "real time"): the sleep it owes for
 * the time it has been awake. Every sleep of the loop goes through nap_until. */
typedef struct rest_budget {
    int on;                 /* the loop runs real-time */
    int64_t awake_since;    /* end of the last sleep */
    int64_t debt_ns;        /* rest owed at awake_since; negative: banked, down to -CREDIT */
    int64_t sink_rest_seen; /* the ring sink's sleeps already counted (credit_sink_rest) */
} rest_budget_t;

static inline int64_t rest_owed(const rest_budget_t *b, int64_t now)
{
    return b->debt_ns + (now - b->awake_since) / OMDP_REPLAY_RT_REST_DIV;
}

/* Sleeps from `now` until `t`, settles the budget, and returns the time on waking. */
static int64_t nap_until(rest_budget_t *b, int64_t now, int64_t t)
{
    sleep_until(t);
    int64_t after = omdp_now_ns();
    if (b->on) {
        int64_t d = rest_owed(b, now) - (after - now);
        b->debt_ns = d < -OMDP_REPLAY_RT_CREDIT_NS ? -OMDP_REPLAY_RT_CREDIT_NS : d;
        b->awake_since = after;
    }
    return after;
}

/* The sleeps the ring sink took between its slices of waiting for room (replay_ring.c) as
 * rest: not awake time, and rest taken. Settles the budget at `now` as nap_until does. */
static void credit_sink_rest(const omdp_replay_run_args_t *a, rest_budget_t *b, int64_t now)
{
    if (!b->on || a->sink_kind != OMDP_REPLAY_SINK_RING)
        return;
    const int64_t slept = ((const omdp_replay_ring_sink_t *)a->sink)->full_wait_rest_ns;
    const int64_t d = slept - b->sink_rest_seen;
    if (d <= 0)
        return;
    b->sink_rest_seen = slept;
    const int64_t owed = rest_owed(b, now) - d / OMDP_REPLAY_RT_REST_DIV - d;
    b->debt_ns = owed < -OMDP_REPLAY_RT_CREDIT_NS ? -OMDP_REPLAY_RT_CREDIT_NS : owed;
    b->awake_since = now;
}

/* Publishes the loop's scheduling policy; 1 when it is real-time (SCHED_FIFO or SCHED_RR). */
static int publish_policy(omdp_replay_sender_status_t *st)
{
    int policy = sched_getscheduler(0);
    if (policy < 0)
        return 0;
    policy &= ~SCHED_RESET_ON_FORK;
    struct sched_param sp = {0};
    sched_getparam(0, &sp);
    int rt = policy == SCHED_FIFO || policy == SCHED_RR;
    STORE_RLX(&st->policy, policy);
    STORE_RLX(&st->rt_priority, rt ? sp.sched_priority : 0);
    return rt;
}

void omdp_replay_status_fail(omdp_replay_sender_status_t *st, const char *msg)
{
    snprintf(st->error, sizeof st->error, "%s", msg ? msg : "failed");
    STORE_REL(&st->state, OMDP_REPLAY_SENDER_FAILED);
}

static int check_args(const omdp_replay_run_args_t *a)
{
    const char *why = NULL;
    if (!a->control || !a->lines)
        why = "control block and line counters are required";
    else if (a->n_pkts && (!a->pkts || !a->sources || !a->n_sources))
        why = "packets without sources";
    else if (a->copies_mask == 0 || a->copies_mask > 3)
        why = "copies_mask must name A, B or both";
    else if (a->loop && a->lap_span <= 0)
        why = "a looping schedule needs a positive lap span";
    else if ((a->sink_kind != OMDP_REPLAY_SINK_UDP && a->sink_kind != OMDP_REPLAY_SINK_RING) || !a->sink)
        why = "unknown or missing sink";
    else if (a->log && (a->log->capacity == 0 || (a->log->capacity & (a->log->capacity - 1))))
        why = "sent log capacity must be a power of two";
    else if (a->intended && (a->intended->capacity == 0 || (a->intended->capacity & (a->intended->capacity - 1))))
        why = "intended table capacity must be a power of two";
    if (why) {
        omdp_replay_status_fail(a->status, why);
        return -1;
    }
    return 0;
}

/* True when the service that started this sender is gone (we were re-parented). */
static int orphaned(const omdp_replay_run_args_t *a, int64_t now, int64_t *next_check)
{
    if (a->service_pid == 0 || now < *next_check)
        return 0;
    *next_check = now + PARENT_CHECK_NS;
    return (int64_t)getppid() != a->service_pid;
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t thread_preemptions(void)
{
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        return (uint64_t)ru.ru_nivcsw;
#endif
    return 0;
}

/* CPU time and preemptions of the loop since it started (cpu0, pre0). */
typedef struct usage_base {
    int64_t cpu0;
    uint64_t pre0;
    int64_t next;
} usage_base_t;

static void publish_usage(const omdp_replay_run_args_t *a, usage_base_t *u)
{
    omdp_replay_sender_status_t *st = a->status;
    STORE_RLX(&st->cpu_ns, thread_cpu_ns() - u->cpu0);
    STORE_RLX(&st->preemptions, thread_preemptions() - u->pre0);
    if (a->sink_kind == OMDP_REPLAY_SINK_RING) {
        const omdp_replay_ring_sink_t *rs = a->sink;
        STORE_RLX(&st->sink_waits, rs->full_waits);
        STORE_RLX(&st->sink_wait_ns, rs->full_wait_ns);
        STORE_RLX(&st->sink_wait_rest_ns, rs->full_wait_rest_ns);
    }
}

/* At most every CPU_CLOCK_NS: these are system calls, unlike now_ns. */
static void publish_usage_now_and_then(const omdp_replay_run_args_t *a, int64_t now, usage_base_t *u)
{
    if (now < u->next)
        return;
    u->next = now + CPU_CLOCK_NS;
    publish_usage(a, u);
}

static int finish(const omdp_replay_run_args_t *a, int result)
{
    STORE_RLX(&a->status->heartbeat_ns, omdp_now_ns());
    STORE_REL(&a->status->state, OMDP_REPLAY_SENDER_DONE);
    return result;
}

static int finish_timed(const omdp_replay_run_args_t *a, int result, usage_base_t *u)
{
    publish_usage(a, u);
    return finish(a, result);
}

/* ---- the loop, part by part ---------------------------------------------------------- */

#define RUN_ON 0x100 /* not an OMDP_REPLAY_* result: the run goes on */
/* The loop's parts are always inlined: together they are the one loop they were written as,
 * its state in registers. */
#define LOOP_PART static inline __attribute__((always_inline))

/* Waits for the service's common start: RUN_ON once it is set, else the run's result. */
static int wait_for_start(const omdp_replay_run_args_t *a, int64_t *next_parent_check)
{
    omdp_replay_sender_status_t *st = a->status;
    omdp_replay_control_t *ctl = a->control;
    STORE_REL(&st->state, OMDP_REPLAY_SENDER_READY);
    for (;;) {
        if (LOAD_ACQ(&ctl->command) == OMDP_REPLAY_CMD_STOP)
            return finish(a, OMDP_REPLAY_STOPPED);
        if (LOAD_ACQ(&ctl->start_ns) != 0)
            return RUN_ON;
        int64_t now = omdp_now_ns();
        if (orphaned(a, now, next_parent_check)) {
            omdp_replay_status_fail(st, "the replay service is gone");
            return OMDP_REPLAY_ORPHANED;
        }
        STORE_RLX(&st->heartbeat_ns, now);
        sleep_until(now + START_POLL_NS);
    }
}

/* What the running loop reads and never changes. */
typedef struct run {
    const omdp_replay_run_args_t *a;
    omdp_replay_sender_status_t *st;
    omdp_replay_control_t *ctl;
    const omdp_replay_pkt_t *pk;    /* the lap's packets ... */
    uint64_t n;                     /* ... and how many */
    int64_t end_ns;
    int n_copies;                   /* copies sent of each packet */
    omdp_replay_sent_t *log_entries; /* NULL: no sent log */
    char *sink_err;                 /* OMDP_REPLAY_ERROR_LEN bytes: what the sink last said */
} run_t;

/* One packet of the batch being assembled. */
typedef struct pending {
    int64_t intended_ns;
    uint64_t block_seq;
    uint16_t line;
    uint16_t messages;
    uint16_t flags;
    int8_t out[OMDP_REPLAY_COPIES]; /* index in the out array, -1: not sent on that copy */
} pending_t;

/* The batch being assembled: datagrams for the sink, packets for the accounting ... */
typedef struct batch {
    omdp_replay_out_t out[OMDP_REPLAY_BATCH_MAX];
    pending_t pend[OMDP_REPLAY_BATCH_MAX];
} batch_t;

/* ... and its counts, apart, so they stay in registers. */
typedef struct batch_counts {
    int n_out, n_pend;
    uint64_t data_done, control_done;
} batch_counts_t;

/* Before the packet at schedule offset `off`: a stop, a new time map, the end of the run,
 * an orphaned sender. RUN_ON with the packet's intended time and the time now, else the
 * run's result. */
LOOP_PART int before_packet(const run_t *R, time_map_t *map, usage_base_t *usage, int64_t *next_parent_check,
                            int64_t off, int64_t *due_out, int64_t *now_out)
{
    if (LOAD_ACQ(&R->ctl->command) == OMDP_REPLAY_CMD_STOP)
        return finish_timed(R->a, OMDP_REPLAY_STOPPED, usage);
    if (LOAD_ACQ(&R->ctl->map_seq) != map->seq)
        load_map(R->ctl, map);
    const int64_t due = map_eval(map, off);
    STORE_RLX(&R->st->next_intended_ns, due);
    if (due >= R->end_ns)
        return finish_timed(R->a, OMDP_REPLAY_ENDED, usage);
    int64_t now = omdp_now_ns();
    if (now >= R->end_ns)
        return finish_timed(R->a, OMDP_REPLAY_ENDED, usage);
    publish_usage_now_and_then(R->a, now, usage);
    if (orphaned(R->a, now, next_parent_check)) {
        omdp_replay_status_fail(R->st, "the replay service is gone");
        return OMDP_REPLAY_ORPHANED;
    }
    *due_out = due;
    *now_out = now;
    return RUN_ON;
}

/* Until packet i is due: a forced rest when a real-time loop owes too much, a sleep while the
 * deadline is far (0: look at the control block again), else prefetch and spin to it (1,
 * *now the time it is due or later). */
LOOP_PART int wait_until_due(const run_t *R, rest_budget_t *rest, lookahead_t *la, uint64_t i, uint64_t log_head,
                             int64_t due, int64_t *now_io)
{
    omdp_replay_sender_status_t *st = R->st;
    int64_t now = *now_io;
    int64_t spin_ns = R->a->spin_ns;
    if (rest->on) {
        const int64_t owed = rest_owed(rest, now);
        if (owed > OMDP_REPLAY_RT_FORCE_NS) {
            /* in steps, like every sleep here, so a stop still takes effect at once */
            const int64_t woke = nap_until(rest, now, now + (owed < SLEEP_STEP_NS ? owed : SLEEP_STEP_NS));
            BUMP(&st->rests, 1);
            BUMP(&st->rest_ns, woke - now);
            STORE_RLX(&st->heartbeat_ns, woke);
            return 0;
        }
        if (owed > 0 && spin_ns > OMDP_REPLAY_RT_OWING_SPIN_NS)
            spin_ns = OMDP_REPLAY_RT_OWING_SPIN_NS;
    }
    if (due > now) {
        if (due - now > spin_ns) {
            int64_t until = due - spin_ns;
            until = until < now + SLEEP_STEP_NS ? until : now + SLEEP_STEP_NS;
            STORE_RLX(&st->heartbeat_ns, nap_until(rest, now, until));
            return 0;
        }
        lookahead_upto(la, i, i + LOOKAHEAD_PACKETS, log_head);
        while ((now = omdp_now_ns()) < due)
            omdp_replay_cpu_relax();
    }
    *now_io = now;
    return 1;
}

/* Packet p, intended at d, into the batch: checked against its source's bounds (a bad one
 * is counted and skipped), its intended time published, a datagram per copy not dropped
 * that the capture has (B's own bytes where the entry names them). */
LOOP_PART void add_packet(const run_t *R, const omdp_replay_pkt_t *p, int64_t d, uint64_t lap, lookahead_t *la,
                          batch_t *B, batch_counts_t *c)
{
    const omdp_replay_run_args_t *a = R->a;
    if (p->src >= a->n_sources || p->len == 0 || p->line == 0 || p->line > OMDP_REPLAY_MAX_LINE ||
        p->len > a->sources[p->src].size || p->src_off > a->sources[p->src].size - p->len ||
        (p->b_len && (p->b_src >= a->n_sources || p->b_len > a->sources[p->b_src].size ||
                      p->b_off > a->sources[p->b_src].size - p->b_len))) {
        BUMP(&R->st->source_errors, 1);
        return;
    }
    const uint8_t *data = a->sources[p->src].base + p->src_off;
    const uint8_t *copy_data[OMDP_REPLAY_COPIES] = {data, p->b_len ? a->sources[p->b_src].base + p->b_off : data};
    const uint16_t copy_len[OMDP_REPLAY_COPIES] = {p->len, p->b_len ? p->b_len : p->len};
    const uint16_t absent[OMDP_REPLAY_COPIES] = {OMDP_REPLAY_PKT_ONLY_B, OMDP_REPLAY_PKT_ONLY_A};
    pending_t *q = &B->pend[c->n_pend++];
    q->intended_ns = d;
    q->line = p->line;
    q->flags = p->flags;
    uint32_t count;
    if (data[0] == OMDP_OBI_VERSION) /* an OBI block (FAST V2 starts with SOH, 0x01) */
        omdp_obi_header_peek(data, p->len, &q->block_seq, &count);
    else
        omdp_opra_header_peek(data, p->len, &q->block_seq, &count);
    q->messages = (uint16_t)count;
    lookahead_sent(la, q->line, q->block_seq, q->messages);
    if (p->flags & OMDP_REPLAY_PKT_CONTROL)
        c->control_done++;
    else
        c->data_done++;
    /* Published before the send: a consumer on this host may look the packet up the moment
     * it arrives, before sendmmsg has even returned here. */
    if (a->intended)
        omdp_replay_intended_publish(a->intended, q->line, q->block_seq, d);
    const int n_out0 = c->n_out;
    for (uint32_t cp = 0; cp < OMDP_REPLAY_COPIES; cp++) {
        q->out[cp] = -1;
        if (!(a->copies_mask & (1u << cp)) || (p->flags & absent[cp]))
            continue;
        if (!(p->flags & OMDP_REPLAY_PKT_CONTROL) && a->drop_threshold[cp] &&
            omdp_replay_drop_hash(a->drop_seed, p->line, cp, lap, p->line_index) < a->drop_threshold[cp]) {
            BUMP(&a->lines[p->line].dropped[cp], 1);
            continue;
        }
        omdp_replay_out_t *o = &B->out[c->n_out];
        o->data = copy_data[cp];
        o->len = copy_len[cp];
        o->line = p->line;
        o->copy = (uint8_t)cp;
        o->flags = (uint8_t)p->flags;
        o->intended_ns = d;
        q->out[cp] = (int8_t)c->n_out++;
    }
    if (!(p->flags & OMDP_REPLAY_PKT_CONTROL)) {
        omdp_replay_line_stats_t *ls = &a->lines[p->line];
        BUMP(&ls->intended_messages, count);
        STORE_RLX(&ls->intended_end_seq, q->block_seq + count);
        if (a->intended)
            omdp_replay_intended_publish_end(a->intended, q->line, q->block_seq + count);
        if (c->n_out == n_out0) { /* on no copy: deliberately lost */
            BUMP(&ls->lost_packets, 1);
            BUMP(&ls->lost_messages, count);
        }
    }
}

/* The batch to the sink, stamped sent_ns: 0, or -1 when the sink failed for good (the
 * sender then fails with its reason). */
LOOP_PART int send_batch(const run_t *R, batch_t *B, int n_out, int64_t sent_ns)
{
    const omdp_replay_run_args_t *a = R->a;
    const int sink_rc = n_out == 0 ? 0
                        : a->sink_kind == OMDP_REPLAY_SINK_UDP
                            ? omdp_replay_udp_send(a->sink, B->out, n_out, R->sink_err, OMDP_REPLAY_ERROR_LEN)
                            : omdp_replay_ring_send(a->sink, B->out, n_out, sent_ns, R->sink_err, OMDP_REPLAY_ERROR_LEN);
    if (sink_rc != 0) {
        omdp_replay_status_fail(R->st, R->sink_err);
        return -1;
    }
    if (R->sink_err[0] && R->st->error[0] == 0)
        snprintf(R->st->error, sizeof R->st->error, "%s", R->sink_err);
    return 0;
}

/* Packet q's copies as the sink left them: each line's counters; *copy_sent_ns the time of
 * each copy sent (0: not sent). Returns how many were sent. */
LOOP_PART int count_copies(const run_t *R, const batch_t *B, const pending_t *q, int64_t sent_ns,
                           int64_t copy_sent_ns[OMDP_REPLAY_COPIES])
{
    omdp_replay_line_stats_t *ls = &R->a->lines[q->line];
    int sent_copies = 0;
    for (uint32_t c = 0; c < OMDP_REPLAY_COPIES; c++) {
        if (q->out[c] < 0)
            continue;
        const omdp_replay_out_t *o = &B->out[q->out[c]];
        if (!o->ok) {
            BUMP(&ls->send_errors[c], 1);
            continue;
        }
        copy_sent_ns[c] = sent_ns;
        sent_copies++;
        BUMP(&ls->packets[c], 1);
        BUMP(&ls->messages[c], q->messages);
        BUMP(&ls->bytes[c], o->len);
    }
    if (q->flags & OMDP_REPLAY_PKT_CONTROL)
        BUMP(&ls->control_packets, 1);
    return sent_copies;
}

/* The sent packet q into the sent log, or an overrun when the service has not drained it. */
LOOP_PART void log_sent(const run_t *R, const pending_t *q, const int64_t copy_sent_ns[OMDP_REPLAY_COPIES],
                        uint64_t *log_head, uint64_t log_tail)
{
    const omdp_replay_log_t *log = R->a->log;
    if (*log_head - log_tail < log->capacity) {
        /* field by field: a struct built aside and copied in would be read back wider than
         * it was written (a store-forwarding stall) */
        omdp_replay_sent_t *e = &R->log_entries[(*log_head)++ & (log->capacity - 1)];
        e->intended_ns = q->intended_ns;
        e->sent_ns[0] = copy_sent_ns[0];
        e->sent_ns[1] = copy_sent_ns[1];
        e->block_seq = q->block_seq;
        e->line = q->line;
        e->messages = q->messages;
        e->reserved = 0;
    } else {
        BUMP(&R->st->log_overruns, 1);
    }
}

/* After the send: line counters, pacing error, the sent log and the sender's status. */
LOOP_PART void account_batch(const run_t *R, const batch_t *B, const batch_counts_t *c, int64_t sent_ns,
                             uint64_t *log_head)
{
    const omdp_replay_run_args_t *a = R->a;
    omdp_replay_sender_status_t *st = R->st;
    int any_sent = 0;
    int64_t last_intended = 0;
    uint64_t n_paced = 0, err_sum = 0;
    int64_t err_max = INT64_MIN;
    uint64_t log_tail = a->log ? LOAD_ACQ(&a->log->tail) : 0;
    for (int k = 0; k < c->n_pend; k++) {
        const pending_t *q = &B->pend[k];
        int64_t copy_sent_ns[OMDP_REPLAY_COPIES] = {0, 0};
        if (!count_copies(R, B, q, sent_ns, copy_sent_ns))
            continue;
        any_sent = 1;
        last_intended = q->intended_ns;
        const int64_t err = sent_ns - q->intended_ns;
        BUMP(&st->pacing_hist[omdp_replay_hist_index(err)], 1);
        n_paced++;
        err_sum += (uint64_t)(err > 0 ? err : 0);
        err_max = err > err_max ? err : err_max;
        if (a->log)
            log_sent(R, q, copy_sent_ns, log_head, log_tail);
    }
    if (n_paced) {
        BUMP(&st->pacing_count, n_paced);
        BUMP(&st->pacing_sum_ns, err_sum);
        if (err_max > LOAD_RLX(&st->pacing_max_ns))
            STORE_RLX(&st->pacing_max_ns, err_max);
    }
    if (a->log)
        STORE_REL(&a->log->head, *log_head);
    BUMP(&st->batches, 1);
    if (c->n_pend > 1)
        BUMP(&st->behind_batches, 1);
    BUMP(&st->packets_done, c->data_done);
    BUMP(&st->control_done, c->control_done);
    if (any_sent) {
        STORE_RLX(&st->last_intended_ns, last_intended);
        STORE_RLX(&st->last_sent_ns, sent_ns);
    }
}

/* One lap of the schedule: RUN_ON at its end, else the run's result. */
LOOP_PART int run_lap(const run_t *R, uint64_t lap, time_map_t *map, rest_budget_t *rest, usage_base_t *usage,
                      lookahead_t *la, uint64_t *log_head, int64_t *next_parent_check)
{
    omdp_replay_sender_status_t *st = R->st;
    batch_t B;
    STORE_RLX(&st->lap, lap);
    const int64_t base = (int64_t)lap * R->a->lap_span;
    uint64_t i = 0;
    while (i < R->n) {
        int64_t due, now;
        int rc = before_packet(R, map, usage, next_parent_check, base + R->pk[i].off, &due, &now);
        if (rc != RUN_ON)
            return rc;
        if (!wait_until_due(R, rest, la, i, *log_head, due, &now))
            continue; /* it slept: look at the control block again */

        /* Everything due by `now` goes in this batch (one packet when on time). */
        batch_counts_t c = {0, 0, 0, 0};
        uint64_t j = i;
        while (j < R->n && c.n_pend < OMDP_REPLAY_BATCH_MAX && c.n_out + R->n_copies <= OMDP_REPLAY_BATCH_MAX) {
            const omdp_replay_pkt_t *p = &R->pk[j];
            const int64_t d = j == i ? due : map_eval(map, base + p->off);
            if (d > now || d >= R->end_ns)
                break;
            lookahead_upto(la, i, j + LOOKAHEAD_PACKETS, *log_head);
            j++;
            add_packet(R, p, d, lap, la, &B, &c);
        }

        const int64_t sent_ns = omdp_now_ns(); /* the hand-off to the kernel */
        if (send_batch(R, &B, c.n_out, sent_ns) != 0)
            return OMDP_REPLAY_ESINK;
        credit_sink_rest(R->a, rest, omdp_now_ns());
        account_batch(R, &B, &c, sent_ns, log_head);
        STORE_RLX(&st->position, j);
        STORE_RLX(&st->heartbeat_ns, sent_ns);
        i = j;
    }
    return RUN_ON;
}

int omdp_replay_run(const omdp_replay_run_args_t *a)
{
    if (!a || !a->status)
        return OMDP_REPLAY_EINVAL;
    omdp_replay_sender_status_t *st = a->status;
    if (check_args(a) != 0)
        return OMDP_REPLAY_EINVAL;
    omdp_replay_control_t *ctl = a->control;
    char sink_err[OMDP_REPLAY_ERROR_LEN] = {0};
#ifdef __linux__
    /* The default 50 us timer slack would push wake-ups past the spin window. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif

    int64_t next_parent_check = 0;
    int rc = wait_for_start(a, &next_parent_check);
    if (rc != RUN_ON)
        return rc;
    STORE_REL(&st->state, OMDP_REPLAY_SENDER_RUNNING);
    rest_budget_t rest = {.on = publish_policy(st), .awake_since = omdp_now_ns(), .debt_ns = -OMDP_REPLAY_RT_CREDIT_NS};
    if (a->sink_kind == OMDP_REPLAY_SINK_RING)
        ((omdp_replay_ring_sink_t *)a->sink)->realtime = (uint32_t)rest.on;
    usage_base_t usage = {.cpu0 = thread_cpu_ns(), .pre0 = thread_preemptions(), .next = 0};
    const run_t R = {
        .a = a,
        .st = st,
        .ctl = ctl,
        .pk = a->pkts,
        .n = a->n_pkts,
        .end_ns = LOAD_RLX(&ctl->end_ns),
        .n_copies = __builtin_popcount(a->copies_mask),
        .log_entries = a->log ? (omdp_replay_sent_t *)((uint8_t *)a->log + sizeof(omdp_replay_log_t)) : NULL,
        .sink_err = sink_err,
    };
    time_map_t map;
    load_map(ctl, &map);
    uint64_t log_head = a->log ? LOAD_RLX(&a->log->head) : 0;
    lookahead_t la;
    lookahead_init(&la, a, R.log_entries, (uint32_t)R.n_copies);

    for (uint64_t lap = 0;; lap++) {
        rc = run_lap(&R, lap, &map, &rest, &usage, &la, &log_head, &next_parent_check);
        if (rc != RUN_ON)
            return rc;
        if (!a->loop)
            return finish_timed(a, OMDP_REPLAY_DONE, &usage);
        lookahead_new_lap(&la);
    }
}
