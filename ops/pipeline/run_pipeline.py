"""Running the OPRA pipeline: assemble a topology with a capture, run it under the
supervisor with the run's stats segment, and report.

Order: the capture is checked and the topology assembled and planned (errors name the
field) before anything starts; then the stats segment ``omdp-<run_id>-stats`` is created
(collectors and handlers publish into it; the dashboard reads it), the plan runs until the
replay ends (``run.stop_after``) or Ctrl-C, and the run directory gets intended.parquet
(the senders' files merged) and meta.parquet beside what the collectors wrote
(samples.parquet, ingest.parquet, signals.parquet). The stats segment and any replay
segment a killed sender left are removed however the run ends. A run that re-shards
(``RunOptions.reshard_buckets``) also gets the reshard segment ``omdp-<run_id>-reshard``
before it starts, the move schedule while it runs (``reshard_every_ms``) and ``reshard.json``
(every move, and their summary) at the end. ``report.json`` holds the report (the
sustainability verdict with its reasons), which ``omdp runs list`` reads.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decision_engines.engine_config import DEFAULT_MAX_SERIES
from feedhandlers.feed_handler import FeedHandlerParams
from omdp.atomic_files import write_text_atomic
from omdp.metrics.breakdown import Breakdown, format_breakdown
from omdp.metrics.burst_windows import BurstWindows, read_burst_windows
from omdp.metrics.definitions import DEFAULT_RULE, Growth, SustainabilityRule, Verdict, judge
from omdp.metrics.run_verdict import p99_from_intended_us, read_growth
from omdp.metrics.stats_segment import StatsWriter
from omdp.native import lib
from omdp.plan import Plan, build_plan
from omdp.runtime.reshard import (LIVE_COUNTERS, SERIES_BYTES, ReshardLive, ReshardSchedule, ReshardSegment,
                                  bucket_homes, summarize_moves)
from omdp.runtime.run import preflight, run_plan
from omdp.runtime.rundir import RunIdError, claim_run_dir, discard_unstarted, new_run_id
from omdp.runtime.shm_room import ring_bytes
from omdp.runtime.supervisor import RunResult
from omdp.topology.load import TopologyError, load_topology
from omdp.units import fmt_ns, fmt_us
from ops.market.run_summary import market_summary
from ops.market.run_summary import summary_line as market_line
from ops.pipeline.assemble import Assembly, RunOptions, assemble, check_engine_edges
from ops.pipeline.capture_info import capture_dir, open_capture
from ops.pipeline.feed_sender import replay_run_id
from ops.pipeline.multicast_lock import MulticastBusy, MulticastLock
from ops.pipeline.registry import build_registry
from ops.pipeline.run_report import (
    Accounting,
    Batching,
    PartitionCost,
    ReplayTotals,
    accounting,
    batching,
    breakdown,
    merge_intended,
    meta_row,
    partition_costs,
    pricing_line,
    replay_totals,
    sender_scheduling,
    stamp_clock_line,
    stamp_clocks,
    summary_dict,
    write_run_meta,
)
from ops.replay.capture_set import read_checked_pcap
from ops.replay.rates import RateSpec
from ops.replay.shm_segments import ctl_name, intended_name

REPORT_FILE = "report.json"
"""The run's report as ``omdp run --json`` gives it (verdict included), in its directory."""

START_ALLOWANCE_S = 120.0
"""A run is stopped (drained) at most this long after its ``seconds``, should the replay
never report its end: starting, reading the capture and draining fit well within it."""

DashboardHook = Callable[[str, Path], Callable[[], None]]
"""Serves a live view of a run: called with the run id (its stats segment) and run
directory once the segment exists; returns the function that stops serving."""


@dataclass
class PipelinePlan:
    """An assembled, planned pipeline, ready to run."""

    assembly: Assembly
    plan: Plan
    source: str
    options: RunOptions | None = None


def plan_pipeline(topology: str | Path, data_dir: str | Path, capture_date: str | dt.date, options: RunOptions,
                  overrides: tuple[str, ...] = ()) -> PipelinePlan:
    """Check the capture, assemble the topology with it and plan it (nothing runs)."""
    source = str(topology)
    capture = open_capture(capture_dir(data_dir, capture_date))
    asm = assemble(load_topology(topology, overrides), capture, options, source)
    plan = build_plan(asm.topology, build_registry(), source)
    check_engine_edges(plan, asm.groups, asm.routing.engines)
    return PipelinePlan(asm, plan, source, options)


@dataclass
class PipelineRun:
    """A finished pipeline run and its report."""

    result: RunResult
    run_dir: Path
    config: str
    accounting: Accounting
    replay: ReplayTotals
    growth: Growth
    verdict: Verdict
    breakdown: Breakdown | None
    sweep_id: str = ""
    batching: Batching | None = None
    costs: list[PartitionCost] | None = None
    clocks: dict[str, dict[str, Any]] | None = None
    reshard: dict[str, Any] | None = None  # write_reshard_record's summary, when the run re-sharded
    market: dict[str, Any] | None = None   # ops.market.run_summary, when the run kept market windows
    windows: BurstWindows | None = None    # the busiest 10 ms windows kept up with (omdp.metrics.burst_windows)

    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready data."""
        return {"run_id": self.result.run_id, "run_dir": str(self.run_dir), "status": self.result.status,
                "failure": self.result.failure, "config": self.config, "sweep_id": self.sweep_id,
                "breakdown": self.breakdown.to_dict() if self.breakdown else None,
                **summary_dict(self.accounting, self.replay, self.growth, self.verdict, self.batching, self.costs,
                                self.clocks),
                "windows": self.windows.as_dict() if self.windows else None,
                "reshard": self.reshard, "market": self.market}

    def text(self) -> str:
        """The report for people: the breakdown table, then ingest, accounting and verdict."""
        a, r = self.accounting, self.replay
        lines = [format_breakdown(self.breakdown) if self.breakdown else "no latency samples (no breakdown)"]
        mpp = r.messages_per_packet
        if r.achieved_pps:
            lines.append(f"feed: {r.achieved_pps:,.0f} packets/s and "
                         f"{r.achieved_pps * (mpp or 0):,.0f} messages/s achieved at {mpp or 0:.2f} messages/packet; "
                         f"target {r.target_pps:,.0f} packets/s; replayer on schedule "
                         + ("n/a" if r.achieved_fraction is None else f"{r.achieved_fraction:.3%}")
                         + ("" if r.pacing_p99_ns is None else
                            f", packets left p99 {fmt_ns(r.pacing_p99_ns)} after their intended time "
                            "(replayer lag, part of the latency from intended)")
                         + f"; {r.laps} lap(s) of the capture" + sender_scheduling(r))
        dead = ", ".join(a.unreported)
        missed = (f"missed unknown (partition {dead} died without its figures; the handlers that reported counted "
                  f"{a.messages_missed:,})") if dead else f"{a.messages_missed:,} missed"
        lines.append(f"ingest: {a.packets_received:,} packets and {a.messages_received:,} messages received, "
                     f"{missed}, {a.packets_duplicate:,} duplicate packets, {a.decode_errors:,} decode errors")
        balance = f"unknown: partition {dead} died" if dead else "ok" if a.balanced else "MISMATCH"
        lines.append(f"accounting: decoded {a.messages_received:,} = routed {a.routed:,} = processed {a.processed:,}"
                     f" ({balance}); sampled {a.sampled:,}, collected {a.collected:,}; "
                     f"{a.signals:,} signals; NBBO vs feed BBO: {a.bbo_mismatches:,} of {a.bbo_checked:,} disagree"
                     + (" (books carry over between laps of the looped capture)" if r.laps > 1 else ""))
        if a.pricing_published or a.pricing_busy or a.pricing_failures:
            lines.append(pricing_line(a))
        b = self.batching
        if b is not None and b.batches:
            hist = ", ".join(f"<={k}: {v:,}" for k, v in b.packets_hist.items() if v)
            lines.append(f"batches to the engines: {b.packets_mean:,.2f} packets and {b.messages_mean:,.1f} messages "
                         f"per batch (mean; max {b.packets_max:,} and {b.messages_max:,}; cap {b.cap_packets} packets) "
                         f"over {b.batches:,} batches; packets per batch {hist}"
                         + (f"; {b.messages_per_engine_call:,.1f} messages per engine call"
                            if b.messages_per_engine_call is not None else ""))
        for c in self.costs or []:
            if c.cpu_ns_per_packet is not None:
                lines.append(f"cpu: partition {c.partition}: {c.cpu_ns_per_packet:,.0f} ns per packet, "
                             f"{c.cpu_ns_per_message or 0:,.1f} ns per message (loop thread CPU {c.cpu_ns / 1e9:,.2f} s "
                             f"over {c.packets:,} packets; busy {c.busy or 0:.0%} of its wall time"
                             + (f", preempted {c.preempted:,} times" if c.preempted is not None else "")
                             + (", SCHED_FIFO" if c.policy == "fifo" else "")
                             + (f"; realtime refused: {c.realtime_refused}" if c.realtime_refused else "") + ")"
                             + (f"; work {c.work_ns_per_packet:,.0f} ns per packet, {c.work_ns_per_message or 0:,.1f} "
                                f"ns per message (working {c.work_fraction or 0:.0%} of its wall time, idle polls "
                                f"left out)" if c.work_ns_per_packet is not None else ""))
        if (clock_line := stamp_clock_line(self.clocks or {})) is not None:
            lines.append(clock_line)
        if a.ring_full_polls:
            lines.append(f"back-pressure: a feed handler found its ring full on {a.ring_full_polls:,} polls "
                         "(the replayer waited for the pipeline)")
        if self.windows is not None:
            lines.append(self.windows.text())
        if self.growth.growing is not None:
            lines.append(f"latency from intended, median: first third {fmt_us(self.growth.first_us)}, "
                         f"last third {fmt_us(self.growth.last_us)}")
        lines.append("sustainable: " + self.verdict.text())
        if (rs := self.reshard) is not None:
            lat = rs["latency_us"]
            lines.append(f"re-sharding: {rs['completed']:,} of {rs['requested']:,} moves completed"
                         + (f"; request -> installed p50 {fmt_us(lat['p50'])}, p99 {fmt_us(lat['p99'])}, "
                            f"max {fmt_us(lat['max'])}" if lat else "")
                         + f"; {rs['held_total']:,} messages held back; {rs['state_bytes']:,} state bytes handed over")
        if self.market is not None:
            lines.append(market_line(self.market))
        lines += [f"warning: {w}" for w in r.warnings]
        lines.append(f"run {self.result.run_id}: {self.result.status}; {self.run_dir}")
        return "\n".join(lines)


def _remove_replay_segments(run_id: str, senders: int) -> None:
    """Segments of replay services that could not clean up after themselves (killed)."""
    for k in range(senders):
        rid = replay_run_id(run_id, k)
        for name in (ctl_name(rid), intended_name(rid)):
            lib.omdp_replay_shm_unlink(name.encode())  # absent: nothing to do


def run_pipeline(pp: PipelinePlan, data_dir: str | Path, *, config: str = "", sweep_id: str = "",
                 echo: Callable[[str], None] | None = None, dashboard: DashboardHook | None = None,
                 run_id: str | None = None) -> PipelineRun:
    """Run an assembled pipeline to its end and report (see the module doc)."""
    asm, plan = pp.assembly, pp.plan
    run_id = run_id or new_run_id()
    preflight(plan, Path(data_dir), run_id, shm_needs(pp))
    for path in asm.capture.line_files():  # the replay reads them again (cached): refused here, nothing is made
        read_checked_pcap(path)
    mlock = _multicast_lock(pp, run_id)
    try:
        rdir = claim_run_dir(Path(data_dir), run_id)
    except RunIdError as e:
        if mlock is not None:
            mlock.release()
        raise TopologyError(pp.source, [("--run-id", str(e))]) from None
    if mlock is not None and mlock.taken_over and echo is not None:
        echo("took over the multicast lock(s) a run that died left: " + "; ".join(mlock.taken_over))
    fs = asm.groups.feed_senders
    senders = asm.groups.replicas[fs] if fs else 0
    fs_params = asm.topology.operators[fs].params if fs else {}
    knobs = {"channel": plan.channels[0].spec.model_dump() if plan.channels else None,
             "fh_input": asm.topology.operators[asm.groups.feed_handler].params.get("input", "ring")}
    try:
        stats = StatsWriter.create(run_id)
    except BaseException:
        discard_unstarted(rdir)
        if mlock is not None:
            mlock.release()
        raise
    stop_dashboard: Callable[[], None] | None = None
    schedule: ReshardSchedule | None = None
    live: ReshardLive | None = None
    reshard: ReshardSegment | None = None
    try:
        reshard = _reshard_segment(pp, run_id)
        stats.set_run_info(state="starting", topology=plan.topology, config=config or plan.topology,
                           run_dir=str(rdir), knobs=knobs,
                           sample_every=int(asm.topology.operators[asm.groups.engines].params.get("sample_every", 1600)),
                           target_pps=_target_pps(fs_params.get("rate", "1x")))
        if dashboard is not None:
            stop_dashboard = dashboard(run_id, rdir)
        seconds = fs_params.get("seconds")
        duration = seconds + START_ALLOWANCE_S if seconds else None
        stats.set_run_info(state="running")
        if reshard is not None:
            entry = stats.register_operator("reshard", "reshard", LIVE_COUNTERS)
            live = ReshardLive(reshard, entry.publish)
            live.start()
        if reshard is not None and pp.options is not None and pp.options.reshard_every_ms > 0:
            schedule = ReshardSchedule(reshard, pp.options.reshard_every_ms / 1e3, asm.routing.engines)
            schedule.start()
        result = run_plan(plan, Path(data_dir), duration, run_id, echo, rdir=rdir)
        if schedule is not None:
            schedule.stop()
        if live is not None:
            live.stop()
        stats.set_run_info(state="done" if result.ok else "failed")
        run = _report(result, rdir, asm, plan, config, sweep_id, knobs, senders, pp.options)
        if reshard is not None:
            run.reshard = write_reshard_record(rdir, reshard, schedule)
        if run.replay.achieved_pps:  # known now: the live page's last snapshots draw it
            stats.set_run_info(achieved_pps=run.replay.achieved_pps)
        write_text_atomic(rdir / REPORT_FILE, json.dumps(run.to_dict(), indent=1, default=str))
        return run
    finally:
        if schedule is not None:
            schedule.stop()
        if live is not None:
            live.stop()
        if reshard is not None:
            reshard.close()
        if stop_dashboard is not None:
            stop_dashboard()
        stats.close()
        _remove_replay_segments(run_id, senders)
        discard_unstarted(rdir)
        if mlock is not None:
            mlock.release()


def _multicast_lock(pp: PipelinePlan, run_id: str) -> MulticastLock | None:
    """With multicast input, this run's lock on its lines' groups and ports (None with ring
    input); TopologyError naming the holder when another run has one of them."""
    asm = pp.assembly
    fh = asm.groups.feed_handler
    if asm.topology.operators[fh].params.get("input", "ring") != "multicast":
        return None
    endpoints = [(ep.group, ep.port) for ln in asm.lines for ep in (ln.a, ln.b) if ep is not None]
    try:
        return MulticastLock.acquire(run_id, endpoints)
    except MulticastBusy as e:
        raise TopologyError(pp.source, [(f"operators.{fh}.params.input", str(e))]) from None


def shm_needs(pp: PipelinePlan) -> dict[str, int]:
    """Shared memory a pipeline run creates besides its plan's rings (name -> bytes): the
    stats segment, the feed handlers' input rings, the reshard segment."""
    asm = pp.assembly
    fh = FeedHandlerParams.model_validate(asm.topology.operators[asm.groups.feed_handler].params)
    needs = {"stats segment": int(lib.omdp_stats_layout_size())}
    if fh.input == "ring":
        needs["feed rings"] = asm.groups.replicas[asm.groups.feed_handler] * ring_bytes(fh.ring_queue_size,
                                                                                         fh.ring_max_message)
    opts = pp.options
    if opts is not None and opts.reshard_buckets:
        max_series = int(asm.topology.operators[asm.groups.engines].params.get("max_series", DEFAULT_MAX_SERIES))
        needs["reshard segment"] = 64 + max_series * SERIES_BYTES
    return needs


def _reshard_segment(pp: PipelinePlan, run_id: str) -> ReshardSegment | None:
    """The run's reshard segment when it re-shards: each bucket's home from the routing, a
    hand-over area that holds a whole engine's series."""
    opts = pp.options
    if opts is None or not opts.reshard_buckets:
        return None
    asm = pp.assembly
    r = asm.routing
    home = bucket_homes(r.underlying_ids, r.root_engines, opts.reshard_buckets, r.engines)
    max_series = int(asm.topology.operators[asm.groups.engines].params.get("max_series", DEFAULT_MAX_SERIES))
    return ReshardSegment.create(run_id, opts.reshard_buckets, r.engines, asm.groups.replicas[asm.groups.feed_handler],
                                 home, 64 + max_series * SERIES_BYTES)


def write_reshard_record(rdir: Path, seg: ReshardSegment, schedule: ReshardSchedule | None) -> dict[str, Any]:
    """``reshard.json`` in the run directory: every move of the log and their summary
    (omdp.runtime.reshard.summarize_moves); returns the summary."""
    moves = seg.moves()
    summary = {**summarize_moves(moves), "totals": seg.totals(),
               "schedule": None if schedule is None else {"period_ms": schedule.period_s * 1e3,
                                                          "issued": schedule.issued, "busy": schedule.busy}}
    write_text_atomic(rdir / "reshard.json", json.dumps({"summary": summary, "moves": moves}, indent=1))
    return summary


def _target_pps(rate: str) -> float:
    """Packets/s of an Nx rate (it does not depend on the capture)."""
    return RateSpec.parse(rate=rate).target_pps(0.0)


def _report(result: RunResult, rdir: Path, asm: Assembly, plan: Plan, config: str, sweep_id: str,
            knobs: dict[str, Any], senders: int, options: RunOptions | None = None) -> PipelineRun:
    merge_intended(rdir, senders)
    acc = accounting(result, asm)
    replay = replay_totals(rdir, senders)
    sample_every = int(asm.topology.operators[asm.groups.engines].params.get("sample_every", 1600))
    write_run_meta(rdir, meta_row(run_id=result.run_id, sweep_id=sweep_id, run_date=rdir.parent.name, assembly=asm,
                                  topology_name=plan.topology, config=config or plan.topology,
                                  knobs_json=json.dumps(knobs, sort_keys=True), replay=replay, acc=acc,
                                  sample_every=sample_every))
    growth = read_growth(rdir)
    bd = breakdown(rdir)
    if bd is not None and acc.unreported:  # what the dead partitions held is not counted: missed is unknown
        bd.messages_sent = bd.messages_missed = None
    bound = options.max_p99_from_intended_us if options is not None else RunOptions.max_p99_from_intended_us
    rule = SustainabilityRule(max_p99_from_intended_us=bound)
    v = judge(achieved_fraction=replay.achieved_fraction, messages_missed=acc.messages_missed,
              messages_seen=acc.messages_received + acc.messages_missed, growth=growth,
              p99_from_intended_us=p99_from_intended_us(bd), failed=not result.ok,
              unreported=tuple(acc.unreported), rule=rule)
    windows = read_burst_windows(rdir, DEFAULT_RULE.max_p99_from_intended_us if bound is None else bound,
                                 asm.groups.replicas[asm.groups.feed_handler])
    return PipelineRun(result=result, run_dir=rdir, config=config or plan.topology, accounting=acc, replay=replay,
                       growth=growth, verdict=v, breakdown=bd,
                       sweep_id=sweep_id, batching=batching(result, asm), costs=partition_costs(result, acc),
                       clocks=stamp_clocks(result), market=market_summary(rdir), windows=windows)
