"""Capacity planning: how many feed handler / engine partitions, cores and hosts a rate needs,
from what earlier runs measured and how bursty the capture is.

Why: OPRA's 10 ms peaks run several times the mean, and a layout sized for the mean drops
them. The planner takes, from the run records of earlier runs of a topology
(``runs/<date>/<run_id>/run.json`` and ``plan.json``), the CPU each partition spent per
packet (median over the runs), and from a capture the ratio of its peak packet rate over a
window (10 ms or 100 ms) to its mean; the peak to absorb is ``rate x 24,000 packets/s x that
ratio``. Each partition kind needs ``peak x CPU per packet / utilization`` cores, rounded up.
It says which runs it used, and writes a topology of that size (the fused layout: one
partition per feed handler with its engine, one sender per handler, the collectors beside).
It is a projection from measured costs: it assumes a partition's cost per packet holds at
the new scale (no contention between partitions, enough memory bandwidth and lines).
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.replay.rates import PAPER_1X_PPS

PEAK_WINDOWS = ("10ms", "100ms")
"""The windows the capture statistics measure peaks over (ops/capture/stats.py)."""


class CapacityError(ValueError):
    """The inputs cannot give a plan: no runs of the topology, no capture, a bad option."""


@dataclass
class RunCost:
    """One earlier run's measured CPU per packet of each partition role."""

    run_dir: str
    rate_x: float
    handler_ns_per_packet: float  # the partition(s) holding the feed handler (and fused engines)
    replay_ns_per_packet: float
    other_ns_per_packet: float    # every other partition (collectors), summed


@dataclass
class CapacityPlan:
    """The proposal and what it was computed from."""

    topology: str
    rate_x: float
    peak_window: str
    burst_ratio: float
    peak_pps: float
    utilization: float
    runs: list[RunCost]
    handler_ns_per_packet: float
    replay_ns_per_packet: float
    other_ns_per_packet: float
    handlers: int
    engines: int
    replay_cores: int
    other_cores: int
    cores: int
    cores_per_host: int
    hosts: int
    lines: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        d = dict(vars(self))
        d["runs"] = [vars(r) for r in self.runs]
        return d

    def text(self) -> str:
        """The proposal as the command prints it."""
        out = [f"capacity for {self.rate_x:g}x ({self.rate_x * PAPER_1X_PPS:,.0f} packets/s mean) of topology "
               f"{self.topology} - a projection from measured costs:",
               f"  burst: peak {self.peak_window} rate / mean rate of the capture = {self.burst_ratio:.2f} -> "
               f"{self.peak_pps:,.0f} packets/s to absorb",
               f"  measured CPU per packet (median of {len(self.runs)} run(s)): feed handler partition "
               f"{self.handler_ns_per_packet:,.0f} ns, replay {self.replay_ns_per_packet:,.0f} ns, collectors "
               f"{self.other_ns_per_packet:,.0f} ns",
               f"  at {self.utilization:.0%} utilization: {self.handlers} feed handler and {self.engines} engine "
               f"partitions, {self.replay_cores} replay core(s), {self.other_cores} collector core(s): {self.cores} "
               f"cores, {self.hosts} host(s) of {self.cores_per_host} cores"]
        out += [f"  used: {r.run_dir} ({r.rate_x:g}x)" for r in self.runs]
        out += [f"  note: {n}" for n in self.notes]
        return "\n".join(out)


def _cpu_of(run_dir: Path) -> RunCost | None:
    """The costs of one finished pipeline run (run.json: each partition's loop CPU time and
    the feed handlers' packets; plan.json: what each partition holds; meta.parquet: its
    rate), or None when it has none."""
    from omdp.metrics.run_files import RunRecordError, read_meta

    try:
        report = json.loads((run_dir / "run.json").read_text())
        plan = json.loads((run_dir / "plan.json").read_text())
        meta = read_meta(run_dir)
    except (OSError, ValueError, RunRecordError):
        return None
    parts = report.get("partitions") or {}
    packets = 0
    for p in parts.values():
        for op in ((p.get("report") or {}).get("operators") or {}).values():
            packets += int(op.get("packets_accepted", 0))
    if packets <= 0 or report.get("status") != "ended":
        return None
    kinds = {name: op.get("kind") for name, op in plan.get("operators", {}).items()}
    handler = replay = other = 0.0
    for part in plan.get("partitions", []):
        st = ((parts.get(part["name"]) or {}).get("report") or {}).get("stats") or {}
        if "loop_cpu_ns" not in st:
            continue
        ns = int(st["loop_cpu_ns"]) / packets
        ops_kinds = {kinds.get(o.split("[")[0]) for o in part["operators"]}
        if ops_kinds & {"feed_handler", "decision_engine", "elastic_engine"}:
            handler += ns
        elif "feed_sender" in ops_kinds:
            replay += ns
        else:
            other += ns
    if handler <= 0:
        return None
    return RunCost(str(run_dir), float(meta.get("rate_x") or 0.0), handler, replay, other)


def measured_runs(data_dir: Path, topology_name: str, last: int = 5) -> list[RunCost]:
    """The last ``last`` finished runs of ``topology_name`` under data_dir/runs with CPU figures."""
    found = []
    for plan in sorted((data_dir / "runs").glob("*/*/plan.json"), key=lambda p: p.stat().st_mtime):
        try:
            name = json.loads(plan.read_text()).get("topology")
        except (OSError, ValueError):
            continue
        if name == topology_name:
            cost = _cpu_of(plan.parent)
            if cost is not None:
                found.append(cost)
    return found[-last:]


def plan_capacity(topology_name: str, runs: list[RunCost], rate_x: float, burst_ratio: float, peak_window: str,
                  lines: int, utilization: float = 0.7, cores_per_host: int = 16) -> CapacityPlan:
    """The proposal for ``rate_x`` given the runs' costs and the capture's burst ratio."""
    if not runs:
        raise CapacityError(f"no finished runs of topology {topology_name!r} with CPU figures under the data "
                            f"directory: run it first (omdp run ... --data DIR)")
    if not 0 < utilization <= 1:
        raise CapacityError(f"--utilization must be in (0, 1] (got {utilization})")
    if cores_per_host < 1:
        raise CapacityError(f"--cores-per-host must be at least 1 (got {cores_per_host})")
    h = statistics.median(r.handler_ns_per_packet for r in runs)
    rp = statistics.median(r.replay_ns_per_packet for r in runs)
    o = statistics.median(r.other_ns_per_packet for r in runs)
    peak = rate_x * PAPER_1X_PPS * burst_ratio

    def cores(ns: float) -> int:
        return max(1, math.ceil(peak * ns / 1e9 / utilization))

    needed, replay_needed, other_needed = cores(h), cores(rp), cores(o)
    notes = []
    engines = needed
    handlers = min(needed, lines)
    if needed > lines:
        notes.append(f"{needed} feed handler partitions needed but the capture has {lines} lines (a line is never "
                     f"split): the written topology has {lines} handlers")
    if replay_needed > handlers:
        notes.append(f"replay needs {replay_needed} cores but the ring layout has one sender per handler: "
                     f"the written topology has {handlers}")
    if other_needed > 1:
        notes.append(f"the collectors need {other_needed} cores but share one partition in the written topology")
    notes.append("the runs measured the handler and its engines fused: the written topology gives handlers and "
                 "engines a partition each and sizes both by the fused cost (an upper bound for each)")
    notes.append("a partition's CPU time includes its idle polling, so a run that was not saturated overstates "
                 "the cost per packet: plan from runs near the partition's limit")
    replay_cores, other_cores = handlers, 1  # what the written (ring) topology places
    total = handlers + engines + replay_cores + other_cores
    hosts = math.ceil(total / cores_per_host)
    if hosts > 1:
        notes.append(f"{hosts} hosts needed: the written topology places every partition on one host; "
                     f"give it [hosts] and vega-tcp/vega-ib edges (docs/topology.md \"Hosts\")")
    return CapacityPlan(topology_name, rate_x, peak_window, burst_ratio, peak, utilization, runs, h, rp, o,
                        handlers, engines, replay_cores, other_cores, total, cores_per_host, hosts, lines, notes)


def topology_toml(plan: CapacityPlan, name: str) -> str:
    """A topology of the planned size: feed handler i alone in partition ``fh<i>`` (CPU i),
    engine j in ``de<j>``, sender i in ``replay<i>``, the collectors in ``collect``; vega-shm
    between partitions (the paper's Vega layout)."""
    h, e = plan.handlers, plan.engines
    out = [f"# Written by `omdp capacity` for {plan.rate_x:g}x of {plan.topology}: a projection from measured",
           f"# costs (peak {plan.peak_window} = {plan.burst_ratio:.2f} x mean, {plan.peak_pps:,.0f} packets/s; "
           f"{plan.handler_ns_per_packet:,.0f} ns per packet",
           f"# in a feed handler partition, median of {len(plan.runs)} run(s)).",
           f'name = "{name}"',
           f'description = "capacity plan: {h} feed handlers, {e} engines for {plan.rate_x:g}x"', "",
           "[channel]", 'transport = "vega-shm"', "queue_size = 32", "max_message = 16384", "mutex = false",
           'wait = "spin-yield"', "",
           "[operators.fs]", 'kind = "feed_sender"', f"replicas = {h}", "",
           "[operators.fh]", 'kind = "feed_handler"', f"replicas = {h}", 'params = { input = "ring" }', "",
           "[operators.de]", 'kind = "decision_engine"', f"replicas = {e}",
           f"params = {{ pricing_period_s = 1.0, pricing_cpus = [{2 * h + e}], pricing_nice = 19 }}", "",
           "[operators.lc]", 'kind = "latency_collector"', "",
           "[operators.sig]", 'kind = "signal_collector"', "",
           "[operators.ingest]", 'kind = "ingest_collector"', ""]
    for i in range(h):
        out += [f"[partitions.fh{i}]", f'operators = ["fh[{i}]"]', f"cpus = [{i}]", "",
                f"[partitions.replay{i}]", f'operators = ["fs[{i}]"]', f"cpus = [{h + e + i}]", 'wait = "spin-block"', ""]
    for j in range(e):
        out += [f"[partitions.de{j}]", f'operators = ["de[{j}]"]', f"cpus = [{h + j}]", ""]
    out += ["[partitions.collect]", 'operators = ["lc", "sig", "ingest"]', f"cpus = [{2 * h + e}]",
            'wait = "spin-block"', ""]
    for j in range(e):
        out += ["[[edges]]", f'from = "fh.de{j}"', f'to = "de[{j}].quotes"', ""]
    out += ["[[edges]]", 'from = "de.samples"', 'to = "lc.in"', "", "[[edges]]", 'from = "de.signals"',
            'to = "sig.in"', ""]
    return "\n".join(out)
