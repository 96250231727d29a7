/* The transports' C ends as partition channels (partition.h): the Vega ring and the tcp
 * stream plugged straight into the partition loop, no Python on the path.
 *
 * vega: input ctx is an omdp_vega_receiver_t *, output ctx an omdp_vega_sender_t *. A
 *       frame is written in place (claim, frame header + records, commit): one copy.
 * tcp:  input ctx is an omdp_tcp_receiver_t *; output ctx an omdp_chan_tcp_out_t * (the
 *       sender and a staging buffer, since a tcp message goes out as one write).
 *
 * Transport status codes map to the runtime's: FULL -> OMDP_CHAN_FULL, EMPTY/TIMEOUT ->
 * nothing there, PEER_DEAD/PEER_CLOSED -> OMDP_ERR_PEER_GONE, TOO_BIG -> OMDP_ERR_TOO_BIG,
 * anything else -> OMDP_ERR_CHANNEL.
 */
#ifndef OMDP_PARTITION_CHANNELS_H
#define OMDP_PARTITION_CHANNELS_H

#include "omdp/partition.h"
#include "omdp/tcp_channel.h"
#include "omdp/vega.h"

/* cdef: begin */
typedef struct omdp_chan_tcp_out omdp_chan_tcp_out_t;
/* cdef: end */

const omdp_chan_in_ops_t *omdp_chan_vega_in_ops(void);
const omdp_chan_out_ops_t *omdp_chan_vega_out_ops(void);
const omdp_chan_in_ops_t *omdp_chan_tcp_in_ops(void);
const omdp_chan_out_ops_t *omdp_chan_tcp_out_ops(void);

omdp_chan_tcp_out_t *omdp_chan_tcp_out_new(omdp_tcp_sender_t *tx, uint32_t max_message);
void omdp_chan_tcp_out_free(omdp_chan_tcp_out_t *out);

/* A transport status as an OMDP_ERR_* code (OMDP_OK for OK). Inline: omdp._native_mpi's
 * channel uses it too, and that module may not call into omdp._native. */
static inline int omdp_chan_status_to_err(int vega_status)
{
    switch (vega_status) {
    case OMDP_VEGA_OK: return OMDP_OK;
    case OMDP_VEGA_E_PEER_DEAD:
    case OMDP_VEGA_E_PEER_CLOSED: return OMDP_ERR_PEER_GONE;
    case OMDP_VEGA_E_TOO_BIG: return OMDP_ERR_TOO_BIG;
    default: return OMDP_ERR_CHANNEL;
    }
}

#endif /* OMDP_PARTITION_CHANNELS_H */
