/* Private to the feed handler: the AF_XDP receive (feed_handler_xdp.c, OMDP_FH_RECEIVE_XDP).
 * That file is built only where libxdp's and libbpf's headers exist (the build then defines
 * OMDP_HAVE_XDP); without them the same calls refuse with the reason, and the socket and
 * packet-ring inputs are untouched. */
#ifndef OMDP_FEED_HANDLER_XDP_H
#define OMDP_FEED_HANDLER_XDP_H

#include <stdio.h>

#include "feed_handler_internal.h"

#ifdef OMDP_HAVE_XDP
/* The UMEM, the XDP socket on xdp_ifname's queue xdp_queue and the redirecting XDP program
 * (attached through a BPF link, so it goes with the process however that ends). */
int omdp_fh_xdp_open(feed_handler_t *fh, char *err, size_t errlen);
/* Up to `batch` frames from the RX ring to the packet path, then a flush. */
int omdp_fh_xdp_poll(feed_handler_t *fh, const omdp_emitter_t *em, int *produced);
/* Program detached, socket closed, UMEM freed; safe on a handler that never opened it. */
void omdp_fh_xdp_close(feed_handler_t *fh);
#else
static inline int omdp_fh_xdp_open(feed_handler_t *fh, char *err, size_t errlen)
{
    snprintf(err, errlen, "receive = \"xdp\": this build of omdp has no AF_XDP (libxdp and libbpf headers were "
             "absent when it was built; docs/xdp.md)");
    return -1;
}
static inline int omdp_fh_xdp_poll(feed_handler_t *fh, const omdp_emitter_t *em, int *produced)
{
    return OMDP_ERR_STATE;
}
static inline void omdp_fh_xdp_close(feed_handler_t *fh) {}
#endif

#endif /* OMDP_FEED_HANDLER_XDP_H */
