/* vega-ib: the Vega ring mirrored at the receiver with RDMA WRITEs (the Vega paper, Slash).
 *
 * Built only where infiniband/verbs.h exists (native/build_native.py compiles *_ib.c then;
 * docs/architecture.md principle 8). The control path is Python's (omdp/transport/vega_ib.py, with
 * pyverbs): it opens the device, checks the port, makes the protection domain, registers
 * each side's copy of the region (remote write: the receiver's copy for the slots, the
 * sender's for the credit word), and exchanges QP number, PSN, LID/GID, rkey and address
 * over a small TCP bootstrap. This file is the part the hot path runs through: it makes
 * the RC queue pair and its completion queue on pyverbs' context and PD, moves the QP to
 * RTS with the peer's numbers, and is the ring's mirror function:
 *
 *  - every omdp_vega_publish() is ONE RDMA WRITE of those bytes to the same offset of the
 *    peer's copy (a slot: begin word, payload and end word together; a credit: 8 bytes),
 *    inline when it fits the QP's max_inline_data;
 *  - one write in `signal_every` asks for a completion (selective signaling); the
 *    completion queue is polled when the send queue needs room and at every publish, and a
 *    completion with an error status breaks the link (the peer is marked dead, the status
 *    named in omdp_vib_error);
 *  - the receiver polls its own memory: the end word, the last bytes a write lands (the
 *    ring's peek), and releases credit by writing its credit word into the sender's copy.
 *
 * The bootstrap socket stays open as the liveness link, as vega-tcp's stream: one byte
 * OMDP_VIB_GOODBYE means the peer closed in order; the end of the stream without it means
 * the peer died. A thread watches it and records the peer's state in the local copy
 * (vega_mirror.h), so the ring's waits end with PEER_CLOSED / PEER_DEAD.
 *
 * No Python runs per message: puts, gets and releases are the ring's C calls, the partition
 * loop binds omdp_chan_vib_*_ops. Status codes are Vega's (vega.h).
 */
#ifndef OMDP_VEGA_IB_H
#define OMDP_VEGA_IB_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/partition.h"
#include "omdp/vega.h"
#include "omdp/vega_mirror.h"

/* cdef: begin */
#define OMDP_VIB_GOODBYE 0x5a
/* cdef: end */
#define OMDP_VIB_LINGER_NS 1000000000LL
/* cdef: begin */
#define OMDP_VIB_ERR_LEN 256

typedef struct omdp_vib omdp_vib_t;

/* The peer's half of the connection, as the bootstrap carried it. */
typedef struct omdp_vib_remote {
    uint32_t qp_num;
    uint32_t psn;
    uint16_t lid;      /* InfiniBand link layer */
    uint8_t gid[16];   /* RoCE (and IB across subnets) */
    uint8_t use_gid;   /* address the peer by GID (global route) */
    uint8_t sgid_index; /* our GID table index for the global route */
    uint32_t rkey;
    uint64_t addr;     /* address of the peer's copy of the region */
    uint32_t mtu;      /* enum ibv_mtu to use on the path (the smaller port's) */
    uint32_t reserved;
} omdp_vib_remote_t;

typedef struct omdp_vib_stats {
    uint64_t writes, bytes, inline_writes, signaled, completions, sq_full_waits, dropped;
    uint32_t peer_state; /* OMDP_VEGA_PEER_* */
    uint32_t broken;     /* 1 after a completion or post error */
} omdp_vib_stats_t;
/* cdef: end */

/* Make the QP (RC) and CQ on pyverbs' ibv_context / ibv_pd (their addresses), and bind one
 * side of the ring in `base` (already registered by pyverbs with `lkey`):
 *  receiver: lays out a fresh ring (knobs) in base;
 *  sender:   lays out its copy from the receiver's `layout` (sizeof omdp_vega_layout_t).
 * The QP goes to INIT on `port_num`. E_SYS with err filled (device and call) on failure. */
int omdp_vib_open(int role, uintptr_t context, uintptr_t pd, uint8_t port_num, void *base, uint64_t size,
                  uint32_t lkey, uint32_t queue_size, uint32_t max_message, uint32_t mutex, uint32_t wait,
                  uint32_t on_full, uint32_t signal_every, const void *layout, omdp_vib_t **out,
                  char *err, size_t err_len);
uint32_t omdp_vib_qp_num(const omdp_vib_t *v);
uint32_t omdp_vib_psn(const omdp_vib_t *v);
uint32_t omdp_vib_max_inline(const omdp_vib_t *v);

/* RTR then RTS with the peer's numbers. OK, or E_SYS with err filled. */
int omdp_vib_connect(omdp_vib_t *v, const omdp_vib_remote_t *remote, char *err, size_t err_len);
/* The peer is ready: watch the liveness socket `fd` (the link owns it from here) and let
 * writes go. */
int omdp_vib_watch(omdp_vib_t *v, int fd);

omdp_vega_sender_t *omdp_vib_sender(omdp_vib_t *v);
omdp_vega_receiver_t *omdp_vib_receiver(omdp_vib_t *v);
void omdp_vib_stats(const omdp_vib_t *v, omdp_vib_stats_t *out);
const char *omdp_vib_error(const omdp_vib_t *v);

/* Goodbye on the liveness link, wait (at most OMDP_VIB_LINGER_NS) for the peer's end and
 * for signaled writes in flight, destroy QP and CQ, free. The region and the pyverbs
 * objects (MR, PD, context) are the caller's to close afterwards. */
int omdp_vib_close(omdp_vib_t *v);

/* As partition channels (partition.h): ctx is the omdp_vib_t *. */
const omdp_chan_in_ops_t *omdp_chan_vib_in_ops(void);
const omdp_chan_out_ops_t *omdp_chan_vib_out_ops(void);

#endif /* OMDP_VEGA_IB_H */
