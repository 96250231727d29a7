/* Private to the replay sources: the AF_XDP sender of the UDP sink (replay_xdp.c, built only
 * where libxdp's and libbpf's headers exist; the build then defines OMDP_HAVE_XDP). Without
 * it a sink never has one, and these do nothing. */
#ifndef OMDP_REPLAY_XDP_H
#define OMDP_REPLAY_XDP_H

#include "replay_sink.h"

#ifdef OMDP_HAVE_XDP
/* Same contract as omdp_replay_udp_send. */
int omdp_replay_xdp_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err, size_t errlen);
/* Socket closed and UMEM freed, if the sink has them. */
void omdp_replay_xdp_close(omdp_replay_udp_sink_t *sink);
#else
static inline int omdp_replay_xdp_send(omdp_replay_udp_sink_t *sink, omdp_replay_out_t *out, int n, char *err,
                                       size_t errlen)
{
    return -1;
}
static inline void omdp_replay_xdp_close(omdp_replay_udp_sink_t *sink) {}
#endif

#endif /* OMDP_REPLAY_XDP_H */
