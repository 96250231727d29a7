"""--realtime: what a sender's status says about its scheduling, in words.

The sender asks for it in C (``omdp_replay_realtime_enter``: mlockall, then SCHED_FIFO at
``REALTIME_PRIORITY``) and records what took effect; these helpers turn those fields into
the status's policy name and the warnings a user reads when something was refused.
"""
from __future__ import annotations

import errno
import os

from omdp.native import lib

REALTIME_PRIORITY = int(lib.OMDP_REPLAY_RT_PRIORITY)
"""SCHED_FIFO priority of a --realtime sender: above every ordinary task, below the kernel's
threaded interrupt handlers (50) and per-CPU housekeeping threads (99)."""

POLICY_NAMES = {0: "other", 1: "fifo", 2: "rr", 3: "batch", 5: "idle", 6: "deadline"}


def policy_name(policy: int) -> str:
    """'fifo', 'other', ... for a Linux scheduling policy number."""
    return POLICY_NAMES.get(policy, str(policy))


def _why(code: int) -> str:
    name = errno.errorcode.get(code, str(code))
    return f"{name}: {os.strerror(code)}"


def realtime_warnings(index: int, *, requested: bool, rt_errno: int, mlock_errno: int, policy: int,
                      priority: int) -> list[str]:
    """The warnings of sender ``index`` when --realtime was asked for and not (all) granted."""
    if not requested:
        return []
    out: list[str] = []
    if rt_errno:
        hint = " (needs root, CAP_SYS_NICE, or an RLIMIT_RTPRIO such as `ulimit -r 40`)" if rt_errno == errno.EPERM else ""
        out.append(f"sender {index}: --realtime refused: SCHED_FIFO priority {REALTIME_PRIORITY}: {_why(rt_errno)}{hint}; "
                   f"it runs as an ordinary task ({policy_name(policy)})")
    elif priority and priority < REALTIME_PRIORITY:
        out.append(f"sender {index}: --realtime at SCHED_FIFO priority {priority}, the RLIMIT_RTPRIO, "
                   f"below the {REALTIME_PRIORITY} asked for")
    if mlock_errno:
        hint = (" (needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK, `ulimit -l`)"
                if mlock_errno in (errno.EPERM, errno.ENOMEM) else "")
        out.append(f"sender {index}: --realtime could not lock its memory: mlockall: {_why(mlock_errno)}{hint}; "
                   "page faults may delay it")
    return out
