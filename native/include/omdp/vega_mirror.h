/* A Vega ring mirrored between two hosts: the pieces every mirrored medium shares.
 *
 * Each side holds its own copy of the region (vega.h). The receiver's copy is the real
 * ring: the sender's slot writes land there and the receiver polls it. The sender's copy
 * is where it builds slots before shipping them, and where the receiver's credit lands.
 * The Vega state machine runs unchanged on both copies; the medium only carries
 * omdp_vega_publish()'s "these bytes at this offset of the peer's copy" (vega-tcp: a
 * record on a TCP stream; vega-ib: an RDMA WRITE).
 *
 * What a side may write into its peer's copy is a window: the sender the slots, the
 * receiver the credit word. Anything else is a broken peer, refused and counted.
 *
 * Writes are applied so that the Vega markers keep their meaning: the first 8 bytes (a
 * slot's begin word, or a scrubbed end word) and the last 8 bytes (the end word, or the
 * credit) are stored with release order around the payload, so a receiver that sees the
 * end word sees everything before it (Slash: the end marker is polled last).
 *
 * A mirror has no pids to watch: the medium reports the peer's state into the peer's side
 * span of the local copy (omdp_vega_mirror_set_peer), which the ring's waits already read.
 */
#ifndef OMDP_VEGA_MIRROR_H
#define OMDP_VEGA_MIRROR_H

#include <stdint.h>

#include "omdp/vega.h"

/* Roles of a side of a mirrored ring. */
/* cdef: begin */
#define OMDP_VEGA_MIRROR_SENDER 0
#define OMDP_VEGA_MIRROR_RECEIVER 1

/* Mirror apply errors (also Vega status codes' range is not reused: these are distinct). */
#define OMDP_VEGA_MIRROR_OK 0
#define OMDP_VEGA_MIRROR_E_WINDOW (-1) /* outside what the peer may write */
#define OMDP_VEGA_MIRROR_E_ALIGN (-2)  /* offset or length not a multiple of 8, or empty */
/* cdef: end */

/* The window [lo, hi) of `base` the peer of a side with `role` may write. */
void omdp_vega_mirror_window(const void *base, int role, uint64_t *lo, uint64_t *hi);

/* Apply one write of the peer into the local copy (base, size): bounds-checked against the
 * window, markers stored with release order. OMDP_VEGA_MIRROR_OK or an error (nothing
 * written). Wakes a spin-block waiter of the local side. */
int omdp_vega_mirror_apply(void *base, uint64_t size, int role, uint64_t offset, const void *src, uint32_t len);

/* Lay out the sender's copy (zeroed memory of `size` bytes) from the receiver's layout and
 * publish it: OMDP_VEGA_OK, or E_LAYOUT when the layout does not describe a ring of this
 * size and version. */
int omdp_vega_mirror_copy_layout(void *base, uint64_t size, const omdp_vega_layout_t *layout);

/* This process takes its own side of the local copy (pid and start time, ATTACHED). */
void omdp_vega_mirror_claim(void *base, int role);

/* Record the peer's state (OMDP_VEGA_PEER_*) in the local copy and wake local waiters.
 * A peer once CLOSED or DEAD stays so (a goodbye followed by the end of the stream is
 * CLOSED). */
void omdp_vega_mirror_set_peer(void *base, int role, uint32_t state);

/* The peer's state as recorded (OMDP_VEGA_PEER_*). */
uint32_t omdp_vega_mirror_peer(const void *base, int role);

#endif /* OMDP_VEGA_MIRROR_H */
