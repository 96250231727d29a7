/* vega-tcp: the Vega ring mirrored at the receiver over one TCP connection.
 *
 * Both sides run vega.h's sender/receiver unchanged on their own copy of the region
 * (vega_mirror.h); every omdp_vega_publish() - a slot the sender sealed, a credit the
 * receiver released - becomes a record on the stream, and a thread on the other side
 * applies the records to its copy in order, as an RDMA NIC would. So this is how vega-ib
 * behaves, without InfiniBand: usable between any hosts, and in tests.
 *
 * Connection: the receiver listens (host:port, port 0 picks one); its accept thread takes
 * one sender, checks its hello {magic, version, queue_size, max_message, mutex, wait,
 * on_full} against the ring, and answers {verdict, the ring's layout} (the nonce and
 * stride the sender's copy must share). Then records in both directions:
 *
 *   {u32 op, u32 len, u64 offset} + len bytes     op 1: write, op 2: goodbye (len 0)
 *
 * all little-endian. A write outside the window the peer may write (vega_mirror.h), not a
 * multiple of 8 bytes, or of an unknown op breaks the stream: counted, the peer marked
 * dead, nothing applied. A goodbye means the peer closed in order (the receiver then reads
 * what is left and gets PEER_CLOSED); a stream that ends without one means it died.
 *
 * Closing: say goodbye, shut the write side, let the applier drain until the peer's end
 * (at most OMDP_VTCP_LINGER_NS), close. A side that reads a goodbye shuts its own write
 * side, so both ends finish without a reset discarding data in flight.
 *
 * Memory: the caller owns each side's region (zeroed, 128-byte aligned,
 * omdp_vega_region_size bytes) and keeps it past close, so views lent by get never dangle.
 * Status codes are Vega's (vega.h).
 */
#ifndef OMDP_VEGA_TCP_H
#define OMDP_VEGA_TCP_H

#include <stdint.h>

#include "omdp/partition.h"
#include "omdp/vega.h"
#include "omdp/vega_mirror.h"

#define OMDP_VTCP_MAGIC 0x4354564fu /* "OVTC" */
#define OMDP_VTCP_VERSION 1u
/* cdef: begin */
#define OMDP_VTCP_OP_WRITE 1u
#define OMDP_VTCP_OP_GOODBYE 2u
/* cdef: end */
#define OMDP_VTCP_LINGER_NS 1000000000LL

/* cdef: begin */
typedef struct omdp_vtcp omdp_vtcp_t;

typedef struct omdp_vtcp_record_header {
    uint32_t op;
    uint32_t len;
    uint64_t offset;
} omdp_vtcp_record_header_t;

typedef struct omdp_vtcp_stats {
    uint64_t writes_out, bytes_out;  /* records sent to the peer's copy */
    uint64_t writes_in, bytes_in;    /* records applied to this copy */
    uint64_t dropped_out;            /* writes not sent: the stream was shut or broken */
    uint64_t stream_errors;          /* bad records from the peer (the stream then stops) */
    uint32_t peer_state;             /* OMDP_VEGA_PEER_* */
    int32_t connected;               /* 1 once the handshake succeeded */
} omdp_vtcp_stats_t;
/* cdef: end */

/* Receiver: make the ring in `base` and listen on host:port. */
int omdp_vtcp_receiver_listen(const char *host, uint16_t port, void *base, uint64_t size, uint32_t queue_size,
                              uint32_t max_message, uint32_t mutex, uint32_t wait, uint32_t on_full,
                              omdp_vtcp_t **out);
/* The port the receiver listens on. */
int omdp_vtcp_port(const omdp_vtcp_t *link);
/* Wait until the sender's handshake is done: OK, or TIMEOUT. */
int omdp_vtcp_accept(omdp_vtcp_t *link, int64_t timeout_ns);
omdp_vega_receiver_t *omdp_vtcp_receiver(omdp_vtcp_t *link);

/* Sender: connect to host:port (retrying until timeout_ns, <0 forever), agree on the
 * ring and lay out its copy in `base`. E_NOT_FOUND: nobody listened in time; E_LAYOUT:
 * the receiver's ring has other knobs (or the listener is not a vega-tcp receiver and hung
 * up on the hello); E_PEER_DEAD: the handshake broke off otherwise. */
int omdp_vtcp_sender_connect(const char *host, uint16_t port, void *base, uint64_t size, uint32_t queue_size,
                             uint32_t max_message, uint32_t mutex, uint32_t wait, uint32_t on_full,
                             int64_t timeout_ns, omdp_vtcp_t **out);
omdp_vega_sender_t *omdp_vtcp_sender(omdp_vtcp_t *link);

void omdp_vtcp_stats(const omdp_vtcp_t *link, omdp_vtcp_stats_t *out);
/* The last stream error in words ("" when none). */
const char *omdp_vtcp_error(const omdp_vtcp_t *link);
/* Goodbye, drain, close; frees the link and its Vega side (not the region). */
int omdp_vtcp_close(omdp_vtcp_t *link);

/* As partition channels (partition.h): ctx is the omdp_vtcp_t *. The ring's own ops, plus
 * the peer's state: an empty input or a full output whose peer is gone is an error. */
const omdp_chan_in_ops_t *omdp_chan_vtcp_in_ops(void);
const omdp_chan_out_ops_t *omdp_chan_vtcp_out_ops(void);

#endif /* OMDP_VEGA_TCP_H */
