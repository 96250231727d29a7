"""The market job: the market windows of a day's capture computed offline, the table the
live pipeline's leaders merge (docs/market_stats.md), and checked against the live runs of
that capture.

One Spark task per (day, line) reads the line's A and B files, runs the feed handler's own
C rules over them in arrival order (arbitration, decode, routing with the routing table the
live pipeline builds: ``backtest_job.plan_day``) and computes the line's partial windows in
one sequential pass (``ops.market.window_table``); the driver merges the lines' partials by
the leaders' rules (sums, max) - lines split the stream as the feed-handler partitions do -
and writes

    market/date=D/aggregates.parquet   one row per window, dimension and key
    market/date=D/messages.parquet     the messages counted per window
    market/date=D/reconciliation.parquet  per --no-loop live run with market_windows.parquet:
                                       its windows against these, counted

A run whose windows differ (or are incomplete) makes the exit status 1.

Run it as ``omdp analytics market --date D`` or inside ``omdp analytics nightly``.
"""
from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from omdp.atomic_files import write_parquet_atomic
from ops.market.sink import WINDOWS_FILE
from ops.market.window_table import combine, compare_windows, live_tables, merge_partials, partial_tables
from ops.spark.backtest.backtest_feed import LineFiles, OfflineFeedHandler, Routes, packets_format, read_packets
from ops.spark.backtest.backtest_job import plan_day
from ops.spark.backtest.backtest_reconcile import replayed_once
from ops.spark.common.data_layout import DataLayout
from ops.spark.common.file_problems import FileProblem, gather_problems, report_problems
from ops.spark.common.task_map import map_tasks

JOB = "market"
EXIT_MISMATCH = 1
CHUNK_PACKETS = 16_384
"""Packets decoded at a time: the chunk's records are aggregated and dropped, so a line's
day is never held whole."""

WINDOWS_SCHEMA = pa.schema(
    [("date", pa.string()), ("window", pa.int64()), ("start", pa.string()), ("messages", pa.int64()),
     ("quotes", pa.int64()), ("trades", pa.int64()), ("contracts", pa.int64()), ("notional", pa.float64()),
     ("nbbo_changes", pa.int64()), ("underlyings", pa.int64()), ("series", pa.int64()),
     ("top_underlying", pa.int64()), ("top_underlying_messages", pa.int64()), ("quote_shares", pa.string())]
)
"""The report's table: one row per window of the day (the dashboard's market panel, offline)."""

RECONCILE_SCHEMA = pa.schema(
    [("run_id", pa.string()), ("run_date", pa.string()), ("capture_date", pa.string()), ("windows", pa.int64()),
     ("keys", pa.int64()), ("equal", pa.int64()), ("differ", pa.int64()), ("offline_only", pa.int64()),
     ("live_only", pa.int64()), ("messages_differ", pa.int64()), ("incomplete_windows", pa.int64()),
     ("status", pa.string())]
)


@dataclass(frozen=True)
class LineSpec:
    """A day x line task (broadcast)."""

    date: str
    line: LineFiles
    routes: Routes
    window_ms: int
    multiplier: int


@dataclass
class MarketResult:
    """What the job did, per day."""

    dates: list[str]
    messages: int = 0
    windows: int = 0
    keys: int = 0
    reconciliation: list[dict] = field(default_factory=list)
    window_rows: list[dict] = field(default_factory=list)   # WINDOWS_SCHEMA
    problems: list[tuple[str, FileProblem]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def mismatches(self) -> int:
        """Live runs whose windows are not the offline ones."""
        return sum(r["status"] != "ok" for r in self.reconciliation)

    @property
    def exit_status(self) -> int:
        """0, or EXIT_MISMATCH when a live run's windows differ from the offline ones."""
        return EXIT_MISMATCH if self.mismatches else 0


def _ipc(tables: tuple[pa.Table, pa.Table]) -> list[bytes]:
    out = []
    for t in tables:
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, t.schema) as w:
            w.write_table(t)
        out.append(sink.getvalue())
    return out


def run_line(spec: LineSpec) -> dict:
    """One line through the feed handler's rules, a chunk of packets at a time, each chunk's
    records aggregated; the line's partial windows (Arrow IPC) and its problems."""
    problems: list[tuple[str, str, str]] = []
    sources, pkts, files = read_packets([spec.line], problems)
    fh = OfflineFeedHandler(spec.routes, feed_format=packets_format(sources, pkts))
    parts, messages = [], 0
    for i in range(0, max(len(pkts), 1), CHUNK_PACKETS):
        recs = fh.run(sources, np.ascontiguousarray(pkts[i:i + CHUNK_PACKETS]), None)
        messages += len(recs)
        parts.append(partial_tables(recs, spec.window_ms, spec.multiplier))
    return {"date": spec.date, "line": spec.line.line, "messages": messages, "files": files,
            "problems_json": json.dumps(problems), "partial": _ipc(combine(parts))}


def line_tables(ipc: list[bytes]) -> tuple[pa.Table, pa.Table]:
    """A line task's partial (aggregates, messages) back from its Arrow IPC."""
    aggs, counts = (pa.ipc.open_stream(b).read_all() for b in ipc)
    return aggs, counts


def live_market_runs(layout: DataLayout, capture_date: str) -> list[tuple[str, str, Path]]:
    """(run_id, run date, market_windows.parquet) of every ``--no-loop`` run of the capture
    that kept market windows, whatever date it is filed under."""
    found = []
    for path in sorted((layout.root / "runs").glob(f"*/*/{WINDOWS_FILE}")):
        run_dir = path.parent
        try:
            (meta,) = pq.read_table(run_dir / "meta.parquet", columns=["run_id", "date", "capture_date"]).to_pylist()
        except (OSError, ValueError, pa.ArrowException):
            continue
        if meta["capture_date"] == capture_date and replayed_once(run_dir / "plan.json"):
            found.append((meta["run_id"], meta["date"], path))
    return found


def reconcile(offline: tuple[pa.Table, pa.Table], run_id: str, run_date: str, capture_date: str,
              path: Path) -> dict:
    """The RECONCILE_SCHEMA row of one live run's windows against the offline ones."""
    aggs, counts, incomplete = live_tables(pq.read_table(path))
    c = compare_windows(offline, (aggs, counts))
    bad = c["differ"] or c["offline_only"] or c["live_only"] or c["messages_differ"]
    status = "incomplete" if incomplete else "differs" if bad else "ok"
    return {"run_id": run_id, "run_date": run_date, "capture_date": capture_date, **c,
            "incomplete_windows": incomplete, "status": status}


def _clock(ms: int) -> str:
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def window_rows(date: str, aggs: pa.Table, counts: pa.Table) -> list[dict]:
    """WINDOWS_SCHEMA rows: per window its totals (every message counts once per dimension:
    the exchange rows add up to them), its busiest underlying and each exchange's share of
    the quotes."""
    rows = []
    by_window: dict[int, list[dict]] = {}
    for r in aggs.to_pylist():
        by_window.setdefault(r["window"], []).append(r)
    for c in counts.to_pylist():
        keys = by_window.get(c["window"], [])
        ex = sorted((r for r in keys if r["dim"] == "exchange"), key=lambda r: r["key"])
        und = [r for r in keys if r["dim"] == "underlying"]
        top = max(und, key=lambda r: (r["quotes"] + r["trades"], -r["key"]), default=None)
        quotes = sum(r["quotes"] for r in ex)
        rows.append({"date": date, "window": c["window"], "start": _clock(c["start_ms"]), "messages": c["messages"],
                     "quotes": quotes, "trades": sum(r["trades"] for r in ex),
                     "contracts": sum(r["contracts"] for r in ex), "notional": sum(r["notional"] for r in ex) / 1e4,
                     "nbbo_changes": sum(r["nbbo"] for r in ex), "underlyings": len(und),
                     "series": sum(r["dim"] == "series" for r in keys),
                     "top_underlying": top["key"] if top else None,
                     "top_underlying_messages": top["quotes"] + top["trades"] if top else None,
                     "quote_shares": " ".join(f"{chr(r['key']) if 32 < r['key'] < 127 else r['key']} "
                                              f"{100 * r['quotes'] / max(quotes, 1):.1f}%" for r in ex)})
    return rows


def write_report_tables(reports_dir: Path, result: MarketResult) -> None:
    """``market_windows`` and ``market_reconciliation`` of the night in ``reports_dir``."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(pa.Table.from_pylist(result.window_rows, schema=WINDOWS_SCHEMA),
                         reports_dir / "market_windows.parquet")
    write_parquet_atomic(pa.Table.from_pylist(result.reconciliation, schema=RECONCILE_SCHEMA),
                         reports_dir / "market_reconciliation.parquet")


def run_market(spark: SparkSession, layout: DataLayout, dates: list[str], window_ms: int = 1000,
               multiplier: int = 100) -> MarketResult:
    """The market windows of ``dates`` (see the module doc)."""
    started = time.perf_counter()
    result = MarketResult(dates=list(dates))
    specs, plans = [], {}
    for date in dates:
        plan = plan_day(layout, date, 1)
        plans[date] = plan
        if plan.routes is not None:
            specs += [LineSpec(date, lf, plan.routes, window_ms, multiplier) for lf in plan.lines]
    rows = map_tasks(spark, specs, run_line)
    for date, plan in plans.items():
        day = [r for r in rows if r["date"] == date]
        gather_problems(plan.problems, day)
        report_problems(date, JOB, plan.problems)
        result.problems += [(date, p) for p in plan.problems]
        if not day:
            continue
        aggs, counts = merge_partials([line_tables(r["partial"]) for r in day], window_ms)
        out = layout.root / JOB / f"date={date}"
        out.mkdir(parents=True, exist_ok=True)
        write_parquet_atomic(aggs, out / "aggregates.parquet")
        write_parquet_atomic(counts, out / "messages.parquet")
        recon = [reconcile((aggs, counts), rid, rdate, date, path) for rid, rdate, path in live_market_runs(layout, date)]
        write_parquet_atomic(pa.Table.from_pylist(recon, schema=RECONCILE_SCHEMA), out / "reconciliation.parquet")
        result.reconciliation += recon
        result.window_rows += window_rows(date, aggs, counts)
        result.messages += sum(r["messages"] for r in day)
        result.windows += counts.num_rows
        result.keys += aggs.num_rows
    result.seconds = time.perf_counter() - started
    return result


def summary_lines(result: MarketResult) -> list[str]:
    """What the command prints."""
    out = [f"market {', '.join(result.dates)}: {result.messages:,} messages, {result.windows:,} windows, "
           f"{result.keys:,} keys, {result.seconds:.1f} s"]
    out += [f"  reconciliation {r['run_id']}: {r['equal']:,} of {r['keys']:,} keys equal, {r['differ']} differ, "
            f"{r['offline_only']} offline only, {r['live_only']} live only, {r['messages_differ']} windows' "
            f"messages differ, {r['incomplete_windows']} incomplete: {r['status']}" for r in result.reconciliation]
    out += [f"  {date} {p.action}: {p.path}: {p.error}" for date, p in result.problems]
    return out
