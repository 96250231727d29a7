"""The supervisor's threads keep off the CPUs of spinning partitions while a run lasts, and
get their CPUs back after it."""
from __future__ import annotations

import os
import threading

import pytest

from omdp.runtime.machine import threads_kept_off

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 usable CPUs")


def _tids() -> list[int]:
    return [int(t) for t in os.listdir("/proc/self/task")]


def test_every_thread_moves_off_and_back() -> None:
    before = os.sched_getaffinity(0)
    busy = {min(before)}
    started = threading.Event()
    release = threading.Event()
    worker = threading.Thread(target=lambda: (started.set(), release.wait(10)))
    worker.start()
    started.wait(10)
    late: dict[str, set[int]] = {}
    had = {t: os.sched_getaffinity(t) for t in _tids()}  # threads of earlier tests may differ
    try:
        with threads_kept_off(busy) as kept:
            assert kept == before - busy
            assert all(os.sched_getaffinity(t) == (had[t] - busy or had[t]) for t in had)
            # a thread started meanwhile inherits the restriction
            t = threading.Thread(target=lambda: late.setdefault("cpus", os.sched_getaffinity(0)))
            t.start()
            t.join(10)
        assert late["cpus"] == before - busy
        assert all(os.sched_getaffinity(t) == had[t] for t in _tids() if t in had)
    finally:
        release.set()
        worker.join(10)


def test_nothing_changes_when_no_cpu_would_be_left() -> None:
    before = os.sched_getaffinity(0)
    with threads_kept_off(set(before)) as kept:
        assert kept is None and os.sched_getaffinity(0) == before
    with threads_kept_off(set()) as kept:
        assert kept is None


PARTITION_HELPERS = """
import os, threading, time
from omdp.runtime.machine import keep_helpers_off
allowed = os.sched_getaffinity(0)
cpus = sorted(os.sched_getaffinity(0)); hot, cold = cpus[-1], cpus[0]
ids, go = {}, threading.Event()
def park(name, cpus=None):
    if cpus:
        os.sched_setaffinity(0, cpus)
    ids[name] = threading.get_native_id(); go.wait()  # until the affinities are read, however late
def start(name, cpus=None):
    t = threading.Thread(target=park, args=(name, cpus), daemon=True); t.start()
    while name not in ids: time.sleep(0.001)
start("early")                      # started before the pinning: every CPU
os.sched_setaffinity(0, {hot})      # the partition's main thread pins to its spinning CPU
start("helper")                     # inherits {hot}
start("chooser", {cold})            # chose its CPU: kept
keep_helpers_off({hot}, allowed)
got = {n: sorted(os.sched_getaffinity(t)) for n, t in ids.items()}
print(repr((got["early"], got["helper"], got["chooser"], sorted(os.sched_getaffinity(0)), hot, cold)))
go.set()
"""


def test_a_spinning_partitions_helper_threads_leave_its_cpu() -> None:
    """What a partition process does when its loop starts (omdp.runtime.machine
    ``keep_helpers_off``): threads that inherited the spinning loop's CPU or started before
    the pinning move off it; the loop's thread and a thread that chose its CPU stay."""
    import ast
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-P", "-c", PARTITION_HELPERS], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    early, helper, chooser, main, hot, cold = ast.literal_eval(out.stdout.strip())
    assert hot not in early and hot not in helper and early and helper
    assert chooser == [cold] and main == [hot]
