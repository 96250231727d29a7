"""The hot path's targets judged on a sweep's runs: met and not met on each side of every
bound, not judged when no point applies, and the partition they speak of found in the plans."""
from __future__ import annotations

import pytest

from omdp.plan import build_plan
from omdp.topology.load import load_topology
from ops.pipeline.registry import build_registry
from ops.pipeline.sweep import fused_partition, handler_copies, markdown, sweep_dict
from ops.pipeline.sweep_points import Sweep, SweepPoint
from ops.pipeline.sweep_targets import judge
from ops.topologies import topology_path


def run_dict(*, work_ns: float = 900.0, fraction: float = 1.0, missed: int = 0, p50: float = 40.0,
             p99: float = 800.0, run_id: str = "r1") -> dict:
    hop = {"count": 100, "mean_us": p50, "p50_us": p50, "p99_us": p99}
    return {
        "run_id": run_id,
        "replay": {"achieved_pps": 1.0, "achieved_fraction": fraction, "messages_per_packet": 14.0},
        "accounting": {"missed_ratio": 0.0, "messages_missed": missed, "messages_received": 1_000},
        "breakdown": {"hops": {"e2e": hop, "e2e_intended": hop}},
        "cpu": {"app": {"work_ns_per_packet": work_ns, "work_ns_per_message": work_ns / 14, "work_fraction": 0.6},
                "replay": {"work_ns_per_packet": 5.0}},
    }


def fused(rate: str, **kw: float) -> SweepPoint:
    return SweepPoint("opra-fused ring", rate, 0.0, input="ring", fused_partition="app", copies="A,B",
                      run=run_dict(**kw), sustainable=True)


def by_target(s: Sweep) -> dict[str, list]:
    out: dict[str, list] = {}
    for v in judge(s):
        out.setdefault(v.target, []).append(v)
    return out


def sweep(*points: SweepPoint) -> Sweep:
    s = Sweep("sweepT", 30.0, "2008-02-04")
    s.points = list(points)
    return s


def test_each_target_met_within_its_bound_and_not_met_past_it() -> None:
    ok = by_target(sweep(fused("20x", work_ns=1_000.0), fused("25x", fraction=0.9999), fused("10x", p50=50.0, p99=1_000.0)))
    assert [v.met for vs in ok.values() for v in vs][:3] == [True, True, True]
    assert "1,000 ns per packet" in ok["fused partition CPU per packet"][0].measured
    bad = by_target(sweep(fused("20x", work_ns=1_001.0), fused("25x", fraction=0.99989), fused("10x", p99=1_000.1)))
    assert [bad[t][0].met for t in ("fused partition CPU per packet", "25x sustained", "latency from intended at 10x")] \
        == [False, False, False]
    missed = by_target(sweep(fused("25x", missed=1)))["25x sustained"][0]
    assert missed.met is False and "1 of 1,000 messages missed" in missed.measured


def test_targets_without_an_applying_point_are_not_judged() -> None:
    split = SweepPoint("opra-split ring", "20x", 0.0, input="ring", fused_partition=None, run=run_dict())
    mc = SweepPoint("opra-fused multicast", "20x", 0.0, input="multicast", fused_partition="app", copies="A",
                    run=run_dict())
    skipped = SweepPoint("opra-fused ring", "25x", 0.0, input="ring", fused_partition="app", skipped=True)
    verdicts = by_target(sweep(split, mc, skipped))
    assert verdicts["fused partition CPU per packet"][0].met is None   # split layout; multicast input
    assert verdicts["25x sustained"][0].met is None                    # the 25x point never ran
    assert "no 25x run" in verdicts["25x sustained"][0].measured


def test_multicast_a_only_is_judged_by_its_sustainable_rate() -> None:
    def mc(rate: str, sustainable: bool, copies: str = "A") -> SweepPoint:
        return SweepPoint(f"mc {copies}", rate, float(rate[:-1]) * 24_000, input="multicast", fused_partition="app", copies=copies,
                          run=run_dict(p99=3_000.0), sustainable=sustainable)
    v = by_target(sweep(mc("5x", True), mc("10x", False)))["loopback multicast, A only"]
    assert len(v) == 1 and v[0].met is False and "sustainable up to 5x" in v[0].measured and "3.00 ms" in v[0].measured
    assert by_target(sweep(mc("5x", True), mc("10x", True)))["loopback multicast, A only"][0].met is True
    assert by_target(sweep(mc("5x", True)))["loopback multicast, A only"][0].met is None       # 10x not swept
    assert by_target(sweep(mc("10x", True, "A,B")))["loopback multicast, A only"][0].met is None  # both copies


def test_the_table_carries_the_verdicts_and_the_work_per_packet() -> None:
    s = sweep(fused("20x", work_ns=1_250.0))
    text = markdown(s, "omdp bench sweep X", "machine M")
    assert "| 1,250 (app) |" in text
    assert "| fused partition CPU per packet | <= 1,000 ns of work per packet at 20x | opra-fused ring |" in text
    assert "**not met**" in text and "not judged" in text
    assert sweep_dict(s)["targets"][0]["met"] is False


@pytest.mark.parametrize("name, fused_in, copies", [("opra_fused", "app", "A,B"), ("opra_split_vega", None, "A,B")])
def test_the_fused_partition_is_the_one_with_handler_and_engines(name: str, fused_in: str | None, copies: str) -> None:
    path = str(topology_path(name))
    plan = build_plan(load_topology(path, ()), build_registry(), path)
    assert fused_partition(plan) == fused_in and handler_copies(plan) == copies
