"""The machine omdp runs on: what it is (``cpu_model``, ``machine_info``: printed beside every
benchmark figure and recorded in a run's meta.parquet), checks of a plan against it (CPUs
that exist and are allowed, hosts that are this machine or one of its network namespaces,
transports this build carries; planning checks none of this, so a 32-core plan prints on a
laptop), and keeping threads off busy CPUs."""
from __future__ import annotations

import errno
import functools
import os
import platform
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omdp.plan import Plan, PlanHost
from omdp.runtime.channels import transport_unavailable

NETNS_DIR = Path("/var/run/netns")
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")


@functools.cache
def cpu_model() -> str:
    """The CPU model name as ``lscpu`` prints it (``/proc/cpuinfo`` where lscpu is missing)."""
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def clocksource() -> str:
    """The kernel's current clock source (tsc, hpet, ...), ``unknown`` where unreadable."""
    try:
        return CLOCKSOURCE.read_text().strip()
    except OSError:
        return "unknown"


def machine_info() -> dict[str, Any]:
    """What to print beside every benchmark figure: CPU model, CPUs, kernel, Python, numpy, load, memory."""
    import numpy as np

    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average": list(os.getloadavg()),
        "memory_bytes": memory_bytes(),
    }


def memory_bytes() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def is_local_address(address: str) -> bool:
    """True when this machine owns ``address`` (it can bind to it)."""
    try:
        infos = socket.getaddrinfo(address, 0, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    for family, type_, proto, _, sockaddr in infos:
        with socket.socket(family, type_, proto) as s:
            try:
                s.bind(sockaddr)
                return True
            except OSError as e:
                if e.errno != errno.EADDRNOTAVAIL:
                    return True
    return False


def _host_problem(host: PlanHost) -> str | None:
    if host.netns:
        if not (NETNS_DIR / host.netns).exists():
            return f"network namespace {host.netns!r} of host {host.name} does not exist (ip netns add {host.netns})"
        return None
    if not is_local_address(host.address):
        return (f"host {host.name} ({host.address}) is not this machine: omdp run starts partitions on this "
                "machine or in its network namespaces")
    return None


def _cpu_list(cpus: set[int]) -> str:
    from omdp.plan_text import cpu_ranges

    return cpu_ranges(sorted(cpus))


def _operator_cpu_problems(plan: Plan, allowed: set[int]) -> list[tuple[str, str]]:
    """An operator parameter named ``cpus`` or ``*_cpus`` (a feed sender's ``cpus``, an
    engine's ``pricing_cpus``) lists CPUs of this machine for one of its threads; one that
    is not here would fail in that thread alone (the engine then ran without pricing)."""
    problems: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for op in plan.operators.values():
        for key, value in op.params.items():
            if not (key == "cpus" or key.endswith("_cpus")) or not isinstance(value, list) or (op.group, key) in seen:
                continue
            seen.add((op.group, key))
            bad = [c for c in value if c not in allowed]
            if bad:
                problems.append((f"operators.{op.group}.params.{key}",
                                 f"CPU {', '.join(map(str, bad))} is not available here "
                                 f"(this machine offers {_cpu_list(allowed)})"))
    return problems


def check_machine(plan: Plan) -> list[tuple[str, str]]:
    """(field, reason) for everything in ``plan`` this machine cannot do; empty when fine."""
    problems: list[tuple[str, str]] = []
    allowed = os.sched_getaffinity(0)
    seen_hosts: dict[str, str | None] = {}
    for p in plan.partitions:
        host = plan.hosts[p.host]
        if host.name not in seen_hosts:
            seen_hosts[host.name] = _host_problem(host)
            if seen_hosts[host.name]:
                problems.append((f"partitions.{p.group}.host", seen_hosts[host.name] or ""))
        bad = [c for c in p.cpus if c not in allowed]
        if bad:
            problems.append((f"partitions.{p.group}.cpus",
                             f"CPU {', '.join(map(str, bad))} of {p.name} is not available here "
                             f"(this machine offers {_cpu_list(allowed)})"))
    problems += _operator_cpu_problems(plan, allowed)
    for c in plan.channels:
        why = transport_unavailable(c.spec.transport)
        if why:
            problems.append((f"edges[{c.edges[0]}].channel.transport", why))
    return problems


def keep_thread_off(cpus: set[int], tid: int = 0) -> set[int] | None:
    """Move thread ``tid`` (0: the calling one; threads it starts later inherit it) off
    ``cpus`` when an allowed CPU is left; returns the CPUs it had, None when nothing changed.
    A thread waking on a CPU where a loop spins takes that CPU from it for a scheduler slice:
    milliseconds on the measured path."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return None
    before = os.sched_getaffinity(tid)
    others = before - set(cpus)
    if not others or others == before:
        return None
    os.sched_setaffinity(tid, others)
    return before


LOOP_RT_PRIORITY = 40
"""SCHED_FIFO priority of a ``realtime`` partition's loop: the replayer's (``--realtime``),
above every ordinary task, below the kernel's threaded interrupt handlers (50) and per-CPU
threads (99)."""


def enter_realtime(priority: int = LOOP_RT_PRIORITY) -> str | None:
    """Make the calling thread SCHED_FIFO at ``priority`` (threads it starts later run as
    ordinary tasks: SCHED_RESET_ON_FORK); None when it took effect, else why not, with what
    would allow it."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
    except OSError as e:
        hint = (" (needs root, CAP_SYS_NICE, or an RLIMIT_RTPRIO such as `ulimit -r 40`)"
                if e.errno == errno.EPERM else "")
        return f"SCHED_FIFO priority {priority}: {errno.errorcode.get(e.errno or 0, e.errno)}: {e.strerror}{hint}"
    return None


def keep_helpers_off(spinning: set[int], allowed: set[int]) -> None:
    """Move this process's helper threads to ``allowed`` minus ``spinning`` (when a CPU is
    left). A thread that wakes on a CPU where a loop spins takes the CPU from the loop for up
    to a scheduler slice (milliseconds), and every packet arriving meanwhile queues. A helper
    is a thread other than the calling one (the loop's) whose CPUs include all of the calling
    thread's: it inherited them, or started before the pinning. A thread that chose fewer
    (a pricing thread, an elastic engine's worker) keeps them."""
    target = set(allowed) - set(spinning)
    if not spinning or not target or not hasattr(os, "sched_setaffinity"):
        return
    me = threading.get_native_id()
    mine = os.sched_getaffinity(0)
    for tid in (int(t) for t in os.listdir("/proc/self/task")):
        try:
            if tid != me and os.sched_getaffinity(tid) >= mine:
                os.sched_setaffinity(tid, target)
        except OSError:  # a thread that ended meanwhile
            pass


@contextmanager
def threads_kept_off(cpus: set[int]) -> Iterator[set[int] | None]:
    """While open, every thread of this process (and threads started meanwhile) stays off
    ``cpus`` as ``keep_thread_off`` moves it; yields the calling thread's CPUs now (None: it
    was not moved). On exit each moved thread gets back the CPUs it had."""
    had: dict[int, set[int]] = {}
    for tid in [0, *(int(t) for t in os.listdir("/proc/self/task"))]:
        try:
            before = keep_thread_off(cpus, tid)
        except OSError:  # a thread that ended meanwhile
            continue
        if before is not None:
            had[tid] = before
    try:
        yield os.sched_getaffinity(0) if 0 in had else None
    finally:
        for tid, before in had.items():
            try:
                os.sched_setaffinity(tid, before)
            except OSError:
                pass
