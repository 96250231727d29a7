"""What a finished pipeline run reports: its accounting, meta.parquet, the merged
intended.parquet, the latency breakdown and whether the rate was sustainable.

Sources: the partitions' final operator counters (run.json), the feed senders' replay
status (``replay-fs<k>/status.json``) and the collectors' files (samples.parquet). Nothing
is measured here; figures are gathered, checked against each other and written.

Sustainable: the rule of ``omdp.metrics.definitions`` (docs/architecture.md), judged from
the run's files as every reader of a run directory judges it (``omdp.metrics.run_verdict``),
with the live run's own bound on p99 from intended and whether the run failed.

Also reported: the batches the feed handlers sent the engines (packets and messages per
batch, ``Batching``) and each partition's loop thread CPU time per packet and per message
(``PartitionCost``).
"""
from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from omdp.atomic_files import atomic_path
from omdp.metrics.breakdown import BASE_PPS, Breakdown
from omdp.metrics.definitions import Growth, Verdict
from omdp.metrics.run_files import RunRecordError, write_meta
from omdp.metrics.run_records import RUN_INTENDED_SCHEMA
from omdp.runtime.machine import cpu_model
from omdp.runtime.supervisor import RunResult
from omdp.units import fmt_us
from ops.pipeline.assemble import Assembly
from ops.pipeline.feed_sender import read_replay_status, replay_dir


@dataclass
class Accounting:
    """Every message of the run, by where it went (sums over instances)."""

    packets_received: int = 0
    packets_duplicate: int = 0
    messages_received: int = 0
    messages_missed: int = 0
    messages_duplicate: int = 0
    decode_errors: int = 0
    routed: int = 0
    unknown_root: int = 0
    ring_full_polls: int = 0
    processed: int = 0
    sampled: int = 0
    signals: int = 0
    collected: int = 0
    bbo_checked: int = 0
    bbo_mismatches: int = 0
    engines: dict[str, dict[str, int]] = field(default_factory=dict)
    pricing_published: int = 0   # the engines' pricing refreshers (PricingRefresher.counters), summed
    pricing_busy: int = 0
    pricing_failures: int = 0
    pricing_us: int = 0
    pricing_cpu_us: int = 0
    pricing_repriced: int = 0
    pricing_series: int = 0
    pricing_last_error: str = ""
    unreported: list[str] = field(default_factory=list)
    """Partitions that died without their final figures: what they held is not accounted,
    so the run's missed and processed messages are unknown (not 0)."""

    @property
    def missed_ratio(self) -> float | None:
        """Missed / (received + missed); None when unknown (nothing seen, or a partition died)."""
        seen = self.messages_received + self.messages_missed
        return self.messages_missed / seen if seen and not self.unreported else None

    @property
    def balanced(self) -> bool:
        """decoded = routed = processed, and every sample reached the collector."""
        return self.messages_received == self.routed == self.processed and self.sampled == self.collected


def accounting(result: RunResult, assembly: Assembly) -> Accounting:
    """Sum the operators' final counters by role."""
    g = assembly.groups
    ops = result.operators()
    a = Accounting(unreported=[name for name, p in result.partitions.items() if not p.get("report")])
    for name, c in ops.items():
        group = name.split("[")[0]
        if group == g.feed_handler:
            a.packets_received += c.get("packets_accepted", 0)
            a.packets_duplicate += c.get("packets_duplicate", 0)
            a.messages_received += c.get("messages_received", 0)
            a.messages_missed += c.get("messages_missed", 0)
            a.messages_duplicate += c.get("messages_duplicate", 0)
            a.decode_errors += c.get("decode_errors", 0)
            a.routed += c.get("routed", 0)
            a.unknown_root += c.get("unknown_root", 0)
            a.ring_full_polls += c.get("ring_full_polls", 0)
        elif group == g.engines:
            a.processed += c.get("processed", 0)
            a.sampled += c.get("sampled", 0)
            a.signals += c.get("signals", 0)
            a.bbo_checked += c.get("bbo_checked", 0)
            a.bbo_mismatches += c.get("bbo_bid_mismatch", 0) + c.get("bbo_offer_mismatch", 0)
            a.engines[name] = {k: c.get(k, 0) for k in ("processed", "quotes", "sampled", "signals", "unrouted")}
            for k in ("published", "busy", "failures", "us", "cpu_us", "repriced", "series"):
                setattr(a, f"pricing_{k}", getattr(a, f"pricing_{k}") + c.get(f"pricing_{k}", 0))
            a.pricing_last_error = c.get("pricing_last_error", a.pricing_last_error)
        elif group in g.latency:
            a.collected += c.get("samples", 0)
    return a


HIST_BUCKETS = ("1", "2", "4", "8", "16", "32", "64")  # packets per batch: 1, 2, 3-4, ..., 33-64


@dataclass
class Batching:
    """Batches across packets, as the feed handlers sent them (one flush = the packets one
    poll found waiting, up to the cap, sent as one batch per engine); sums over instances."""

    cap_packets: int = 0
    batches: int = 0
    packets: int = 0
    messages: int = 0
    packets_max: int = 0
    messages_max: int = 0
    packets_hist: dict[str, int] = field(default_factory=lambda: dict.fromkeys(HIST_BUCKETS, 0))
    engine_calls: int = 0
    """Batches handed to engines (a flush gives one per engine it has messages for)."""
    engine_messages: int = 0

    @property
    def messages_per_engine_call(self) -> float | None:
        """The batch size an engine really sees (``omdp bench engine`` times these sizes)."""
        return self.engine_messages / self.engine_calls if self.engine_calls else None

    @property
    def packets_mean(self) -> float | None:
        return self.packets / self.batches if self.batches else None

    @property
    def messages_mean(self) -> float | None:
        return self.messages / self.batches if self.batches else None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "packets_mean": self.packets_mean, "messages_mean": self.messages_mean,
                "messages_per_engine_call": self.messages_per_engine_call}


def batching(result: RunResult, assembly: Assembly) -> Batching:
    """Sum the feed handlers' coalesce_* counters."""
    b = Batching()
    for name, c in result.operators().items():
        if name.split("[")[0] != assembly.groups.feed_handler:
            continue
        b.cap_packets = max(b.cap_packets, c.get("coalesce_packets", 0))
        b.batches += c.get("coalesce_flushes", 0)
        b.packets += c.get("coalesce_flush_packets", 0)
        b.messages += c.get("coalesce_flush_messages", 0)
        b.packets_max = max(b.packets_max, c.get("coalesce_flush_packets_max", 0))
        b.messages_max = max(b.messages_max, c.get("coalesce_flush_messages_max", 0))
        for k in HIST_BUCKETS:
            b.packets_hist[k] += c.get(f"coalesce_hist_{k}", 0)
        b.engine_calls += c.get("batches_out", 0)
        b.engine_messages += c.get("routed", 0)
    return b


@dataclass
class PartitionCost:
    """One partition's loop: thread CPU time over the run, per packet and per message the
    feed handlers received (the whole run's, whichever partition does the work); and its
    work: ``busy_ns`` is the wall time of the loop iterations that did something (the C
    loop's own measure, on the stamp clock), and the work CPU is that share of the loop's
    wall time applied to its thread CPU time (time the thread was preempted falls on working
    and idle iterations alike). A spinning loop's CPU time is its wall time whatever its
    load, so at a rate the loop keeps up with, CPU per packet is only 1 / rate; work per
    packet is what one packet costs and what a deployment is sized by. ``preempted``: the
    times the kernel gave the loop's core to another thread (involuntary context switches);
    each is a stall of up to a scheduler slice (milliseconds) that queues every packet
    arriving meanwhile, which is what a p99 from intended far above the capacity planner's
    queueing model is made of (docs/pipeline.md "Latency from intended, projected")."""

    partition: str
    cpu_ns: int
    wall_ns: int
    packets: int
    messages: int
    busy_ns: int | None = None
    preempted: int | None = None
    policy: str | None = None             # the loop thread's scheduling: "fifo" (realtime) or "other"
    realtime_refused: str | None = None   # why a realtime partition's loop did not get SCHED_FIFO

    @property
    def cpu_ns_per_packet(self) -> float | None:
        return self.cpu_ns / self.packets if self.packets else None

    @property
    def cpu_ns_per_message(self) -> float | None:
        return self.cpu_ns / self.messages if self.messages else None

    @property
    def work_fraction(self) -> float | None:
        """The working iterations' share of the loop's wall time."""
        return min(1.0, self.busy_ns / self.wall_ns) if self.busy_ns is not None and self.wall_ns else None

    @property
    def work_cpu_ns(self) -> float | None:
        f = self.work_fraction
        return self.cpu_ns * f if f is not None else None

    @property
    def work_ns_per_packet(self) -> float | None:
        w = self.work_cpu_ns
        return w / self.packets if w is not None and self.packets else None

    @property
    def work_ns_per_message(self) -> float | None:
        w = self.work_cpu_ns
        return w / self.messages if w is not None and self.messages else None

    @property
    def busy(self) -> float | None:
        """CPU time over wall time of the loop (a spinning loop is near 1 whatever its load)."""
        return self.cpu_ns / self.wall_ns if self.wall_ns else None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cpu_ns_per_packet": self.cpu_ns_per_packet,
                "cpu_ns_per_message": self.cpu_ns_per_message, "busy": self.busy,
                "work_fraction": self.work_fraction, "work_cpu_ns": self.work_cpu_ns,
                "work_ns_per_packet": self.work_ns_per_packet, "work_ns_per_message": self.work_ns_per_message}


def partition_costs(result: RunResult, acc: Accounting) -> list[PartitionCost]:
    """Per partition: its loop's thread CPU time, per packet and per message received."""
    out = []
    for name, p in sorted(result.partitions.items()):
        st = (p.get("report") or {}).get("stats") or {}
        if "loop_cpu_ns" not in st:
            continue
        busy, preempted = st.get("loop_busy_ns"), st.get("loop_preempted")
        out.append(PartitionCost(name, int(st["loop_cpu_ns"]), int(st.get("loop_wall_ns", 0)), acc.packets_received,
                                 acc.messages_received, int(busy) if busy is not None else None,
                                 int(preempted) if preempted is not None else None, st.get("loop_policy"),
                                 st.get("loop_realtime_refused")))
    return out


def stamp_clocks(result: RunResult) -> dict[str, dict[str, Any]]:
    """Per partition: the clock its hop stamps were read from and, on the TSC, its
    calibration and the drift against CLOCK_REALTIME seen at each heartbeat."""
    return {name: st for name, p in sorted(result.partitions.items())
            if (st := (p.get("report") or {}).get("stamp_clock"))}


def sender_scheduling(r: ReplayTotals) -> str:
    """How the feed senders were scheduled, for the summary's feed line: real-time senders
    keep their schedule on a shared CPU, ordinary ones fall behind in the capture's peaks
    and that lag is counted in the latency from intended (docs/pipeline.md)."""
    if not r.senders:
        return ""
    if r.senders_realtime == r.senders:
        return f"; sender(s) SCHED_FIFO ({r.senders})"
    return (f"; {r.senders - r.senders_realtime} of {r.senders} sender(s) ordinary tasks (not SCHED_FIFO: "
            "their lag in the capture's peaks is in the latency from intended)")


def pricing_line(a: Accounting) -> str:
    """The summary's line on the engines' pricing refreshes: how many were published, their
    mean time (wall and CPU: a niced refresher waits for spare CPU) and the share of series
    each priced again, how many were skipped or failed."""
    n = a.pricing_published
    line = (f"pricing: {n:,} refreshes published"
            + (f" (mean {fmt_us(a.pricing_us / n)}, {fmt_us(a.pricing_cpu_us / n)} of CPU; {a.pricing_repriced / max(a.pricing_series, 1):.1%} of the "
               "series priced again, the others unchanged since the last refresh)" if n else "")
            + f", {a.pricing_busy:,} skipped (the hot path had not taken the last), {a.pricing_failures:,} failed")
    return line + (f" (last: {a.pricing_last_error})" if a.pricing_failures and a.pricing_last_error else "")


def stamp_clock_line(clocks: dict[str, dict[str, Any]]) -> str | None:
    """One line on the stamps' clock for the run summary (None when no partition said)."""
    if not clocks:
        return None
    kinds = sorted({c["clock"] for c in clocks.values()})
    tsc = [c for c in clocks.values() if c["clock"] == "tsc"]
    line = "stamps: " + " and ".join(kinds) + f" clock ({len(tsc)} of {len(clocks)} partitions on the TSC)"
    if tsc:
        drift = max(c.get("max_abs_drift_ns", 0) for c in tsc)
        err = max(c.get("stated_error_ns", 0) for c in tsc)
        checks = sum(c.get("drift_checks", 0) for c in tsc)
        over = sum(c.get("drift_over_error", 0) for c in tsc)
        bounds = [c["checked_bound_ns"] for c in tsc if "checked_bound_ns" in c]
        line += f"; drift against CLOCK_REALTIME at most {drift:,} ns over {checks:,} checks"
        if bounds and not over:
            line += f": stamps within {max(bounds):,} ns of it by the checks"
        line += f" (stated calibration error {err:,} ns; {over:,} checks beyond it)"
    return line


@dataclass
class ReplayTotals:
    """The feed senders' replay figures, summed."""

    target_pps: float = 0.0
    achieved_pps: float = 0.0
    achieved_fraction: float | None = None
    packets_sent: int = 0
    messages_sent: int = 0
    laps: int = 0
    started_ns: int = 0
    ended_ns: int = 0
    pacing_p99_ns: float | None = None
    senders: int = 0
    senders_realtime: int = 0
    """Senders whose loop ran SCHED_FIFO (``realtime``) of the ``senders`` that reported."""
    warnings: list[str] = field(default_factory=list)

    @property
    def messages_per_packet(self) -> float | None:
        return self.messages_sent / self.packets_sent if self.packets_sent else None


def replay_totals(run_dir: Path, senders: int) -> ReplayTotals:
    """Sum the replay status every feed sender wrote."""
    t = ReplayTotals()
    for k in range(senders):
        st = read_replay_status(run_dir, k)
        if st is None:
            continue
        t.target_pps += st.get("target_pps") or 0.0
        t.achieved_pps += st.get("achieved_pps") or 0.0
        f = st.get("achieved_fraction")
        if f is not None:
            t.achieved_fraction = f if t.achieved_fraction is None else min(t.achieved_fraction, f)
        t.packets_sent += st.get("packets_sent") or 0
        t.messages_sent += st.get("messages_sent") or 0
        t.laps = max(t.laps, st.get("laps") or 0)
        t.started_ns = min(filter(None, (t.started_ns, st.get("started_ns") or 0)), default=0)
        t.ended_ns = max(t.ended_ns, st.get("ended_ns") or 0)
        p99 = (st.get("pacing") or {}).get("p99_ns")
        if p99 is not None:
            t.pacing_p99_ns = max(t.pacing_p99_ns or 0.0, p99)
        for s in st.get("senders") or []:
            t.senders += 1
            t.senders_realtime += bool(s.get("realtime"))
        t.warnings += [f"fs{k}: {w}" for w in st.get("warnings") or []]
    return t


def merge_intended(run_dir: Path, senders: int) -> Path | None:
    """The feed senders' intended.parquet files as the run's one intended.parquet."""
    parts = [p for k in range(senders) if (p := replay_dir(run_dir, k) / "intended.parquet").is_file()]
    if not parts:
        return None
    out = Path(run_dir) / "intended.parquet"
    if len(parts) == 1:
        os.replace(parts[0], out)
        return out
    with atomic_path(out) as tmp, pq.ParquetWriter(tmp, RUN_INTENDED_SCHEMA) as w:
        for p in parts:
            f = pq.ParquetFile(p)
            for i in range(f.num_row_groups):
                w.write_table(f.read_row_group(i).cast(RUN_INTENDED_SCHEMA))
    for p in parts:
        p.unlink()
    return out


def meta_row(*, run_id: str, sweep_id: str, run_date: str, assembly: Assembly, topology_name: str, config: str,
             knobs_json: str, replay: ReplayTotals, acc: Accounting, sample_every: int) -> dict[str, Any]:
    """One meta.parquet row (RUN_META_SCHEMA)."""
    return {
        "run_id": run_id, "sweep_id": sweep_id, "date": run_date,
        "capture_date": assembly.capture.date.isoformat(), "topology": topology_name, "config": config,
        "knobs_json": knobs_json, "target_pps": replay.target_pps, "achieved_pps": replay.achieved_pps,
        "rate_x": replay.target_pps / BASE_PPS, "messages_per_packet": replay.messages_per_packet or 0.0,
        "packets_sent": replay.packets_sent, "messages_sent": acc.messages_received + acc.messages_missed,
        "messages_processed": acc.processed, "messages_missed": acc.messages_missed, "sample_every": sample_every,
        "started_ns": replay.started_ns, "ended_ns": replay.ended_ns, "host": platform.node(),
        "cpu_model": cpu_model(), "clock_offset_error_ns": 0,
    }


def write_run_meta(run_dir: Path, row: dict[str, Any]) -> Path:
    """Write meta.parquet."""
    return write_meta(run_dir, row)


def breakdown(run_dir: Path) -> Breakdown | None:
    """The run's breakdown, rebuilt from meta.parquet and samples.parquet (None without samples)."""
    try:
        return Breakdown.from_run_dir(run_dir)
    except RunRecordError:
        return None


def summary_dict(acc: Accounting, replay: ReplayTotals, growth: Growth, v: Verdict, batch: Batching | None = None,
                 costs: list[PartitionCost] | None = None,
                 clocks: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The run's figures as plain data (for --json)."""
    return {"accounting": {**asdict(acc), "missed_ratio": acc.missed_ratio, "balanced": acc.balanced},
            "stamp_clock": clocks or {},
            "batching": batch.as_dict() if batch else None,
            "cpu": {c.partition: c.as_dict() for c in costs or []},
            "replay": {**asdict(replay), "messages_per_packet": replay.messages_per_packet},
            "growth": {**asdict(growth), "growing": growth.growing},
            "sustainable": v.judged, "reasons": v.reasons, "not_judged": v.unknown}
