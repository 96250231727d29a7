"""Capacity planning: how many feed handler / engine partitions, cores and hosts a rate needs,
from what earlier runs measured and how bursty the capture is.

Why: OPRA's 10 ms peaks run several times the mean, and a layout sized for the mean drops
them. The planner takes, from the run records of earlier runs of a topology
(``runs/<date>/<run_id>/run.json`` and ``plan.json``), the CPU each partition spent per
packet (median over the runs), and from a capture the ratio of its peak packet rate over a
window (10 ms or 100 ms) to its mean; the peak to absorb is ``rate x 24,000 packets/s x that
ratio``. Each partition kind needs ``peak x CPU per packet / utilization`` cores, rounded up.

The feed handler partition's cost per packet is its work, not its loop's CPU time: a
partition that spins (``wait = "spin"``) burns a core whatever the rate, so CPU time per
packet at 5x is several times what a packet costs. Where the runs' records hold the loop's
own measure of its work (``loop_busy_ns``: the wall time of the iterations that did something,
whose share of the loop's wall time is applied to its CPU time, as the run's report gives
``work_ns_per_packet``), the planner takes the median over the runs of that work per packet:
it leaves out idle polls and sleeps alike, where a loop that sleeps when idle (``wait =
"spin-block"``, a real-time partition on a shared machine) gives the fit below nothing to fit.
Otherwise, where the runs differ in how much they idled, it fits ``loop CPU = a x packets + b
x idle loops`` over them (least squares) and plans with ``a``; else it takes the run that
idled least per packet (an upper bound). It also says what the layout that was measured sustains on this host: the mean rate
its handler partitions carry at the utilization, and the rate whose 10 ms peaks they absorb
(the sweep's verdict bounds p99 latency from intended at 1 ms, so a peak that queues for
more than that fails a rate whose mean is well within capacity).
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
    packets: int = 0              # packets the feed handlers accepted
    handler_cpu_ns: float = 0.0   # the handler partitions' loop CPU time, summed
    idle_loops: int = 0           # ... and their loops that found nothing to do
    handler_partitions: int = 1   # partitions holding a feed handler
    handler_work_ns: float = 0.0  # the handler partitions' loop CPU in working iterations, summed (0: not recorded)


@dataclass
class WorkCost:
    """The feed handler partition's CPU per packet of work, and how it was had."""

    ns_per_packet: float
    method: str
    idle_loop_ns: float | None = None
    upper_bound: bool = False  # idle polling included: the runs gave neither their work nor a fit


def work_cost(runs: list[RunCost]) -> WorkCost:
    """The handler partition's cost per packet with idle polling taken out (module docstring)."""
    with_loops = [r for r in runs if r.packets > 0 and r.handler_cpu_ns > 0]
    if with_loops and all(r.handler_work_ns > 0 for r in with_loops):
        return WorkCost(statistics.median(r.handler_work_ns / r.packets for r in with_loops),
                        f"the loops' own measure of work (CPU in iterations that did work; idle polls and sleeps "
                        f"left out), median of {len(with_loops)} run(s)")
    if len(with_loops) >= 2:
        idle_per_packet = [r.idle_loops / r.packets for r in with_loops]
        if max(idle_per_packet) > 1.1 * min(idle_per_packet) and max(idle_per_packet) > 0:
            # normal equations of cpu = a * packets + b * idle over the runs
            spp = sum(float(r.packets) ** 2 for r in with_loops)
            spi = sum(float(r.packets) * r.idle_loops for r in with_loops)
            sii = sum(float(r.idle_loops) ** 2 for r in with_loops)
            spc = sum(float(r.packets) * r.handler_cpu_ns for r in with_loops)
            sic = sum(float(r.idle_loops) * r.handler_cpu_ns for r in with_loops)
            det = spp * sii - spi * spi
            if det > 0:
                a = (spc * sii - sic * spi) / det
                b = (spp * sic - spi * spc) / det
                if a > 0 and b >= 0:
                    return WorkCost(a, f"fit of loop CPU = a x packets + b x idle loops over {len(with_loops)} runs "
                                       f"(b = {b:,.1f} ns per idle loop)", b)
    if with_loops:
        best = min(with_loops, key=lambda r: r.idle_loops / r.packets)
        return WorkCost(best.handler_cpu_ns / best.packets,
                        f"the run that idled least ({best.run_dir}): loop CPU per packet, idle polling included "
                        f"(an upper bound)", upper_bound=True)
    return WorkCost(statistics.median(r.handler_ns_per_packet for r in runs),
                    f"median loop CPU per packet of {len(runs)} run(s), idle polling included (an upper bound)",
                    upper_bound=True)


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
    handler_ns_per_packet: float   # of work (work_cost)
    cost_method: str
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
    measured_handler_partitions: int = 1
    host_mean_rate_x: float = 0.0  # the measured layout on this host: mean rate carried at the utilization
    host_peak_rate_x: float = 0.0  # ... and the rate whose peak-window bursts it absorbs
    notes: list[str] = field(default_factory=list)
    messages_per_packet: float = 0.0  # the capture's mean (0: not known)
    peak_messages_per_s: float = 0.0  # messages/s in the busiest peak window at the rate (0: not known)
    costs_from: str = ""           # the topology whose runs gave the costs, when not this one
    given: tuple[int, int] | None = None  # the topology's own feed handler and engine partitions

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
               f"  measured CPU per packet: feed handler partition {self.handler_ns_per_packet:,.0f} ns of work "
               f"({self.cost_method}); replay {self.replay_ns_per_packet:,.0f} ns, collectors "
               f"{self.other_ns_per_packet:,.0f} ns (medians of {len(self.runs)} run(s)"
               + (f" of topology {self.costs_from}" if self.costs_from else "") + ")",
               f"  at {self.utilization:.0%} utilization: {self.handlers} feed handler and {self.engines} engine "
               f"partitions, {self.replay_cores} replay core(s), {self.other_cores} collector core(s): {self.cores} "
               f"cores, {self.hosts} host(s) of {self.cores_per_host} cores"]
        if self.peak_messages_per_s > 0 and self.messages_per_packet > 0:
            out.insert(2, f"  in messages: {self.peak_messages_per_s:,.0f} messages/s in the busiest {self.peak_window}"
                          f", {self.rate_x * PAPER_1X_PPS * self.messages_per_packet:,.0f} on average "
                          f"({self.messages_per_packet:.2f} a packet); "
                          f"{self.handler_ns_per_packet / self.messages_per_packet:,.1f} ns of feed handler work "
                          f"per message")
        if self.given is not None:
            gh, ge = self.given
            short = [f"{n - g} more {what}" for n, g, what in ((self.handlers, gh, "feed handler"),
                                                             (self.engines, ge, "engine")) if n > g]
            out.append(f"  {self.topology} as written: {gh} feed handler and {ge} engine partitions: "
                       + ("enough" if not short else "short by " + " and ".join(short)))
        out.append(f"  this host as measured ({self.measured_handler_partitions} feed handler partition(s)): mean "
                   f"rate up to {self.host_mean_rate_x:.1f}x, {self.peak_window} peaks absorbed up to "
                   f"{self.host_peak_rate_x:.1f}x (at {self.utilization:.0%} utilization)")
        out += [f"  used: {r.run_dir} ({r.rate_x:g}x): {r.handler_ns_per_packet:,.0f} ns loop CPU per packet"
                + (f" ({r.handler_work_ns / r.packets:,.0f} of work)" if r.handler_work_ns and r.packets else "")
                + f", {r.idle_loops / r.packets if r.packets else 0:,.1f} idle loops per packet" for r in self.runs]
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
    handler = replay = other = handler_cpu = handler_work = 0.0
    idle = handler_parts = 0
    all_work = True
    for part in plan.get("partitions", []):
        st = ((parts.get(part["name"]) or {}).get("report") or {}).get("stats") or {}
        if "loop_cpu_ns" not in st:
            continue
        ns = int(st["loop_cpu_ns"]) / packets
        ops_kinds = {kinds.get(o.split("[")[0]) for o in part["operators"]}
        if ops_kinds & {"feed_handler", "decision_engine", "elastic_engine"}:
            handler += ns
            handler_cpu += int(st["loop_cpu_ns"])
            idle += int(st.get("idle_loops", 0))
            handler_parts += 1
            busy, wall = st.get("loop_busy_ns"), st.get("loop_wall_ns")
            if busy is not None and wall:
                handler_work += int(st["loop_cpu_ns"]) * min(1.0, int(busy) / int(wall))
            else:
                all_work = False
        elif "feed_sender" in ops_kinds:
            replay += ns
        else:
            other += ns
    if handler <= 0:
        return None
    return RunCost(str(run_dir), float(meta.get("rate_x") or 0.0), handler, replay, other, packets, handler_cpu, idle,
                   handler_parts, handler_work if all_work else 0.0)


def parse_count(text: str, option: str) -> float:
    """'120M', '1.5k', '2e6' -> the number (k, M, G: thousands, millions, billions)."""
    t = text.strip()
    scale = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}.get(t[-1:], 1.0)
    try:
        v = float(t[:-1] if scale != 1.0 else t)
    except ValueError:
        raise CapacityError(f"{option} {text!r}: give a number, optionally with k, M or G (e.g. 120M)") from None
    if not (v > 0 and math.isfinite(v)):
        raise CapacityError(f"{option} {text!r}: must be positive")
    return v * scale


def rate_for_peak_messages(peak_msgs: float, packets_per_s: float, peak_messages_per_s: float) -> float:
    """The rate Nx whose busiest window carries ``peak_msgs`` messages/s: at Nx the replay
    sends N x 24,000 packets/s on average, and the capture's busiest window carries
    peak_messages_per_s / packets_per_s messages per mean packet interval."""
    if packets_per_s <= 0 or peak_messages_per_s <= 0:
        raise CapacityError("the capture has no packets to take a peak from")
    return peak_msgs / (PAPER_1X_PPS * peak_messages_per_s / packets_per_s)


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
    cost = work_cost(runs)
    h = cost.ns_per_packet
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
    if cost.upper_bound:
        notes.append("a partition's CPU time includes its idle polling, so a run that was not saturated overstates "
                     "the cost per packet: plan from runs at different rates (the fit takes the polling out) or "
                     "near the partition's limit")
    replay_cores, other_cores = handlers, 1  # what the written (ring) topology places
    total = handlers + engines + replay_cores + other_cores
    hosts = math.ceil(total / cores_per_host)
    if hosts > 1:
        notes.append(f"{hosts} hosts needed: the written topology places every partition on one host; "
                     f"give it [hosts] and vega-tcp/vega-ib edges (docs/topology.md \"Hosts\")")
    measured_parts = int(statistics.median(r.handler_partitions for r in runs))
    host_mean = measured_parts * 1e9 / h * utilization / PAPER_1X_PPS
    host_peak = host_mean / burst_ratio if burst_ratio > 0 else host_mean
    return CapacityPlan(topology_name, rate_x, peak_window, burst_ratio, peak, utilization, runs, h, cost.method, rp, o,
                        handlers, engines, replay_cores, other_cores, total, cores_per_host, hosts, lines,
                        measured_parts, host_mean, host_peak, notes)


def topology_toml(plan: CapacityPlan, name: str) -> str:
    """A topology of the planned size: feed handler i alone in partition ``fh<i>`` (CPU i),
    engine j in ``de<j>``, sender i in ``replay<i>``, the latency and signal collectors in
    ``collect`` and the ingest collector, which sleeps between its looks, in ``ingest`` beside
    them (in ``collect`` its sleep would stall the collectors' loop); vega-shm between
    partitions (the paper's Vega layout)."""
    h, e = plan.handlers, plan.engines
    out = [f"# Written by `omdp capacity` for {plan.rate_x:g}x of {plan.topology}: a projection from measured",
           f"# costs (peak {plan.peak_window} = {plan.burst_ratio:.2f} x mean, {plan.peak_pps:,.0f} packets/s; "
           f"{plan.handler_ns_per_packet:,.0f} ns of work per packet",
           f"# in a feed handler partition, from {len(plan.runs)} run(s)).",
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
    out += ["[partitions.collect]", 'operators = ["lc", "sig"]', f"cpus = [{2 * h + e}]", 'wait = "spin-block"', "",
            "[partitions.ingest]", 'operators = ["ingest"]', f"cpus = [{2 * h + e}]", 'wait = "spin-block"', ""]
    for j in range(e):
        out += ["[[edges]]", f'from = "fh.de{j}"', f'to = "de[{j}].quotes"', ""]
    out += ["[[edges]]", 'from = "de.samples"', 'to = "lc.in"', "", "[[edges]]", 'from = "de.signals"',
            'to = "sig.in"', ""]
    return "\n".join(out)
