/* Replay's Vega ring sink: each packet as one message, a frame header then its bytes,
 * written in place into the claimed slot (no intermediate copy). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "omdp/clock.h"
#include "omdp/vega.h"
#include "replay_sink.h"

#define RING_WAIT_SLICE_NS 10000000LL   /* a blocked put looks at stop and the peer this often */
#define RT_WAIT_SLICE_NS 100000LL       /* a real-time loop waits for room this long at a time ... */
#define RT_WAIT_REST_NS 20000LL         /* ... and sleeps this long between (never one long spin) */

/* claim_slot's wait for room in a full ring. */
static void *wait_for_room(omdp_replay_ring_sink_t *sink, omdp_vega_sender_t *tx, int *fatal, char *err, size_t errlen)
{
    void *p;
    for (;;) {
        p = omdp_vega_claim_wait(tx, sink->realtime ? RT_WAIT_SLICE_NS : RING_WAIT_SLICE_NS);
        if (p)
            return p;
        if (sink->realtime) { /* rest the pacing loop's budget counts (omdp/replay.h "real time") */
            struct timespec rest = {.tv_sec = 0, .tv_nsec = RT_WAIT_REST_NS};
            const int64_t t = omdp_now_ns();
            nanosleep(&rest, NULL);
            sink->full_wait_rest_ns += omdp_now_ns() - t;
        }
        int peer = omdp_vega_sender_peer(tx);
        if (peer == OMDP_VEGA_PEER_DEAD || peer == OMDP_VEGA_PEER_CLOSED) {
            snprintf(err, errlen, "ring %s: its receiver is %s", tx->name, peer == OMDP_VEGA_PEER_DEAD ? "dead" : "closed");
            *fatal = 1;
            return NULL;
        }
        if (sink->command && atomic_load_explicit(OMDP_REPLAY_ATOMIC(sink->command), memory_order_acquire) == OMDP_REPLAY_CMD_STOP)
            return NULL;
        if (sink->service_pid && (int64_t)getppid() != sink->service_pid) {
            snprintf(err, errlen, "the replay service is gone");
            *fatal = 1;
            return NULL;
        }
    }
}

/* A slot for the next frame: at once, or after waiting (on_full=block) until the receiver
 * frees one, the service says stop, or the receiver or the service is gone. NULL with *fatal set when the
 * run cannot go on. */
static void *claim_slot(omdp_replay_ring_sink_t *sink, omdp_vega_sender_t *tx, int *fatal, char *err, size_t errlen)
{
    void *p = omdp_vega_claim(tx);
    if (p || tx->on_full == OMDP_VEGA_ON_FULL_DROP)
        return p;
    const int64_t t0 = omdp_now_ns();
    sink->full_waits++;
    p = wait_for_room(sink, tx, fatal, err, errlen);
    sink->full_wait_ns += omdp_now_ns() - t0;
    return p;
}

int omdp_replay_ring_send(omdp_replay_ring_sink_t *sink, omdp_replay_out_t *out, int n, int64_t sent_ns,
                          char *err, size_t errlen)
{
    omdp_vega_sender_t *tx = sink->tx;
    for (int k = 0; k < n; k++) {
        omdp_replay_out_t *o = &out[k];
        o->ok = 0;
        const uint32_t size = (uint32_t)sizeof(omdp_replay_frame_t) + o->len;
        if (size > tx->max_message) {
            if (err[0] == 0)
                snprintf(err, errlen, "ring %s: a %u-byte frame exceeds max_message %u", tx->name, size, tx->max_message);
            continue;
        }
        int fatal = 0;
        uint8_t *slot = claim_slot(sink, tx, &fatal, err, errlen);
        if (fatal)
            return -1;
        if (!slot)
            continue; /* dropped by on_full=drop, or stopping */
        omdp_replay_frame_t h = {.intended_ns = o->intended_ns, .sent_ns = sent_ns, .line = o->line,
                                 .copy = o->copy, .flags = o->flags, .length = o->len};
        memcpy(slot, &h, sizeof h);
        memcpy(slot + sizeof h, o->data, o->len);
        if (omdp_vega_commit(tx, size) == OMDP_VEGA_OK)
            o->ok = 1;
    }
    return 0;
}
