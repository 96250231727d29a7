"""The capacity planner reads the costs that runs measured (ops/pipeline/capacity.py
``measured_runs``, ``work_cost``): each run's feed handler partition loop CPU, packets and idle
loops from its run records, and plans with the work per packet once idle polling is taken
out, saying which runs it used and how it got the cost."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from omdp.metrics.run_files import RUN_FILES
from ops.pipeline.capacity import RunCost, measured_runs, plan_capacity, work_cost

TOPOLOGIES = Path(__file__).resolve().parents[2] / "ops" / "topologies"
"""The shipped topologies, wherever the tests run from."""

WORK_NS = 1800.0   # what a packet costs the handler partition
IDLE_NS = 65.0     # what a loop that finds nothing costs


def _default(t: pa.DataType) -> object:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_floating(t):
        return 0.0
    return 0


def write_run(runs_dir: Path, name: str, rate_x: float, packets: int, idle_loops: int,
              busy_of_wall: tuple[int, int] | None = None) -> Path:
    """A finished run of opra-fused whose app partition spent WORK_NS per packet plus IDLE_NS per idle loop;
    ``busy_of_wall``: the loop's own measure of its working wall time, of its whole wall time."""
    d = runs_dir / "2026-11-24" / name
    d.mkdir(parents=True)
    cpu = int(packets * WORK_NS + idle_loops * IDLE_NS)
    busy = {} if busy_of_wall is None else {"loop_busy_ns": busy_of_wall[0], "loop_wall_ns": busy_of_wall[1]}
    (d / "plan.json").write_text(json.dumps({
        "topology": "opra-fused",
        "operators": {"fh": {"kind": "feed_handler"}, "de": {"kind": "decision_engine"}, "fs": {"kind": "feed_sender"}},
        "partitions": [{"name": "app", "operators": ["fh", "de[0]"]}, {"name": "replay", "operators": ["fs"]}]}))
    (d / "run.json").write_text(json.dumps({"status": "ended", "partitions": {
        "app": {"report": {"operators": {"fh": {"packets_accepted": packets}},
                           "stats": {"loop_cpu_ns": cpu, "loops": idle_loops + packets, "idle_loops": idle_loops,
                                     **busy}}},
        "replay": {"report": {"operators": {}, "stats": {"loop_cpu_ns": packets * 100, "idle_loops": 0}}}}}))
    schema = RUN_FILES["meta.parquet"]
    row = {f.name: _default(f.type) for f in schema}
    row["rate_x"] = rate_x
    pq.write_table(pa.Table.from_pylist([row], schema=schema), d / "meta.parquet")
    return d


def test_the_planner_reads_each_runs_costs_and_fits_out_the_idle_polling(tmp_path: Path) -> None:
    write_run(tmp_path / "runs", "r5", 5.0, packets=2_400_000, idle_loops=200_000_000)
    write_run(tmp_path / "runs", "r10", 10.0, packets=4_800_000, idle_loops=120_000_000)
    runs = measured_runs(tmp_path, "opra-fused")
    assert [r.rate_x for r in runs] == [5.0, 10.0]
    assert runs[0].packets == 2_400_000 and runs[0].idle_loops == 200_000_000 and runs[0].handler_partitions == 1
    assert runs[0].handler_ns_per_packet == pytest.approx(WORK_NS + 200_000_000 * IDLE_NS / 2_400_000)
    cost = work_cost(runs)
    assert cost.ns_per_packet == pytest.approx(WORK_NS, rel=1e-6) and cost.idle_loop_ns == pytest.approx(IDLE_NS)
    plan = plan_capacity("opra-fused", runs, 10.0, 5.0, "10ms", lines=24, utilization=0.7, cores_per_host=2)
    assert plan.handler_ns_per_packet == pytest.approx(WORK_NS, rel=1e-6)
    # one partition at 70% of 1e9 / 1800 packets/s = 388,889 packets/s = 16.2x mean, 3.24x with 5x peaks
    assert plan.host_mean_rate_x == pytest.approx(1e9 / WORK_NS * 0.7 / 24_000, rel=1e-6)
    assert plan.host_peak_rate_x == pytest.approx(plan.host_mean_rate_x / 5.0)
    text = plan.text()
    assert "fit of loop CPU" in text and "r5 (5x)" in text and "r10 (10x)" in text


def test_the_loops_own_measure_of_work_comes_before_the_fit(tmp_path: Path) -> None:
    """A loop that sleeps when idle (spin-block) spends nothing like a constant cost per idle
    loop, so its records' working share is what the planner takes: the median over the runs."""
    write_run(tmp_path / "runs", "a", 0.5, packets=1_000_000, idle_loops=9_000_000, busy_of_wall=(1, 4))
    write_run(tmp_path / "runs", "b", 1.0, packets=2_000_000, idle_loops=100, busy_of_wall=(1, 2))
    write_run(tmp_path / "runs", "c", 2.0, packets=1_000_000, idle_loops=100, busy_of_wall=(3, 4))
    runs = measured_runs(tmp_path, "opra-fused")
    per_packet = sorted(r.handler_work_ns / r.packets for r in runs)
    assert per_packet[1] == pytest.approx((2_000_000 * WORK_NS + 100 * IDLE_NS) / 2 / 2_000_000)
    cost = work_cost(runs)
    assert cost.ns_per_packet == pytest.approx(per_packet[1]) and not cost.upper_bound
    assert cost.method.startswith("the loops' own measure of work") and "median of 3 run(s)" in cost.method
    plan = plan_capacity("opra-fused", runs, 1.0, 8.0, "10ms", lines=96, cores_per_host=16)
    assert not any("idle polling, so" in n for n in plan.notes)
    assert "of work)" in plan.text()


def test_runs_that_idled_alike_fall_back_to_the_least_idle_one() -> None:
    runs = [RunCost("a", 5.0, 3000.0, 0.0, 0.0, packets=1000, handler_cpu_ns=3e6, idle_loops=50_000),
            RunCost("b", 6.0, 2900.0, 0.0, 0.0, packets=1000, handler_cpu_ns=2.9e6, idle_loops=50_100)]
    cost = work_cost(runs)
    assert cost.ns_per_packet == 3000.0 and "idled least (a)" in cost.method and cost.idle_loop_ns is None
    assert cost.upper_bound


def test_records_without_loop_figures_use_the_median() -> None:
    runs = [RunCost(f"r{i}", 4.0, ns, 0.0, 0.0) for i, ns in enumerate([900.0, 1000.0, 5000.0])]
    assert work_cost(runs).ns_per_packet == 1000.0


@pytest.mark.slow  # a synthetic capture and two planner runs: ~2 s
def test_the_command_projects_latency_from_intended_on_the_capture(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ops.cli.main import cli
    from pipeline_support import make_capture

    make_capture(tmp_path, seconds=0.3, lines=2)
    write_run(tmp_path / "runs", "r5", 5.0, packets=2_400_000, idle_loops=200_000_000)
    write_run(tmp_path / "runs", "r10", 10.0, packets=4_800_000, idle_loops=120_000_000)
    args = ["capacity", str(TOPOLOGIES / "opra_fused.toml"), "--for-rate", "10x", "--data", str(tmp_path)]
    r = CliRunner().invoke(cli, args + ["--max-p99-from-intended", "500"])
    assert r.exit_code == 0, r.output
    assert "queueing model" in r.output and "p99 <= 500 us with the measured layout: at 10x needs <=" in r.output
    r = CliRunner().invoke(cli, args + ["--json"])
    model = json.loads(r.output)["latency_model"]
    assert model["bound_ns"] == 1e6 and model["measured"]["ns_per_packet"] == pytest.approx(WORK_NS, rel=1e-6)
    assert model["proposed"]["handlers"] >= model["measured"]["handlers"] == 1
    assert model["proposed"]["p99_ns"] <= model["measured"]["p99_ns"]
    r = CliRunner().invoke(cli, args + ["--max-p99-from-intended", "0"])
    assert r.exit_code == 2 and "--max-p99-from-intended" in r.output


@pytest.mark.full
def test_todays_feed_is_planned_for_a_peak_in_messages_from_another_layouts_costs(tmp_path: Path) -> None:
    """``--for-peak-msgs 120M`` on an OBI capture: the rate whose busiest 10 ms carries 120 M
    messages/s, sized with the fused layout's measured costs (``--costs-from``), beside what
    opra_today.toml gives (4 feed handler and 6 engine partitions)."""
    from click.testing import CliRunner

    from ops.capture.stats import capture_packets, stats_of
    from ops.cli.main import cli
    from ops.pipeline.capture_info import latest_capture_date
    from ops.replay.rates import PAPER_1X_PPS
    from pipeline_support import make_obi_capture

    make_obi_capture(tmp_path, seconds=0.3, lines=4, faults_per_second=0.0)
    write_run(tmp_path / "runs", "r5", 5.0, packets=2_400_000, idle_loops=200_000_000)
    write_run(tmp_path / "runs", "r10", 10.0, packets=4_800_000, idle_loops=120_000_000)
    args = ["capacity", str(TOPOLOGIES / "opra_today.toml"), "--for-peak-msgs", "120M", "--costs-from", "opra_fused",
            "--cores-per-host", "16", "--data", str(tmp_path)]
    r = CliRunner().invoke(cli, args + ["--json"])
    assert r.exit_code == 0, r.output
    plan = json.loads(r.output)
    cap = tmp_path / "captures" / str(latest_capture_date(tmp_path))
    t = stats_of(str(cap), capture_packets(cap)).total
    assert plan["rate_x"] == pytest.approx(120e6 / (PAPER_1X_PPS * t.peak_messages_per_s["10ms"] / t.packets_per_s))
    assert plan["peak_messages_per_s"] == pytest.approx(120e6)
    assert plan["given"] == [4, 6] and plan["costs_from"] == "opra-fused" and plan["topology"] == "opra-today"
    needed = math.ceil(plan["peak_pps"] * WORK_NS / 1e9 / 0.7)
    assert plan["engines"] == needed and plan["handlers"] == min(needed, 4)
    text = CliRunner().invoke(cli, args).output
    assert "120,000,000 messages/s in the busiest 10ms" in text and "opra-today as written: 4 feed handler" in text
    for bad, why in ((["--for-rate", "1x"], "one of --for-rate and --for-peak-msgs"),
                     (["--for-peak-msgs", "lots"], "--for-peak-msgs 'lots'")):
        r = CliRunner().invoke(cli, [a for a in args if a not in ("--for-peak-msgs", "120M")] + bad
                               + (["--for-peak-msgs", "120M"] if bad[0] == "--for-rate" else []))
        assert r.exit_code == 2 and why in r.output and "Traceback" not in r.output, r.output
