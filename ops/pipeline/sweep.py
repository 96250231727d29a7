"""Rate sweeps (the paper's Figures 5 and 8): every configuration at every rate, one run
each, all runs sharing one ``sweep_id``; the sustainable rate of each configuration.

A configuration is a topology with a set of overrides: the knob set (``tuned``: the
topology's own channel knobs; ``default``: the paper's Vega defaults, queue 128 of 64 KiB
with the mutex on) and the feed handlers' input (``ring`` or ``multicast``). A topology
whose messages cross no channel (fused) has no knobs to vary and runs once per input.

The sustainable rate of a configuration is the highest rate of the sweep that was
sustainable (docs/architecture.md, ``omdp.metrics.definitions.judge``). Rates are run in ascending
order; after ``stop_after_failures`` unsustainable rates in a row a configuration's higher
rates are skipped (recorded as skipped), since a rate the machine cannot sustain is not
sustained at a higher one.
"""
from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omdp.plan import Plan, build_plan
from omdp.topology.load import load_topology
from omdp.units import fmt_us
from ops.netns.veth import VethPair
from ops.pipeline.assemble import RunOptions
from ops.pipeline.registry import build_registry
from ops.pipeline.run_pipeline import PipelineRun, plan_pipeline, run_pipeline
from ops.pipeline.sweep_points import Sweep, SweepPoint
from ops.pipeline.sweep_targets import hop_figure, judge, markdown_lines
from ops.replay.rates import RateSpec

KNOB_SETS: dict[str, tuple[str, ...]] = {
    "tuned": (),
    "default": ("channel.queue_size=128", "channel.max_message=65536", "channel.mutex=true"),
}
"""Overrides of each knob set (the paper's defaults vs the topology's tuned knobs)."""


@dataclass(frozen=True)
class Config:
    """One configuration of a sweep."""

    topology: str
    knobs: str
    input: str
    label: str
    overrides: tuple[str, ...]


INPUTS = ("ring", "multicast", "multicast_veth", "xdp")
"""Feed handler inputs a sweep compares: a Vega ring; multicast through the kernel's UDP
sockets over loopback (``multicast``) or over a veth pair across two namespaces
(``multicast_veth``); and multicast over that pair through AF_XDP on both ends (``xdp``)."""
VETH_INPUTS = ("multicast_veth", "xdp")
"""The inputs that run over a veth pair (root; docs/xdp.md)."""


def input_overrides(topo: Any, inp: str, veth: VethPair | None) -> tuple[str, ...]:
    """The overrides that give the topology's feed handler (and feed sender) input ``inp``.
    Over the veth pair the sender runs in the pair's namespace and sends out of its end (UDP
    socket, or AF_XDP for ``xdp``); the handler receives on the other end (its UDP sockets,
    or AF_XDP for ``xdp``; docs/xdp.md)."""
    fh = _fh_group(topo)
    if inp not in VETH_INPUTS:
        return (f'operators.{fh}.params.input="{inp}"',)
    fs = next((n for n, op in topo.operators.items() if op.kind == "feed_sender"), None)
    if fs is None or veth is None:
        raise ValueError(f"input {inp!r} needs a feed_sender in topology {topo.name!r} and a veth pair")
    out = (f'operators.{fh}.params.input="multicast"', f'operators.{fh}.params.interface="{veth.rx_addr}"',
           f'operators.{fs}.params.interface="{veth.tx_addr}"', f"operators.{fs}.params.ttl=1",
           f'operators.{fs}.params.netns="{veth.ns}"')
    if inp == "xdp":
        out += (f'operators.{fh}.params.receive="xdp"', f'operators.{fh}.params.xdp="{veth.rx}:0"',
                f'operators.{fs}.params.multicast_sender="xdp"', f'operators.{fs}.params.xdp="{veth.tx}:0"')
    return out


def configurations(topologies: list[str], knob_sets: list[str], inputs: list[str],
                   overrides: tuple[str, ...] = (), veth: VethPair | None = None) -> list[Config]:
    """Every (topology, knob set, input); knob sets only where the topology has channels.
    ``veth``: the pair input ``xdp`` runs over."""
    out = []
    for t in topologies:
        topo = load_topology(t, overrides)
        has_channels = data_path_crosses(build_plan(topo, build_registry(), t))
        for knobs in (knob_sets if has_channels else ["-"]):
            for inp in inputs:
                extra = (*KNOB_SETS.get(knobs, ()), *input_overrides(topo, inp, veth))
                label = f"{topo.name} {inp}" + (f" {knobs}" if knobs != "-" else "")
                out.append(Config(t, knobs, inp, label, (*overrides, *extra)))
    return out


def data_path_crosses(plan: Plan) -> bool:
    """True when messages (handler -> engine, or samples -> collector) cross a channel: the
    Vega knobs then matter. A fused pipeline's signal channel alone does not count."""
    for c in plan.channels:
        for r in c.routes:
            op, _, port = r.source.rpartition(".")
            kind = plan.operators[op].kind
            if kind == "feed_handler" or (kind in ("decision_engine", "elastic_engine") and port == "samples"):
                return True
    return False


def _fh_group(topo: Any) -> str:
    return next(n for n, op in topo.operators.items() if op.kind == "feed_handler")


def sweep_dict(sweep: Sweep) -> dict[str, Any]:
    """The sweep as JSON: each configuration's sustainable rate, the targets' verdicts, the points."""
    configs = list(dict.fromkeys(p.config for p in sweep.points))
    return {"sweep_id": sweep.sweep_id, "seconds": sweep.seconds, "capture_date": sweep.capture_date,
            "sustainable": {c: sweep.sustainable_rate(c) for c in configs},
            "targets": [v.as_dict() for v in judge(sweep)],
            "points": [p.__dict__ for p in sweep.points]}


def fused_partition(plan: Plan) -> str | None:
    """The partition that runs a feed handler and decision engines together, if any."""
    for part in plan.partitions:
        kinds = {plan.operators[op].kind for op in part.operators}
        if "feed_handler" in kinds and kinds & {"decision_engine", "elastic_engine"}:
            return part.name
    return None


def handler_copies(plan: Plan) -> str | None:
    """The multicast copies the (first) feed handler joins."""
    fh = next((op for op in plan.operators.values() if op.kind == "feed_handler"), None)
    return None if fh is None else str(fh.params.get("copies", "A,B"))


def new_sweep_id() -> str:
    """A sweep id: time and a random suffix."""
    return f"sweep{time.strftime('%Y%m%dT%H%M%S')}{secrets.token_hex(2)}"


def run_sweep(configs: list[Config], rates: list[str], data_dir: Path, capture_date: str, seconds: float,
              say: Callable[[str], None], stop_after_failures: int = 2, sample_every: int | None = None,
              failed: Callable[[SweepPoint], bool] = lambda p: not p.sustainable) -> Sweep:
    """Run every configuration at every rate (ascending), one run at a time; ``failed`` says
    which points count towards ``stop_after_failures`` (by default the unsustainable ones)."""
    order = sorted(rates, key=lambda r: RateSpec.parse(rate=r).value)
    sweep = Sweep(new_sweep_id(), seconds, capture_date)
    for cfg in configs:
        failures = 0
        for rate in order:
            target = RateSpec.parse(rate=rate).target_pps(0.0)
            point = SweepPoint(cfg.label, rate, target, input=cfg.input)
            sweep.points.append(point)
            if failures >= stop_after_failures:
                point.skipped = True
                continue
            say(f"[{sweep.sweep_id}] {cfg.label} at {rate} ({target:,.0f} packets/s) for {seconds:g} s")
            load_before = os.getloadavg()[0]
            try:
                pp = plan_pipeline(cfg.topology, data_dir, capture_date,
                                   RunOptions(rate=rate, seconds=seconds, sample_every=sample_every), cfg.overrides)
                point.fused_partition, point.copies = fused_partition(pp.plan), handler_copies(pp.plan)
                run: PipelineRun = run_pipeline(pp, data_dir, config=cfg.label, sweep_id=sweep.sweep_id)
            except Exception as e:  # noqa: BLE001 - a failed point is recorded and the sweep goes on
                point.error = f"{type(e).__name__}: {e}"
                failures += 1
                say(f"  failed: {point.error}")
                continue
            point.run = run.to_dict()
            point.load = (load_before, os.getloadavg()[0])
            if not run.result.ok:  # a partition died: a failure of the sweep, not an unsustainable rate
                point.error = f"run {run.result.run_id} failed: {run.result.failure or 'a partition died'}"
                failures += 1
                say(f"  failed: {point.error}")
                continue
            point.sustainable = run.verdict.sustainable
            failures = failures + 1 if failed(point) else 0
            say("  " + point_line(point))
    return sweep


def work_per_packet(p: SweepPoint) -> tuple[str, float] | None:
    """(partition, CPU ns spent working per packet) of the fused partition, or where there
    is none of the partition working most per packet; None without CPU figures."""
    cpu = {name: c for name, c in ((p.run or {}).get("cpu") or {}).items() if c.get("work_ns_per_packet") is not None}
    if not cpu:
        return None
    name = p.fused_partition if p.fused_partition in cpu else max(cpu, key=lambda n: cpu[n]["work_ns_per_packet"])
    return name, float(cpu[name]["work_ns_per_packet"])


def windows_text(p: SweepPoint) -> str:
    """The run's 10 ms windows (omdp.metrics.burst_windows), per feed-handler core: the
    busiest kept up with / the mean msgs/s, how many of the busiest 1% were kept, and the
    windows not kept: by a late send, or queued after an on-time one."""
    w = (p.run or {}).get("windows")
    if not w:
        return "n/a"
    best = w["busiest_kept_msgs_per_s_per_core"]
    return (f"{'none' if best is None else f'{best / 1e6:,.2f} M'} / {w['mean_msgs_per_s_per_core'] / 1e6:,.2f} M "
            f"({w['top_kept']} of {w['top']}; late {w['late_sent']} sent, {w['late_queued']} queued)")


def _work_text(p: SweepPoint) -> str:
    w = work_per_packet(p)
    return "n/a" if w is None else f"{w[1]:,.0f} ({w[0]})"


def verdict_word(p: SweepPoint, yes: str = "sustainable", no: str = "not sustainable") -> str:
    """``yes``, ``no`` or ``unknown``: a run whose verdict could not be judged (too few
    samples for p99 or growth, ``Verdict.judged`` None) is unknown, not yes."""
    if p.sustainable:
        return yes
    return "unknown" if p.run is not None and p.run.get("sustainable") is None and not p.error else no


def point_line(p: SweepPoint) -> str:
    """One line of a point's figures."""
    if p.skipped:
        return f"{p.config:<36} {p.rate:>6}  skipped (lower rates were not sustainable)"
    if p.run is None:
        return f"{p.config:<36} {p.rate:>6}  failed: {p.error}"
    r, a = p.run["replay"], p.run["accounting"]
    mpp = r.get("messages_per_packet") or 0.0
    miss = a.get("missed_ratio")

    us = fmt_us
    return (f"{p.config:<36} {p.rate:>6}  {r['achieved_pps']:>9,.0f} pps {r['achieved_pps'] * mpp:>11,.0f} msg/s  "
            f"missed {'n/a' if miss is None else f'{miss:.4%}'}  e2e mean {us(hop_figure(p.run, 'e2e', 'mean_us'))} "
            f"p99 {us(hop_figure(p.run, 'e2e', 'p99_us'))}  from intended mean {us(hop_figure(p.run, 'e2e_intended', 'mean_us'))}  "
            f"work {_work_text(p)} ns/packet  10 ms windows {windows_text(p)}  {verdict_word(p).upper() if p.sustainable else verdict_word(p)}")


def markdown(sweep: Sweep, command: str, machine: str) -> str:
    """The sweep as the table of docs/benchmarks.md."""
    rows = ["| configuration | rate | achieved packets/s | messages/s | msg/packet | missed | e2e mean (p50 / p99) "
            "| from intended mean (p99) | FH / to DE / DE / to MC mean | work per packet, ns (partition) "
            "| 10 ms windows, msgs/s per handler core: busiest kept up with / mean (busiest 1% kept; late windows) "
            "| sustainable | load before / after |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in sweep.points:
        if p.skipped or p.run is None:
            rows.append(f"| {p.config} | {p.rate} | {'skipped' if p.skipped else 'failed'} | | | | | | | | | no | |")
            continue
        r, a = p.run["replay"], p.run["accounting"]
        mpp = r.get("messages_per_packet") or 0.0
        miss = a.get("missed_ratio")

        def f(hop: str, key: str) -> str:
            return fmt_us(hop_figure(p.run, hop, key))  # type: ignore[arg-type]
        rows.append(
            f"| {p.config} | {p.rate} | {r['achieved_pps']:,.0f} | {r['achieved_pps'] * mpp:,.0f} | {mpp:.2f} | "
            f"{'n/a' if miss is None else f'{miss:.4%}'} | {f('e2e', 'mean_us')} ({f('e2e', 'p50_us')} / {f('e2e', 'p99_us')}) | "
            f"{f('e2e_intended', 'mean_us')} ({f('e2e_intended', 'p99_us')}) | "
            f"{f('fh', 'mean_us')} / {f('to_de', 'mean_us')} / {f('de', 'mean_us')} / {f('to_mc', 'mean_us')} | "
            f"{_work_text(p)} | {windows_text(p)} | {verdict_word(p, 'yes', 'no')} | "
            + (f"{p.load[0]:.1f} / {p.load[1]:.1f} |" if p.load else " |"))
    configs = list(dict.fromkeys(p.config for p in sweep.points))
    summary = [f"- {c}: sustainable up to {sweep.sustainable_rate(c) or 'none of the rates swept'}" for c in configs]
    targets = ["Targets of the hot path (ops/pipeline/sweep_targets.py), judged on this sweep's runs:", "",
               *markdown_lines(judge(sweep))]
    return "\n".join([f"Machine: {machine}", "", f"Command: `{command}` (sweep {sweep.sweep_id}, {sweep.seconds:g} s "
                      f"per run, capture {sweep.capture_date})", "", *rows, "", *summary, "", *targets, ""])
