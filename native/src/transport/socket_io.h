/* Small blocking-socket helpers of the network media (internal to native/src/transport): IPv4
 * resolution, TCP_NODELAY, whole writes, reads bounded by a deadline. */
#ifndef OMDP_SOCKET_IO_H
#define OMDP_SOCKET_IO_H

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "omdp/clock.h"

/* host (name, dotted quad, "" or "*" for any) and port -> sockaddr; 0 or -1. */
static inline int omdp_sock_resolve(const char *host, uint16_t port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    if (!host || !*host || strcmp(host, "*") == 0) {
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
        return 0;
    }
    if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
        return 0;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -1;
    sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return 0;
}

static inline void omdp_sock_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Write all of iov (blocking socket, no SIGPIPE); 0 or -errno. iov is consumed. */
static inline int omdp_sock_write_all(int fd, struct iovec *iov, int cnt)
{
    while (cnt > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        while (cnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

/* Read exactly n bytes by `deadline` (omdp clock): 0, 1 on timeout, 2 at end of stream,
 * -errno on an error. */
static inline int omdp_sock_read_exact(int fd, void *buf, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        int64_t left = deadline - omdp_now_ns();
        if (left <= 0)
            return 1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = left > 100000000LL ? 100 : (int)((left + 999999) / 1000000);
        int pr = poll(&p, 1, ms);
        if (pr < 0 && errno != EINTR)
            return -errno;
        if (pr <= 0)
            continue;
        ssize_t r = recv(fd, (uint8_t *)buf + got, n - got, MSG_DONTWAIT);
        if (r == 0)
            return 2;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return -errno;
        }
        got += (size_t)r;
    }
    return 0;
}

#endif /* OMDP_SOCKET_IO_H */
