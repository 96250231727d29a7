/* Vega: a point-to-point ring of fixed slots, one protocol over a piece of memory.
 *
 * The ring, its layout and every step that never waits are vega_ring.h (included here);
 * this header adds the calls that may wait (put, put_batch, get: inline, on top of the
 * waits of vega_wait.c) and the life cycle of a channel over shared memory or memory the
 * caller owns (vega_shm.c). Other components include this header.
 *
 * Dependency order of the transport's files (native/src/transport/), each using only files
 * on its left, never one on its right (so no two use each other):
 *   vega_ring.h <- vega_ring.c, vega_peer.c <- vega_wait.c <- vega.h <- vega_shm.c,
 *   vega_mirror.c, tcp_channel.c, transport_bench.c <- partition_channels.c <- vega_tcp.c,
 *   vega_ib.c
 *
 * From a C loop (Python hands over the ends as VegaSender/VegaReceiver.c_handle):
 *
 *   omdp_vega_msg_t m;                                  // receive side, never blocks
 *   while (omdp_vega_try_get(rx, &m) == OMDP_VEGA_OK) {
 *       process(m.data, m.size);                        // zero copy, valid until release
 *       omdp_vega_release(rx, m.slot_id);               // the credit
 *   }
 *   uint8_t *p = omdp_vega_claim(tx);                   // send side, in place ...
 *   if (p) { n = build(p, tx->max_message); omdp_vega_commit(tx, n); }
 *   rc = omdp_vega_put(tx, buf, n, timeout_ns);         // ... or by copy; <0 timeout: wait
 *
 * A mirrored ring (vega-tcp, vega-ib): omdp_vega_region_create() on the sender's memory,
 * copy those bytes to the receiver's memory, omdp_vega_sender_open_local() and
 * omdp_vega_receiver_open_local() on the two copies, and give each side a mirror function
 * that carries (offset, bytes) to the other copy in order, landing the last 8 bytes last.
 */
#ifndef OMDP_VEGA_H
#define OMDP_VEGA_H

#include <stdint.h>

#include "omdp/vega_ring.h"

/* Python holds the two ends by pointer only (their fields are vega_ring.h's, for C). */
/* cdef: begin */
typedef struct omdp_vega_sender omdp_vega_sender_t;
typedef struct omdp_vega_receiver omdp_vega_receiver_t;
/* cdef: end */

/* ---- channels (native/src/transport/vega_shm.c) ---- */

/* Rings in memory the caller owns (zeroed, 128-byte aligned, omdp_vega_region_size bytes):
 * create lays out and publishes a region; open_local binds one side to a region (or to a
 * mirror's copy of it: copy the created region to the peer's memory first, then give each
 * side a mirror function). close frees only the side's own state. */
int omdp_vega_region_create(void *base, uint64_t size, uint32_t queue_size, uint32_t max_message, uint32_t mutex,
                            uint32_t wait, uint32_t on_full);
int omdp_vega_sender_open_local(void *base, uint64_t size, omdp_vega_sender_t **tx);
int omdp_vega_receiver_open_local(void *base, uint64_t size, omdp_vega_receiver_t **rx);
int omdp_vega_local_pair(void *base, uint64_t size, uint32_t queue_size, uint32_t max_message,
                         uint32_t mutex, uint32_t wait, uint32_t on_full,
                         omdp_vega_sender_t **tx, omdp_vega_receiver_t **rx);
int omdp_vega_receiver_create_shm(const char *name, uint32_t queue_size, uint32_t max_message,
                                  uint32_t mutex, uint32_t wait, uint32_t on_full,
                                  omdp_vega_receiver_t **rx);
int omdp_vega_sender_attach_shm(const char *name, omdp_vega_sender_t **tx);
int omdp_vega_sender_close(omdp_vega_sender_t *tx);
int omdp_vega_receiver_close(omdp_vega_receiver_t *rx);
void omdp_vega_stats(const void *base, omdp_vega_stats_t *out);
int omdp_vega_stats_shm(const char *name, omdp_vega_stats_t *out);
int omdp_vega_unlink_shm(const char *name);

/* ---- the calls that may wait ---- */

/* Copy one message into the ring (paper: put). timeout_ns: <0 wait as long as it takes,
 * 0 never wait, >0 at most that long. A full ring waits (on_full=block) or drops and counts
 * (on_full=drop): OK, FULL (dropped / no room), TIMEOUT, or an error. */
static inline int omdp_vega_put(omdp_vega_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns)
{
    int rc = omdp_vega_enter(tx);
    if (rc)
        return rc;
    rc = omdp_vega_try_put_entered(tx, data, size);
    if (rc == OMDP_VEGA_FULL)
        rc = omdp_vega_put_full(tx, data, size, timeout_ns);
    omdp_vega_leave(tx);
    return rc;
}

/* Put `n` messages laid back to back in `buf` (sizes[i] bytes each). Returns how many went
 * into the ring (the rest were dropped with on_full=drop, or the wait timed out), or an
 * error before anything was sent. Credits are checked once per run of free slots. */
static inline int64_t omdp_vega_put_batch(omdp_vega_sender_t *tx, const uint8_t *buf, const uint32_t *sizes,
                                          uint32_t n, int64_t timeout_ns)
{
    for (uint32_t i = 0; i < n; i++)
        if (sizes[i] > tx->max_message)
            return OMDP_VEGA_E_TOO_BIG;
    int rc = omdp_vega_enter(tx);
    if (rc)
        return rc;
    if (tx->claimed) {
        omdp_vega_leave(tx);
        return OMDP_VEGA_E_CLAIM;
    }
    uint32_t done = 0, counted = 0;
    uint64_t bytes = 0;
    while (done < n) {
        uint32_t room = omdp_vega_room(tx);
        if (room == 0) {
            /* settle the counters, then let the slow path wait for (or drop) the next one */
            omdp_vega_after_put(tx, done - counted, bytes);
            bytes = 0;
            rc = omdp_vega_put_full(tx, buf, sizes[done], timeout_ns);
            if (rc != OMDP_VEGA_OK) {
                if (rc == OMDP_VEGA_FULL && tx->on_full == OMDP_VEGA_ON_FULL_DROP)
                    omdp_counter_add(&tx->ctl->tx_count.drops, n - done - 1);
                omdp_vega_leave(tx);
                return (done > 0 || rc > 0) ? (int64_t)done : rc;
            }
            buf += sizes[done];
            counted = ++done;
            continue;
        }
        uint32_t run = n - done < room ? n - done : room;
        for (uint32_t k = 0; k < run; k++) {
            uint32_t size = sizes[done];
            uint8_t *slot = omdp_vega_tx_slot(tx);
            memcpy(slot + OMDP_VEGA_SLOT_HEADER, buf, size);
            omdp_vega_seal(tx, slot, size);
            buf += size;
            bytes += size;
            done++;
        }
    }
    omdp_vega_after_put(tx, done - counted, bytes);
    omdp_vega_leave(tx);
    return done;
}
/* The next message (paper: get); the view stays valid until release. timeout_ns as put. */
static inline int omdp_vega_get(omdp_vega_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns)
{
    int rc = omdp_vega_try_get(rx, msg);
    if (rc == OMDP_VEGA_EMPTY && timeout_ns != 0)
        rc = omdp_vega_get_wait(rx, msg, timeout_ns);
    return rc;
}
#endif /* OMDP_VEGA_H */
