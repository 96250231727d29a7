/* Is the other side of a Vega ring there? Each side records its pid and process start
 * time in its span; a peer whose pid is gone, a zombie, or a reused pid counts as dead
 * (vega_ring.h). Used by the waits (vega_wait.c), the channels (vega_shm.c) and the
 * mirrors; uses nothing but vega_ring.h. */
#define _GNU_SOURCE
#include "omdp/vega_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

uint64_t omdp_vega_pid_start_time(int64_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p || p[1] != ' ')
        return 0;
    p += 2;
    char state = *p;
    if (state == 'Z' || state == 'X' || state == 'x')
        return 0; /* exited, not reaped: as dead as it gets */
    /* field 3 is the state; starttime is field 22, 19 fields further on */
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return 0;
        p++;
    }
    return strtoull(p, NULL, 10) + 1; /* +1: a start time of 0 still reads as alive */
}

int omdp_vega_pid_alive(int64_t pid, uint64_t start_time)
{
    if (pid <= 0)
        return 1; /* no pid recorded (a mirror's copy): liveness is the mirror's to report */
    if (pid == (int64_t)getpid())
        return 1;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 0;
    uint64_t now_start = omdp_vega_pid_start_time(pid);
    if (now_start == 0)
        return 0;
    return start_time == 0 || now_start == start_time;
}

int omdp_vega_side_state(const omdp_vega_side_t *side)
{
    uint32_t state = atomic_load_explicit(&side->state, memory_order_acquire);
    if (state != OMDP_VEGA_PEER_ATTACHED)
        return (int)state;
    int64_t pid = atomic_load_explicit(&side->pid, memory_order_relaxed);
    uint64_t start = atomic_load_explicit(&side->start_time, memory_order_relaxed);
    return omdp_vega_pid_alive(pid, start) ? OMDP_VEGA_PEER_ATTACHED : OMDP_VEGA_PEER_DEAD;
}

int omdp_vega_sender_peer(omdp_vega_sender_t *tx)
{
    return omdp_vega_side_state(&tx->ctl->rx);
}

int omdp_vega_receiver_peer(omdp_vega_receiver_t *rx)
{
    return omdp_vega_side_state(&rx->ctl->tx);
}

void omdp_vega_side_claim(omdp_vega_side_t *side)
{
    int64_t pid = (int64_t)getpid();
    atomic_store_explicit(&side->start_time, omdp_vega_pid_start_time(pid), memory_order_relaxed);
    atomic_store_explicit(&side->pid, pid, memory_order_relaxed);
    atomic_store_explicit(&side->state, OMDP_VEGA_PEER_ATTACHED, memory_order_release);
}
