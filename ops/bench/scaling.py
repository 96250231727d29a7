"""``omdp bench scaling``: the paper's shared-memory layout at several core counts, each swept
over rising rates, so that a deployment can be sized from measured points: per core count the
highest sustainable rate (every rule of docs/architecture.md, the bound on p99 from intended
included), the highest rate it kept up with (the same rules less that bound: schedule kept,
nothing missed, latency not growing) and the latency from intended and from ``fh_in`` at
each rate.

The layouts are ``ops.pipeline.scaled_layout``'s, written as topology files beside the results
so that any point can be rerun with ``omdp run``. A core count's rates stop after
``stop_after_failures`` rates in a row that it did not keep up with.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omdp.metrics.definitions import DEFAULT_RULE
from omdp.units import fmt_us
from ops.pipeline.scaled_layout import CORES_PER_SENDER, scaled_layout, scaled_topology_toml
from ops.pipeline.sweep import Config, hop_figure, run_sweep
from ops.pipeline.sweep_points import Sweep, SweepPoint

P99_BOUND_REASON = "p99 latency from intended"
"""How a verdict's reason for the p99 bound begins (omdp.metrics.definitions.judge)."""


def kept_up(point: SweepPoint) -> bool:
    """The run kept its schedule, missed nothing and its latency did not grow: every rule of
    a sustainable rate but the bound on p99 from intended (failed or not judged)."""
    if point.run is None:
        return False
    return all(r.startswith(P99_BOUND_REASON) for r in _reasons(point.run))


def _reasons(run: dict[str, Any]) -> list[str]:
    """Why a run is not sustainable: the tests it failed, then those it could not judge."""
    return list(run.get("reasons", [])) + list(run.get("not_judged", []))


def usable_cpus() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0))


def write_topologies(cores: list[int], out_dir: Path, cores_per_sender: int = CORES_PER_SENDER) -> dict[int, Path]:
    """One topology file per core count under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for n in cores:
        path = out_dir / f"paper_shm_{n}c.toml"
        path.write_text(scaled_topology_toml(n, cores_per_sender))
        paths[n] = path
    return paths


@dataclass
class ScalingPoint:
    """One core count at one rate."""

    cores: int
    rate: str
    target_pps: float
    skipped: bool
    error: str | None
    achieved_fraction: float | None = None
    missed_ratio: float | None = None
    intended_p50_us: float | None = None
    intended_p99_us: float | None = None
    fh_in_p50_us: float | None = None
    fh_in_p99_us: float | None = None
    pacing_p99_us: float | None = None
    """The senders' pacing error p99 (how late a packet left against its intended time)."""
    handler_ns_per_packet: float | None = None
    engine_ns_per_packet: float | None = None
    busiest_work_share: float | None = None
    sustainable: bool = False
    kept_up: bool = False
    reasons: list[str] = field(default_factory=list)
    run_dir: str | None = None


@dataclass
class ScalingResult:
    """Every point, each core count's layout and its highest rates."""

    capture_date: str
    seconds: float
    bound_us: float
    layouts: dict[int, str]
    topologies: dict[int, str]
    points: list[ScalingPoint]
    sweep_id: str

    def highest(self, cores: int, pick: Callable[[ScalingPoint], bool]) -> str | None:
        ok = [p for p in self.points if p.cores == cores and pick(p)]
        return max(ok, key=lambda p: p.target_pps).rate if ok else None

    def summary(self) -> dict[int, dict[str, str | None]]:
        return {n: {"sustainable": self.highest(n, lambda p: p.sustainable),
                    "kept_up": self.highest(n, lambda p: p.kept_up)} for n in self.layouts}

    def to_dict(self) -> dict[str, Any]:
        return {"capture_date": self.capture_date, "seconds": self.seconds, "bound_us": self.bound_us,
                "sweep_id": self.sweep_id, "layouts": self.layouts, "topologies": self.topologies,
                "summary": self.summary(), "points": [p.__dict__ for p in self.points]}


def _tier_work(run: dict[str, Any] | None, prefixes: tuple[str, ...]) -> float | None:
    """The work (CPU while not idle) of the partitions named with ``prefixes``, summed, per
    packet of the run: what one packet costs that tier, however many partitions share it."""
    if run is None:
        return None
    parts = [c for name, c in (run.get("cpu") or {}).items() if name.startswith(prefixes)]
    work = [c.get("work_cpu_ns") for c in parts]
    packets = max((c.get("packets") or 0 for c in parts), default=0)
    if not parts or any(w is None for w in work) or not packets:
        return None
    return sum(work) / packets


def _busiest(run: dict[str, Any] | None) -> float | None:
    """The largest working share of a handler's or engine's loop (how close the tier is to full)."""
    shares = [c.get("work_fraction") for name, c in ((run or {}).get("cpu") or {}).items()
              if name.startswith(("fh", "de", "app"))]
    shares = [s for s in shares if s is not None]
    return max(shares) if shares else None


def _point(cores: int, p: SweepPoint) -> ScalingPoint:
    r = p.run
    out = ScalingPoint(cores, p.rate, p.target_pps, p.skipped, p.error)
    if r is None:
        return out
    out.achieved_fraction = r["replay"].get("achieved_fraction")
    out.missed_ratio = r["accounting"].get("missed_ratio")
    out.intended_p50_us = hop_figure(r, "e2e_intended", "p50_us")
    out.intended_p99_us = hop_figure(r, "e2e_intended", "p99_us")
    out.fh_in_p50_us = hop_figure(r, "e2e", "p50_us")
    out.fh_in_p99_us = hop_figure(r, "e2e", "p99_us")
    pacing = r["replay"].get("pacing_p99_ns")
    out.pacing_p99_us = pacing / 1000 if pacing is not None else None
    out.handler_ns_per_packet = _tier_work(r, ("fh", "app"))
    out.engine_ns_per_packet = _tier_work(r, ("de",))
    out.busiest_work_share = _busiest(r)
    out.sustainable, out.kept_up = p.sustainable, kept_up(p)
    out.reasons, out.run_dir = _reasons(r), r.get("run_dir")
    return out


def run_scaling(cores: list[int], rates: list[str], data_dir: Path, capture_date: str, seconds: float,
                out_dir: Path, say: Callable[[str], None], stop_after_failures: int = 2,
                sample_every: int | None = None, cores_per_sender: int = CORES_PER_SENDER,
                overrides: tuple[str, ...] = ()) -> ScalingResult:
    """Write the layouts and sweep each over ``rates``; ``overrides`` (``--set``) apply to
    every layout."""
    have = usable_cpus()
    too_big = [n for n in cores if n > have]
    if too_big:
        raise ValueError(f"--cores {too_big[0]}: this machine lets omdp use {have} CPUs")
    layouts = {n: scaled_layout(n, cores_per_sender).describe() for n in cores}
    paths = write_topologies(cores, out_dir, cores_per_sender)
    configs = [Config(str(paths[n]), "-", "multicast", f"{n} cores", overrides) for n in cores]
    sweep: Sweep = run_sweep(configs, rates, data_dir, capture_date, seconds, say,
                             stop_after_failures=stop_after_failures, sample_every=sample_every,
                             failed=lambda p: not kept_up(p))
    by_label = {f"{n} cores": n for n in cores}
    points = [_point(by_label[p.config], p) for p in sweep.points]
    return ScalingResult(capture_date, seconds, DEFAULT_RULE.max_p99_from_intended_us, layouts,
                         {n: str(p) for n, p in paths.items()}, points, sweep.sweep_id)


def _ns(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def markdown(result: ScalingResult, command: str, machine: str) -> str:
    """The table for docs/benchmarks.md."""
    rows = ["| cores | rate | packets/s target | schedule kept | missed | from intended p50 / p99 "
            "| from `fh_in` p50 / p99 | senders' pacing p99 | work ns/packet: handlers / engines | busiest loop working | kept up "
            "| sustainable |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in result.points:
        if p.skipped or p.error:
            rows.append(f"| {p.cores} | {p.rate} | {p.target_pps:,.0f} | {'skipped' if p.skipped else 'failed'} "
                        f"| | | | | | | no | no |")
            continue
        rows.append(
            f"| {p.cores} | {p.rate} | {p.target_pps:,.0f} | "
            f"{'n/a' if p.achieved_fraction is None else f'{p.achieved_fraction:.3%}'} | "
            f"{'n/a' if p.missed_ratio is None else f'{p.missed_ratio:.4%}'} | "
            f"{fmt_us(p.intended_p50_us)} / {fmt_us(p.intended_p99_us)} | {fmt_us(p.fh_in_p50_us)} / {fmt_us(p.fh_in_p99_us)} | "
            f"{fmt_us(p.pacing_p99_us)} | "
            f"{_ns(p.handler_ns_per_packet)} / {_ns(p.engine_ns_per_packet)} | "
            f"{'n/a' if p.busiest_work_share is None else f'{p.busiest_work_share:.0%}'} | "
            f"{'yes' if p.kept_up else 'no'} | {'yes' if p.sustainable else 'no'} |")
    summary = result.summary()
    lines = [f"- {n} cores ({result.layouts[n].split(': ', 1)[-1]}): sustainable (p99 from intended <= "
             f"{fmt_us(result.bound_us)}) up to {s['sustainable'] or 'none of the rates run'}; kept up to "
             f"{s['kept_up'] or 'none of the rates run'}" for n, s in summary.items()]
    errors = [f"- {p.cores} cores at {p.rate}: {p.error}" for p in result.points if p.error]
    return "\n".join([f"Machine: {machine}", "", f"Command: `{command}` (sweep {result.sweep_id}, {result.seconds:g} s "
                      f"per run, capture {result.capture_date}, multicast A only)", "", *rows, "", *lines,
                      *(["", "Failed runs:", *errors] if errors else []), ""])
