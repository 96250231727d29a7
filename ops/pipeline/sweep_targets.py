"""The hot path's run-level targets (docs/benchmarks.md, "Issue targets"), judged on a
sweep's own runs: each target is met, not met, or not judged (the sweep ran no point it
applies to), with the figures of the run that decided it.

The targets are data: the rate each is judged at, the input and the bound. Those about the
fused partition apply to configurations whose plan has one partition holding both the feed
handler and the decision engines (``SweepPoint.fused_partition``) fed by the ring; the
multicast one to configurations receiving copy A only over loopback multicast.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from omdp.metrics.definitions import DEFAULT_RULE
from omdp.units import fmt_us
from ops.pipeline.sweep_points import Sweep, SweepPoint
from ops.replay.rates import RateSpec

WORK_NS_PER_PACKET = 1_000.0
"""Fused partition: CPU time spent working (idle polls left out) per packet, at WORK_RATE."""
WORK_RATE = "20x"
SUSTAINED_RATE = "25x"
SUSTAINED_FRACTION = DEFAULT_RULE.min_achieved_fraction
"""Sustained: the replayer kept SUSTAINED_FRACTION of its schedule (the sustainable test's
share) and no message was missed."""
LATENCY_RATE = "10x"
P50_FROM_INTENDED_US = 50.0
MAX_P99_FROM_INTENDED_US = DEFAULT_RULE.max_p99_from_intended_us
"""With p99 from intended within MAX_P99_FROM_INTENDED_US (the sustainable test's bound)."""
MULTICAST_RATE = "10x"
"""Loopback multicast, copy A only: sustainable (docs/architecture.md) at this rate or above."""


WORK = ("fused partition CPU per packet", f"<= {WORK_NS_PER_PACKET:,.0f} ns of work per packet at {WORK_RATE}")
SUSTAINED = (f"{SUSTAINED_RATE} sustained", f">= {SUSTAINED_FRACTION:.2%} of schedule and 0 missed at {SUSTAINED_RATE}")
LATENCY = (f"latency from intended at {LATENCY_RATE}",
           f"p50 <= {P50_FROM_INTENDED_US:g} us, p99 <= {MAX_P99_FROM_INTENDED_US:,.0f} us at {LATENCY_RATE}")
MULTICAST = ("loopback multicast, A only", f"sustainable at {MULTICAST_RATE} or above")
"""(target, goal) of each, as the tables print them."""


@dataclass(frozen=True)
class TargetVerdict:
    """One target on one configuration of the sweep (or on none: not judged)."""

    target: str
    goal: str
    config: str | None
    measured: str
    met: bool | None          # None: not judged
    run_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _x(rate: str) -> float:
    return RateSpec.parse(rate=rate).value


def _ran(points: Iterable[SweepPoint], rate: str, pick: Callable[[SweepPoint], bool]) -> list[SweepPoint]:
    """The points at ``rate`` that ran (not skipped, not failed) and that ``pick`` keeps."""
    return [p for p in points if p.run is not None and _x(p.rate) == _x(rate) and pick(p)]


def _fused_ring(p: SweepPoint) -> bool:
    return p.fused_partition is not None and p.input == "ring"


def hop_figure(run: dict[str, Any] | None, hop: str, key: str) -> float | None:
    """One figure of a run's breakdown (``hop`` e.g. ``e2e_intended``, ``key`` e.g. ``p99_us``),
    None where the run or the figure is missing."""
    b = (run or {}).get("breakdown") or {}
    return ((b.get("hops") or {}).get(hop) or {}).get(key)


def _intended(p: SweepPoint, key: str) -> float | None:
    return hop_figure(p.run, "e2e_intended", key)


def _work(p: SweepPoint) -> TargetVerdict:
    cpu = ((p.run or {}).get("cpu") or {}).get(p.fused_partition or "") or {}
    ns = cpu.get("work_ns_per_packet")
    if ns is None:
        return TargetVerdict(*WORK, p.config, "no CPU figures", None, _run_id(p))
    per_msg = cpu.get("work_ns_per_message")
    measured = f"{ns:,.0f} ns per packet" + (f", {per_msg:.1f} ns per message" if per_msg is not None else "") + \
        f" (partition {p.fused_partition}, working {cpu.get('work_fraction', 0.0):.0%} of its time)"
    return TargetVerdict(*WORK, p.config, measured, ns <= WORK_NS_PER_PACKET, _run_id(p))


def _sustained(p: SweepPoint) -> TargetVerdict:
    rep, acc = (p.run or {}).get("replay") or {}, (p.run or {}).get("accounting") or {}
    frac, missed = rep.get("achieved_fraction"), acc.get("messages_missed")
    if frac is None or missed is None:
        return TargetVerdict(*SUSTAINED, p.config, "no schedule or accounting figures", None, _run_id(p))
    measured = f"{frac:.4%} of schedule, {missed:,} of {acc.get('messages_received', 0):,} messages missed"
    return TargetVerdict(*SUSTAINED, p.config, measured, frac >= SUSTAINED_FRACTION and missed == 0, _run_id(p))


def _latency(p: SweepPoint) -> TargetVerdict:
    p50, p99 = _intended(p, "p50_us"), _intended(p, "p99_us")
    if p50 is None or p99 is None:
        return TargetVerdict(*LATENCY, p.config, "no latency samples", None, _run_id(p))
    met = p50 <= P50_FROM_INTENDED_US and p99 <= MAX_P99_FROM_INTENDED_US
    return TargetVerdict(*LATENCY, p.config, f"p50 {fmt_us(p50)}, p99 {fmt_us(p99)}", met, _run_id(p))


def _run_id(p: SweepPoint) -> str | None:
    return (p.run or {}).get("run_id")


def _multicast(sweep: Sweep) -> list[TargetVerdict]:
    configs = list(dict.fromkeys(p.config for p in sweep.points if p.input == "multicast" and p.copies == "A"))
    out = []
    for c in configs:
        points = [p for p in sweep.points if p.config == c]
        if not any(_x(p.rate) >= _x(MULTICAST_RATE) for p in points):
            out.append(TargetVerdict(*MULTICAST, c, f"no rate of {MULTICAST_RATE} or above in the sweep", None))
            continue
        best = sweep.sustainable_rate(c)
        at = next((p for p in points if p.run is not None and _x(p.rate) == _x(MULTICAST_RATE)), None)
        measured = f"sustainable up to {best or 'none of the rates swept'}"
        if at is not None:
            p99 = _intended(at, "p99_us")
            measured += (f"; at {MULTICAST_RATE}: {((at.run or {}).get('accounting') or {}).get('messages_missed', 0):,} "
                         f"missed, p99 from intended {fmt_us(p99)}")
        out.append(TargetVerdict(*MULTICAST, c, measured, best is not None and _x(best) >= _x(MULTICAST_RATE),
                                 _run_id(at) if at is not None else None))
    return out or [TargetVerdict(*MULTICAST, None, "no multicast configuration receiving copy A only", None)]


def judge(sweep: Sweep) -> list[TargetVerdict]:
    """Every target on every configuration it applies to; a target no point applies to is
    one row, not judged."""
    out: list[TargetVerdict] = []
    for (name, goal), rate, check in ((WORK, WORK_RATE, _work), (SUSTAINED, SUSTAINED_RATE, _sustained),
                                      (LATENCY, LATENCY_RATE, _latency)):
        points = _ran(sweep.points, rate, _fused_ring)
        out += [check(p) for p in points] or [
            TargetVerdict(name, goal, None, f"no {rate} run of a fused configuration fed by the ring", None)]
    return out + _multicast(sweep)


def markdown_lines(verdicts: list[TargetVerdict]) -> list[str]:
    """The verdicts as a table (met / not met / not judged)."""
    rows = ["| target | goal | configuration | measured | met |", "|---|---|---|---|---|"]
    for v in verdicts:
        met = "not judged" if v.met is None else ("met" if v.met else "**not met**")
        rows.append(f"| {v.target} | {v.goal} | {v.config or '-'} | {v.measured} | {met} |")
    return rows
