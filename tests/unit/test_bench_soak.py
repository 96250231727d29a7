"""omdp bench soak's memory bookkeeping: the process tree it follows and the figures it
reports from a memory series."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ops.bench.soak import _rss_and_name, _summary, process_tree


def test_the_tree_holds_children_and_grandchildren() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
                              "print(p.pid, flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        tree = process_tree(os.getpid())
        assert os.getpid() in tree and child.pid in tree and grandchild in tree
        rss, _ = _rss_and_name(child.pid)
        assert rss > 1024  # a Python interpreter holds more than 1 MiB
    finally:
        for pid in (grandchild, child.pid):
            os.kill(pid, 9)
        child.wait()


def test_summary_reads_first_minute_middle_highest_end_and_growth() -> None:
    # 10 minutes, one sample every 10 s: flat at 100 MiB for 5 minutes, then +2 MiB a minute.
    series = [(t, 100 * 1024 + max(0, t - 300) * 2 * 1024 // 60) for t in range(0, 601, 10)]
    s = _summary(series)
    assert s["first_min_mib"] == 100 and s["middle_mib"] == 100 and s["end_mib"] == 110 == s["highest_mib"]
    assert s["second_half_mib_per_min"] == pytest.approx(2.0, rel=0.01)


def test_a_flat_series_grows_zero() -> None:
    assert _summary([(t, 5000) for t in range(0, 100, 10)])["second_half_mib_per_min"] == pytest.approx(0, abs=1e-9)
