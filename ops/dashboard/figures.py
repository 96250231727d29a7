"""What the API reports, built from a ``DashboardSource``: one function per endpoint.

The JSON endpoints, the live stream and the page all go through these, so a number on the
page is the number of the API.
"""
from __future__ import annotations

from typing import Any

from omdp.metrics.breakdown import BASE_PPS
from omdp.metrics.definitions import HOP_DEFINITIONS, HOP_KEYS, HOP_LABELS
from omdp.metrics.latency_summary import summarize_hops
from omdp.metrics.stats_segment import LINE_COUNTER_NAMES
from omdp.transport.vega_status import PEER_STATES
from ops.dashboard.models import (
    Counter,
    HistoryPoint,
    Ingest,
    IngestHistory,
    IngestPoint,
    IngestTotals,
    Latency,
    LatencyHistory,
    LineIngest,
    OperatorEntry,
    Operators,
    RunStatus,
    SignalEntry,
    Signals,
    Snapshot,
)
from ops.dashboard.source import DashboardSource, is_gauge

_PEER_NAMES = {int(k): v for k, v in PEER_STATES.items()}


def latency(src: DashboardSource, window_s: int | None, at_ns: int | None = None) -> Latency:
    """Per-hop figures over ``window_s`` seconds up to ``at_ns`` (default: the source's now)."""
    at = at_ns or src.now_ns()
    hops = summarize_hops(src.latency_histograms(window_s, at))
    missing = src.missing_stamps()
    return Latency(
        run_id=src.run_id, source=src.kind, window_s=window_s, at_ns=at,
        sample_every=src.run_status()["sample_every"],
        hops=[{"hop": k, "label": HOP_LABELS[k], "definition": HOP_DEFINITIONS[k], "missing": missing.get(k, 0),
               **hops[k]} for k in HOP_KEYS],
    )


def history(src: DashboardSource, seconds: int, at_ns: int | None = None) -> LatencyHistory:
    """Per-second figures of the last ``seconds`` seconds up to ``at_ns``."""
    at = at_ns or src.now_ns()
    points = [HistoryPoint(second=p["second"], hops=p["hops"]) for p in src.latency_history(seconds, at)]
    return LatencyHistory(run_id=src.run_id, at_ns=at, seconds=seconds, points=points)


def last_second(src: DashboardSource, at_ns: int) -> HistoryPoint | None:
    """The second before ``at_ns``'s (complete by now), or None before the run has one."""
    points = src.latency_history(2, at_ns)
    return HistoryPoint(second=points[0]["second"], hops=points[0]["hops"]) if points else None


def _ratio(missed: int, received: int) -> float | None:
    seen = received + missed
    return missed / seen if seen else None


def _sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def ingest(src: DashboardSource) -> Ingest:
    """Per line and in total: received, missed, duplicates, decode errors, rates now."""
    rows = src.lines()
    lines = [LineIngest(**{k: r[k] for k in ("line", "state", "updated_ns", *LINE_COUNTER_NAMES)},
                        missed_ratio=_ratio(r["messages_missed"], r["messages_received"]),
                        packets_per_s=r["packets_per_s"], messages_per_s=r["messages_per_s"]) for r in rows]
    totals: dict[str, Any] = {k: sum(r[k] for r in rows) for k in LINE_COUNTER_NAMES}
    totals["missed_ratio"] = _ratio(totals["messages_missed"], totals["messages_received"])
    totals["packets_per_s"] = _sum([r["packets_per_s"] for r in rows])
    totals["messages_per_s"] = _sum([r["messages_per_s"] for r in rows])
    return Ingest(run_id=src.run_id, ts_ns=src.now_ns(), lines=lines, totals=IngestTotals(**totals))


def ingest_history(src: DashboardSource, seconds: int) -> IngestHistory:
    """Total packets/s and messages/s over the last ``seconds`` seconds."""
    return IngestHistory(run_id=src.run_id, points=[IngestPoint(**p) for p in src.ingest_history(seconds)])


def _first(counters: dict[str, int], *names: str) -> int | None:
    for n in names:
        if n in counters:
            return counters[n]
    return None


def operators(src: DashboardSource) -> Operators:
    """Every operator and channel with counters, rates, ring figures and process CPU."""
    out = []
    for r in src.operators():
        c = r["counters"]
        peer = _first(c, "peer_state")
        out.append(OperatorEntry(
            name=r["name"], kind=r["kind"], state=r["state"], pid=r["pid"], cpu=r["cpu"] if r["cpu"] >= 0 else None,
            process_cpu_percent=r["process_cpu_percent"], updated_ns=r["updated_ns"],
            counters=[Counter(name=k, value=v, per_s=None if is_gauge(k) else r["rates"].get(k), gauge=is_gauge(k))
                      for k, v in c.items()],
            occupancy=_first(c, "occupancy", "ring_occupancy"), full_events=_first(c, "full_events", "full_ring", "full_waits"),
            spins=_first(c, "spins"), drops=_first(c, "drops"),
            peer_state=None if peer is None else _PEER_NAMES.get(peer, f"state {peer}"),
        ))
    return Operators(run_id=src.run_id, ts_ns=src.now_ns(), operators=out)


def signals(src: DashboardSource, limit: int) -> Signals:
    """The latest ``limit`` signals, newest first, and how many there were."""
    return Signals(run_id=src.run_id, total=src.signals_total(),
                   signals=[SignalEntry(**s) for s in src.signals(limit)])


def run(src: DashboardSource, replay_control: bool, with_plan: bool = True) -> RunStatus:
    """Topology, plan, rates asked and achieved, knobs, uptime."""
    st = src.run_status()
    now = src.now_ns()
    target, achieved = st["target_pps"], st["achieved_pps"]
    end = st["ended_ns"] or now
    verdict = src.verdict()
    return RunStatus(
        run_id=src.run_id, source=src.kind, state=st["state"], topology=st["topology"], config=st["config"],
        run_dir=st["run_dir"], knobs=st["knobs"], plan=st["plan"] if with_plan else None,
        target_pps=target, achieved_pps=achieved,
        target_x=target / BASE_PPS if target else None, achieved_x=achieved / BASE_PPS if achieved else None,
        achieved_fraction=achieved / target if target and achieved is not None else None,
        messages_per_packet=st["messages_per_packet"], sample_every=st["sample_every"],
        started_ns=st["started_ns"], ended_ns=st["ended_ns"], uptime_s=max(0.0, (end - st["started_ns"]) / 1e9),
        heartbeat_age_s=(now - st["heartbeat_ns"]) / 1e9 if st["heartbeat_ns"] else None, pid=st["pid"],
        max_window_s=src.max_window_s, replay_control=replay_control,
        sustainable=verdict.judged if verdict is not None else None,
        sustainable_reasons=[*verdict.reasons, *verdict.unknown] if verdict is not None else [],
    )


def snapshot(src: DashboardSource, window_s: int | None, replay_control: bool, signal_limit: int = 30) -> Snapshot:
    """Everything the page shows, at one instant (one stream event)."""
    at = src.now_ns()
    return Snapshot(
        ts_ns=at, run=run(src, replay_control, with_plan=False), latency=latency(src, window_s, at),
        second=last_second(src, at), ingest=ingest(src), operators=operators(src), signals=signals(src, signal_limit),
    )
