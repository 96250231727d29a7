/* omdp partition: one process's fused operators and its whole loop, in C.
 *
 * The runtime builds a partition from the physical plan: operators (native vtables, or
 * Python operators behind the same vtable), the fused connections between their ports,
 * and the channels at the partition's boundary - one input per upstream partition, one
 * output per downstream partition (the Vega paper: all edges between two partitions share one
 * transport pair). `omdp_partition_run` then polls sources and inputs and pushes every
 * batch depth-first through the fused operators (XStream) until every source is done and
 * every input has ended, or a stop is requested. Python calls it once.
 *
 * Multiplexing: every message on a channel is one frame, an omdp_frame_header_t then the
 * records of one batch. `route` names the logical stream (an upstream operator's output
 * port) within that channel; the receiving partition maps it to the input ports it feeds.
 * A frame with OMDP_FRAME_EOS ends the channel: the upstream partition sends it after its
 * own sources and inputs ended and its operators flushed, so a receiver that saw EOS on
 * every input has drained everything that was ever sent to it.
 *
 * Channels are vtables too, so any transport with a C poll/put fits: the Vega ring binds
 * its functions directly, other media go through their own adapters.
 *
 * Threads: one thread runs the loop; `omdp_partition_request_stop` and the *_stats readers
 * may be called from any other thread (relaxed atomics; stop is release/acquire).
 */
#ifndef OMDP_PARTITION_H
#define OMDP_PARTITION_H

#include <stdint.h>

#include "omdp/operator.h"

/* cdef: begin */
typedef struct omdp_frame_header {
    uint32_t route; /* stream within the channel; OMDP_ROUTE_NONE on control frames */
    uint32_t flags; /* OMDP_FRAME_* */
} omdp_frame_header_t;

#define OMDP_FRAME_HEADER_SIZE 8
#define OMDP_FRAME_EOS 0x1u
#define OMDP_ROUTE_NONE 0xFFFFFFFFu

/* try_put result when the channel has no room right now (not an error). */
#define OMDP_CHAN_FULL 1

/* Input channel: `poll` never waits. It returns 1 and lends the next message (data, len,
 * slot) until `release(slot)`, 0 when there is none, or a negative OMDP_ERR_*. */
typedef struct omdp_chan_in_ops {
    int (*poll)(void *ctx, const uint8_t **data, uint32_t *len, uint64_t *slot);
    int (*release)(void *ctx, uint64_t slot);
} omdp_chan_in_ops_t;

/* Output channel: `try_put` never waits. It sends head then body as one message and
 * returns 0, OMDP_CHAN_FULL when there is no room now, or a negative OMDP_ERR_*. */
typedef struct omdp_chan_out_ops {
    int (*try_put)(void *ctx, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len);
} omdp_chan_out_ops_t;

/* How an idle loop (nothing polled) or a full output waits. */
#define OMDP_WAIT_SPIN 0       /* busy poll with a pause instruction */
#define OMDP_WAIT_SPIN_YIELD 1 /* sched_yield() between polls */
#define OMDP_WAIT_SPIN_BLOCK 2 /* spin a while, then sleep: 50 us, doubling while idle to 1 ms */

/* Stop levels for omdp_partition_request_stop. */
#define OMDP_STOP_SOURCES 1 /* sources stop; inputs drain; the partition ends normally */
#define OMDP_STOP_NOW 2     /* leave the loop at once (run returns OMDP_ERR_STOPPED) */

typedef struct omdp_partition omdp_partition_t;

typedef struct omdp_partition_stats {
    uint64_t loops;        /* loop iterations */
    uint64_t idle_loops;   /* iterations that found nothing to do */
    uint64_t frames_in;    /* data frames received over all inputs */
    uint64_t frames_out;   /* data frames sent over all outputs */
    uint64_t discarded;    /* batches emitted to a port with no consumer */
    uint64_t sources_done; /* sources finished */
    uint64_t inputs_ended; /* inputs that delivered EOS */
    uint64_t busy_ns;      /* stamp-clock time of the iterations that did work (idle polls and waits left out) */
    int64_t last_progress_ns; /* omdp clock at the last batch polled or received */
    uint32_t state;        /* OMDP_PSTATE_* */
    uint32_t reserved;
} omdp_partition_stats_t;

#define OMDP_PSTATE_SETUP 0
#define OMDP_PSTATE_RUNNING 1
#define OMDP_PSTATE_ENDED 2  /* every source done, every input ended, EOS sent */
#define OMDP_PSTATE_STOPPED 3
#define OMDP_PSTATE_FAILED 4

typedef struct omdp_op_stats {
    uint64_t batches_in;
    uint64_t bytes_in;
    uint64_t batches_out;
    uint64_t bytes_out;
} omdp_op_stats_t;

/* Told, in the loop thread, that an input's sender died and all it committed was read:
 * `note` is what the operator asked to be handed (omdp_partition_on_peer_gone); it may emit. */
typedef int (*omdp_peer_gone_fn)(void *state, uint64_t note, const omdp_emitter_t *emitter);

typedef struct omdp_chan_stats {
    uint64_t frames;     /* data frames sent / received */
    uint64_t bytes;      /* record bytes (frame headers excluded) */
    uint64_t full_waits; /* outputs: loop iterations spent waiting for room */
    uint64_t drops;      /* outputs with on_full=drop: batches dropped */
    uint64_t too_big;    /* outputs: records larger than max_message, skipped */
    uint64_t bad_frames; /* inputs: frames too short, of unknown route or not tiled by records */
    uint32_t ended;      /* EOS sent / received */
    uint32_t peer_gone;  /* the other side's partition died (omdp_partition_peer_gone) */
} omdp_chan_stats_t;
/* cdef: end */

/* Setup (before run), all return OMDP_OK or a negative error with omdp_partition_error. */
omdp_partition_t *omdp_partition_new(uint32_t n_ops, uint32_t n_inputs, uint32_t n_outputs, int wait);
int omdp_partition_init_op(omdp_partition_t *p, uint32_t op, const omdp_operator_vtable_t *vt,
                           const omdp_op_init_t *init);
int omdp_partition_attach_op(omdp_partition_t *p, uint32_t op, const omdp_operator_vtable_t *vt, void *state);
int omdp_partition_connect(omdp_partition_t *p, uint32_t op, uint32_t port, uint32_t dst_op, uint32_t dst_port);
int omdp_partition_connect_out(omdp_partition_t *p, uint32_t op, uint32_t port, uint32_t out, uint32_t route);
int omdp_partition_connect_in(omdp_partition_t *p, uint32_t in, uint32_t route, uint32_t dst_op, uint32_t dst_port);
int omdp_partition_set_input(omdp_partition_t *p, uint32_t in, const omdp_chan_in_ops_t *ops, void *ctx);
int omdp_partition_set_output(omdp_partition_t *p, uint32_t out, const omdp_chan_out_ops_t *ops, void *ctx,
                              uint32_t max_message, int drop_when_full);
int omdp_partition_set_order(omdp_partition_t *p, const uint32_t *order, uint32_t n);
/* on: a channel whose peer left without end of stream (a closed socket, a mirrored ring's
 * link) is no failure: the loop waits for omdp_partition_peer_gone (the supervisor's word
 * with [run] on_death = "continue") and goes on from there; a hard stop still leaves. */
int omdp_partition_await_word(omdp_partition_t *p, int on);
/* When input `in`'s sender dies (omdp_partition_peer_gone) and the input is drained, call
 * fn(state of operator `op`, note) before the loop goes on. */
int omdp_partition_on_peer_gone(omdp_partition_t *p, uint32_t in, uint32_t op, omdp_peer_gone_fn fn, uint64_t note);

/* The loop. OMDP_OK when it ended normally, OMDP_ERR_STOPPED on a hard stop, or the
 * negative error that failed it. Callable once. */
int omdp_partition_run(omdp_partition_t *p);

/* Any thread. */
void omdp_partition_request_stop(omdp_partition_t *p, int level);
/* The partition at the other end of input or output `index` died (the supervisor says so).
 * An input is drained of the frames its sender committed, then counts as ended (no EOS
 * comes); an output drops what is sent to it (counted in drops) and sends no EOS. */
int omdp_partition_peer_gone(omdp_partition_t *p, int output, uint32_t index);
void omdp_partition_stats(const omdp_partition_t *p, omdp_partition_stats_t *out);
int omdp_partition_op_stats(const omdp_partition_t *p, uint32_t op, omdp_op_stats_t *out);
int omdp_partition_chan_stats(const omdp_partition_t *p, int output, uint32_t index, omdp_chan_stats_t *out);
const char *omdp_partition_error(const omdp_partition_t *p);

/* Loop thread, or after run returned: an operator's own counters (its vtable's). */
uint32_t omdp_partition_op_counters(omdp_partition_t *p, uint32_t op, omdp_counter_t *out, uint32_t max);

/* Closes every operator initialised by init_op (not attached ones) and frees. */
void omdp_partition_free(omdp_partition_t *p);

#endif /* OMDP_PARTITION_H */
