"""A partition's cost per packet: thread CPU, and the work part of it (the loop's working
iterations' share of its wall time applied to its CPU time), as runs report them."""
from __future__ import annotations

import pytest

from ops.pipeline.run_report import PartitionCost


def test_work_is_the_working_share_of_the_loop_cpu() -> None:
    # a spinning loop: 2 s of wall, 1.8 s of CPU (preempted 10%), working 50% of its wall time
    c = PartitionCost("app", cpu_ns=1_800_000_000, wall_ns=2_000_000_000, packets=1_000_000, messages=14_000_000,
                      busy_ns=1_000_000_000)
    assert c.cpu_ns_per_packet == pytest.approx(1800.0)
    assert c.work_fraction == pytest.approx(0.5)
    assert c.work_ns_per_packet == pytest.approx(900.0)
    assert c.work_ns_per_message == pytest.approx(900.0 / 14)
    d = c.as_dict()
    assert d["work_ns_per_packet"] == pytest.approx(900.0) and d["busy_ns"] == 1_000_000_000


def test_work_is_unknown_for_runs_recorded_without_it() -> None:
    c = PartitionCost("app", cpu_ns=1_000, wall_ns=2_000, packets=10, messages=140)
    assert c.work_fraction is None and c.work_ns_per_packet is None and c.as_dict()["work_ns_per_message"] is None
    # the share never exceeds the whole loop (stamp clock and monotonic clock disagree by ppm)
    assert PartitionCost("x", 1_000, 2_000, 10, 140, busy_ns=2_001).work_fraction == 1.0
