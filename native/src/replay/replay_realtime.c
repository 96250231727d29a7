/* --realtime for a replay sender: lock its memory, make its loop's thread SCHED_FIFO.
 *
 * Both are privileges a process may lack; each refusal is recorded in the sender's status
 * (its errno) and the sender runs on as an ordinary task: a replay never fails for want of
 * real time. The rest budget that keeps a real-time loop clear of the kernel's throttling is
 * in replay_pace.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "omdp/replay.h"

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

/* SCHED_FIFO at `priority`; on EPERM with an RLIMIT_RTPRIO below it, at that limit. Returns
 * the priority obtained, or -errno. */
static int set_fifo(int priority)
{
    /* RESET_ON_FORK: anything the sender might start runs as an ordinary task */
    struct sched_param sp = {.sched_priority = priority};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
        return priority;
    int err = errno;
    struct rlimit rl;
    if (err == EPERM && getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur > 0 && rl.rlim_cur < (rlim_t)priority) {
        sp.sched_priority = (int)rl.rlim_cur;
        if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0)
            return sp.sched_priority;
        err = errno;
    }
    return -err;
}

int omdp_replay_realtime_enter(omdp_replay_sender_status_t *st, int priority)
{
    int lo = sched_get_priority_min(SCHED_FIFO), hi = sched_get_priority_max(SCHED_FIFO);
    if (priority < lo)
        priority = lo;
    if (priority > hi)
        priority = hi;
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->rt_requested), 1u, memory_order_relaxed);

    /* Every page mapped now (schedule, captures, shared memory, sink) is faulted in and
     * stays in; MCL_FUTURE covers what is mapped later. */
    if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
        atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->memory_locked), 1u, memory_order_relaxed);
        atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->mlock_errno), 0, memory_order_relaxed);
    } else {
        atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->mlock_errno), errno, memory_order_relaxed);
    }

    int got = set_fifo(priority);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->rt_errno), got < 0 ? -got : 0, memory_order_relaxed);
    int policy = sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
    struct sched_param sp = {0};
    sched_getparam(0, &sp);
    int rt = policy == SCHED_FIFO || policy == SCHED_RR;
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->policy), policy, memory_order_relaxed);
    atomic_store_explicit(OMDP_REPLAY_ATOMIC(&st->rt_priority), rt ? sp.sched_priority : 0, memory_order_relaxed);
    return rt;
}
