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
