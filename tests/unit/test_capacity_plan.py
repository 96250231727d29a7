"""The capacity planner (ops/pipeline/capacity.py): the arithmetic from measured costs and a
burst ratio, the notes where the written layout departs from it, and that the topology it
writes is one omdp can plan."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from omdp.plan import build_plan
from omdp.topology.load import load_topology
from ops.cli.main import cli
from ops.pipeline.capacity import CapacityError, RunCost, plan_capacity, topology_toml
from ops.pipeline.registry import build_registry

TOPOLOGIES = Path(__file__).resolve().parents[2] / "ops" / "topologies"
"""The shipped topologies, wherever the tests run from."""


def runs(*handler_ns: float) -> list[RunCost]:
    return [RunCost(f"run{i}", 4.0, ns, 100.0, 300.0) for i, ns in enumerate(handler_ns)]


def test_cores_follow_the_peak_and_the_median_cost() -> None:
    # 10x with a 5x burst: 1.2 M packets/s; 1,000 ns per packet at 60% -> 2 cores worth 3.33 -> 4
    p = plan_capacity("opra-fused", runs(900.0, 1000.0, 5000.0), 10.0, 5.0, "10ms", lines=24, utilization=0.6,
                      cores_per_host=16)
    assert p.peak_pps == pytest.approx(1_200_000)
    assert p.handler_ns_per_packet == 1000.0 and p.handlers == p.engines == 2
    assert p.replay_cores == 2 and p.other_cores == 1 and p.cores == 7 and p.hosts == 1
    assert "used: run1 (4x)" in p.text()


def test_more_handlers_than_lines_and_more_cores_than_a_host_are_said() -> None:
    p = plan_capacity("opra-fused", runs(4000.0), 25.0, 6.0, "10ms", lines=4, utilization=0.7, cores_per_host=16)
    assert p.engines == 21 and p.handlers == 4
    assert any("capture has 4 lines" in n for n in p.notes) and any("hosts needed" in n for n in p.notes)


def test_the_written_topology_plans(tmp_path) -> None:
    p = plan_capacity("opra-fused", runs(2000.0), 10.0, 5.0, "10ms", lines=8, utilization=0.7, cores_per_host=64)
    path = tmp_path / "t.toml"
    path.write_text(topology_toml(p, "opra-fused-for-10x"))
    plan = build_plan(load_topology(path), build_registry(), str(path))
    names = {part.name for part in plan.partitions}
    assert {f"fh{i}" for i in range(p.handlers)} <= names and {f"de{j}" for j in range(p.engines)} <= names


def test_no_runs_and_bad_knobs_are_refused() -> None:
    with pytest.raises(CapacityError, match="no finished runs of topology 'x'"):
        plan_capacity("x", [], 10.0, 5.0, "10ms", lines=4)
    with pytest.raises(CapacityError, match="--utilization"):
        plan_capacity("x", runs(1000.0), 10.0, 5.0, "10ms", lines=4, utilization=1.5)


def test_capacity_command_without_a_capture_says_so(tmp_path) -> None:
    r = CliRunner().invoke(cli, ["capacity", str(TOPOLOGIES / "opra_fused.toml"), "--for-rate", "10x",
                                 "--data", str(tmp_path)])
    assert r.exit_code == 2 and "no capture under" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["capacity", str(TOPOLOGIES / "opra_fused.toml"), "--for-rate", "ten"])
    assert r.exit_code == 2 and "--for-rate 'ten' is not a rate" in r.output
