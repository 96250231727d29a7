/* The send loop of both multicast paths (a UDP socket, or the packet socket): sendmmsg until
 * every datagram of a batch went or was refused, a full buffer retried a bounded number of
 * times, a dead socket or link ending the sink. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "replay_sink.h"

#define NOBUF_RETRIES 1000

static int fatal_errno(int e, int link_errors_fatal)
{
    return e == EBADF || e == ENOTSOCK || e == EFAULT || (link_errors_fatal && (e == ENXIO || e == ENETDOWN));
}

int omdp_replay_sendmmsg_all(int fd, struct mmsghdr *msgs, int m, const int *map, omdp_replay_out_t *out,
                             int link_errors_fatal, const char *what, char *err, size_t errlen)
{
    int done = 0, retries = 0;
    while (done < m) {
        int r = sendmmsg(fd, msgs + done, (unsigned)(m - done), 0);
        if (r > 0) {
            for (int k = done; k < done + r; k++)
                out[map[k]].ok = 1;
            done += r;
            retries = 0;
            continue;
        }
        int e = r < 0 ? errno : EIO;
        if (e == EINTR)
            continue;
        if (fatal_errno(e, link_errors_fatal)) {
            snprintf(err, errlen, "%s sendmmsg: %s", what, strerror(e));
            return -1;
        }
        if ((e == ENOBUFS || e == EAGAIN) && ++retries < NOBUF_RETRIES) {
            omdp_replay_cpu_relax();
            continue;
        }
        /* This datagram is refused (counted by the caller as not ok); go on with the next. */
        if (err && errlen && err[0] == 0)
            snprintf(err, errlen, "%s refused a datagram of line %u: %s", what, out[map[done]].line, strerror(e));
        done++;
        retries = 0;
    }
    return 0;
}
