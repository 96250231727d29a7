"""The backtest job: the decision engines over days of captures, offline, on Spark
(docs/analytics.md "Backtest").

Per day the driver plans: the capture files per line (A and B, rotation order), the routing
table the live pipeline would build for the capture (``feedhandlers.routing``: underlyings
balanced over ``buckets`` engines by their message counts), and the live ``--no-loop`` runs
of that capture to reconcile with. Two Spark stages (``backtest_task``): one task per (day,
line) decodes and routes the line once with the feed handler's C rules and stages its
records per bucket (``backtest_stage``); then one task per (day, bucket) merges its bucket's
records of every line in time order, runs the C engine once per configuration and writes
its part of

    backtest/date=D/config=<name>/signals/       BACKTEST_SIGNALS_SCHEMA
    backtest/date=D/config=<name>/underlyings/   BACKTEST_UNDERLYINGS_SCHEMA
    backtest/date=D/config=<name>/smiles/        BACKTEST_SMILES_SCHEMA (every capture minute)

The driver then writes per day ``backtest/date=D/``: ``configs`` (signal counts per
configuration),
``lines`` (the feed handler's counters per line), ``skipped_files``, and - when live runs of
the capture were found - ``reconciliation`` and ``reconciliation_mismatches``
(``backtest_reconcile``). A mismatch makes the exit status 1.

Run it as ``omdp analytics backtest --date D`` or ``spark-submit ops/spark/backtest/backtest_job.py --date D``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from feedhandlers.captures import Capture, PcapError, read_capture
from feedhandlers.routing import build_routing, count_roots
from omdp.atomic_files import write_parquet_atomic
from ops.pipeline.capture_info import open_capture
from ops.spark.backtest.backtest_config import BacktestConfig, load_configs
from ops.spark.backtest.backtest_feed import LineFiles, Routes
from ops.spark.common.data_layout import DEFAULT_DATA_DIR, DataLayout, check_date
from ops.spark.common.file_problems import FileProblem, gather_problems, report_problems
from ops.spark.backtest.backtest_reconcile import (
    RECONCILE_MISMATCH_SCHEMA,
    RECONCILE_SCHEMA,
    REFERENCE,
    LiveRun,
    find_live_runs,
    reconcile_run,
)
from ops.spark.backtest.backtest_score import score_config, truth_keys, truth_path
from ops.spark.backtest.backtest_stage import STAGE_DIR
from ops.spark.backtest.backtest_task import TASK_STATUS_SCHEMA, DecodeSpec, EngineSpec, run_task
from ops.spark.common.session import build_session
from ops.spark.common.task_map import map_tasks, typed_rows

JOB = "backtest"
EXIT_MISMATCH = 1

BACKTEST_CONFIGS_SCHEMA = pa.schema(
    [("date", pa.string()), ("config", pa.string()), ("messages", pa.int64()), ("signals", pa.int64()),
     ("crossed", pa.int64()), ("locked", pa.int64()), ("off_smile", pa.int64()), ("parity", pa.int64()),
     ("refreshes", pa.int64()), ("table_full", pa.int64()), ("nbbo_changes", pa.int64()),
     ("engine_cpu_s", pa.float64()),
     # against the synthetic ground truth (null without one): ops/spark/backtest/backtest_score.py
     ("precision", pa.float64()), ("recall", pa.float64()), ("true_positives", pa.int64()), ("events", pa.int64()),
     ("detected", pa.int64()), ("config_json", pa.string())]
)
BACKTEST_LINES_SCHEMA = pa.schema(
    [("date", pa.string()), ("line", pa.int32()), ("packets_a", pa.int64()), ("packets_b", pa.int64()),
     ("packets_accepted", pa.int64()), ("packets_duplicate", pa.int64()), ("decode_errors", pa.int64()),
     ("bad_packets", pa.int64()), ("accepted", pa.int64()), ("duplicates", pa.int64()), ("missed", pa.int64()),
     ("resets", pa.int64()), ("no_root", pa.int64()), ("unknown_root", pa.int64())]
)
BACKTEST_SKIPPED_SCHEMA = pa.schema(
    [("date", pa.string()), ("job", pa.string()), ("path", pa.string()), ("action", pa.string()),
     ("error", pa.string())]
)


@dataclass(frozen=True)
class BacktestOptions:
    """What the backtest runs: configurations, engine buckets (None: the cluster's default
    parallelism), and whether to reconcile with the capture's live runs."""

    configs: tuple[BacktestConfig, ...] = (BacktestConfig(),)
    buckets: int | None = None
    reconcile: bool = True


@dataclass
class DayPlan:
    """One day, planned on the driver."""

    date: str
    lines: list[LineFiles]
    routes: Routes | None
    problems: list[FileProblem]
    runs: list[LiveRun] = field(default_factory=list)
    truth: Path | None = None              # the capture's ground truth, when synthetic


@dataclass
class BacktestResult:
    """What the job did, per day."""

    dates: list[str]
    messages: int = 0
    files: int = 0
    tasks: list[dict] = field(default_factory=list)
    configs: list[dict] = field(default_factory=list)
    reconciliation: list[dict] = field(default_factory=list)
    problems: list[tuple[str, FileProblem]] = field(default_factory=list)
    seconds: float = 0.0
    capture_span_s: float = 0.0

    @property
    def mismatches(self) -> int:
        """Reconciliation mismatches over every run reconciled."""
        return sum(r["mismatches"] for r in self.reconciliation)

    @property
    def task_cpu_s(self) -> float:
        """Thread CPU seconds of every task (decode, route, engines)."""
        return sum(t["cpu_s"] for t in self.tasks)

    @property
    def exit_status(self) -> int:
        """0, or EXIT_MISMATCH when a live run disagrees with the backtest."""
        return EXIT_MISMATCH if self.mismatches else 0


def date_range(first: str, last: str | None) -> list[str]:
    """Every date from ``first`` to ``last`` (inclusive); raises ValueError naming --to."""
    d0 = dt.date.fromisoformat(check_date(first))
    d1 = dt.date.fromisoformat(check_date(last)) if last else d0
    if d1 < d0:
        raise ValueError(f"--to {last} is before --date {first}")
    return [(d0 + dt.timedelta(days=i)).isoformat() for i in range((d1 - d0).days + 1)]


def _readable(paths: list[str], problems: list[FileProblem]) -> list[Capture]:
    """The files that read as captures (read once: the routing counts them as they are);
    the others reported."""
    ok = []
    for p in paths:
        try:
            ok.append(read_capture(p))
        except (PcapError, OSError, ValueError) as exc:
            problems.append(FileProblem(p, "skipped", str(exc)))
    return ok


def plan_day(layout: DataLayout, date: str, buckets: int) -> DayPlan:
    """The day's lines and files, the live routing for ``buckets`` engines, problems."""
    problems: list[FileProblem] = []
    files = layout.capture_files(date, "AB")
    lines: dict[int, dict[str, list[str]]] = {}
    for f in files:
        lines.setdefault(f.line, {"A": [], "B": []})[f.copy].append(f.path)
    plan_lines = [LineFiles(ln, tuple(c["A"]), tuple(c["B"])) for ln, c in sorted(lines.items())]
    if not files:
        return DayPlan(date, [], None, problems)
    try:
        info = open_capture(layout.captures(date), check_sizes=False)  # each file is judged below
    except Exception as exc:  # CaptureInputError and whatever a bad manifest raises: reported, day skipped
        problems.append(FileProblem(str(layout.manifest(date)), "skipped", f"{exc}; the day is not backtested"))
        return DayPlan(date, plan_lines, None, problems)
    readable_a = _readable([p for c in lines.values() for p in c["A"]], problems)
    _readable([p for c in lines.values() for p in c["B"]], problems)  # reported now; the task skips them too
    routing = build_routing(info.root_underlying, count_roots(readable_a), buckets)
    routes = Routes(routing.engines, tuple(routing.roots), tuple(routing.underlying_ids), tuple(routing.root_engines))
    return DayPlan(date, plan_lines, routes, problems)


def bucket_needs(rows: list[dict]) -> dict[tuple[str, int], tuple[int, int]]:
    """(date, bucket) -> (series, groups): the decode tasks' sizes (``backtest_stage.BucketSizes``)
    summed over the day's lines; engine rows are passed over."""
    need: dict[tuple[str, int], tuple[int, int]] = {}
    for r in rows:
        sizes = json.loads(r["sizes_json"] or "{}") if r["stage"] == "decode" else {}
        for b, (s, g) in enumerate(zip(sizes.get("series", ()), sizes.get("groups", ()))):
            s0, g0 = need.get((r["date"], b), (0, 0))
            need[r["date"], b] = (s0 + s, g0 + g)
    return need


def sized(engines: list[EngineSpec], decode_rows: list[dict]) -> list[EngineSpec]:
    """The engine tasks with each bucket's series and groups (``bucket_needs``): what the
    bucket's engines are sized for unless a configuration says otherwise
    (``BacktestConfig.slots``)."""
    need = bucket_needs(decode_rows)
    return [replace(e, series=need[e.date, e.bucket][0], groups=need[e.date, e.bucket][1])
            if (e.date, e.bucket) in need else e for e in engines]


def run_tasks(spark: SparkSession, specs: list[DecodeSpec] | list[EngineSpec]) -> list[dict]:
    """One Spark task per spec (``task_map``); the status rows (typed by
    TASK_STATUS_SCHEMA), in spec order."""
    return typed_rows(map_tasks(spark, specs, run_task), TASK_STATUS_SCHEMA)


def _write(rows: list[dict], folder: Path, schema: pa.Schema) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(pa.Table.from_pylist(rows, schema=schema), folder / "part-0.parquet")


def _scores(plan: DayPlan, cfg: BacktestConfig, engine_rows: list[dict], out_dir: Path) -> dict:
    """Precision and recall of a configuration against the day's ground truth (None without one)."""
    if plan.truth is None:
        return {"precision": None, "recall": None, "true_positives": None, "events": None, "detected": None}
    quotes = [q for r in engine_rows for q in json.loads(r["truth_json"])]
    s = score_config(out_dir / f"config={cfg.name}" / "signals", quotes, plan.truth)
    return {"precision": s.precision, "recall": s.recall, "true_positives": s.true_positives, "events": s.events,
            "detected": s.detected}


def _day_tables(plan: DayPlan, rows: list[dict], configs: tuple[BacktestConfig, ...], out_dir: Path,
                result: BacktestResult) -> None:
    date = plan.date
    lines: dict[int, dict] = {}
    for r in rows:  # one decode task per line
        for ln, c in json.loads(r["lines_json"]).items():
            lines[int(ln)] = c
    _write([{"date": date, "line": ln, **{k: c[k] for k in BACKTEST_LINES_SCHEMA.names if k in c}}
            for ln, c in sorted(lines.items())], out_dir / "lines", BACKTEST_LINES_SCHEMA)
    gather_problems(plan.problems, rows)
    _write([p.row(date, JOB) for p in plan.problems], out_dir / "skipped_files", BACKTEST_SKIPPED_SCHEMA)
    engine_rows = [r for r in rows if r["stage"] == "engines"]
    messages = sum(r["messages"] for r in engine_rows)
    cfg_rows = []
    for cfg in configs:
        per = [json.loads(r["configs_json"])[cfg.name] for r in engine_rows]
        kinds: dict[str, int] = {}
        for p in per:
            for k, n in p["kinds"].items():
                kinds[k] = kinds.get(k, 0) + n
        cfg_rows.append({"date": date, "config": cfg.name, "messages": messages,
                         "signals": sum(p["signals"] for p in per), **{k: kinds.get(k, 0) for k in
                                                                       ("crossed", "locked", "off_smile", "parity")},
                         "refreshes": sum(p["refreshes"] for p in per),
                         "table_full": sum(p["counters"]["table_full"] for p in per),
                         "nbbo_changes": sum(p.get("nbbo_changes", 0) for p in per),
                         "engine_cpu_s": sum(p["cpu_s"] for p in per), **_scores(plan, cfg, engine_rows, out_dir),
                         "config_json": cfg.model_dump_json()})
    _write(cfg_rows, out_dir / "configs", BACKTEST_CONFIGS_SCHEMA)
    result.configs.extend(cfg_rows)
    result.messages += messages
    result.files += sum(len(lf.a) + len(lf.b) for lf in plan.lines)


def run_backtest(spark: SparkSession, layout: DataLayout, dates: list[str],
               options: BacktestOptions = BacktestOptions()) -> BacktestResult:
    """Backtest ``dates`` (see the module doc); the result says what was found and written."""
    started = time.perf_counter()
    buckets = options.buckets or max(1, spark.sparkContext.defaultParallelism)
    result = BacktestResult(dates=list(dates))
    plans: list[DayPlan] = []
    decodes: list[DecodeSpec] = []
    engines: list[EngineSpec] = []
    for date in dates:
        plan = plan_day(layout, date, buckets)
        if options.reconcile:
            plan.runs = find_live_runs(layout, date)
        configs = options.configs
        if plan.runs and all(c.name != REFERENCE for c in configs):
            configs = configs + (BacktestConfig(name=REFERENCE, pricing=False, sample_every=0, nbbo=False),)
        out_dir = layout.root / "backtest" / f"date={date}"
        if out_dir.exists():
            shutil.rmtree(out_dir)  # a rerun replaces the day
        out_dir.mkdir(parents=True)
        plans.append(plan)
        if plan.routes is None:
            continue
        keys = tuple(sorted({k for run in plan.runs for k in run.check_keys()}))
        plan.truth = truth_path(layout.captures(date))
        truth = truth_keys(plan.truth) if plan.truth is not None else ()
        decodes.extend(DecodeSpec(date, lf, plan.routes, str(out_dir)) for lf in plan.lines)
        engines.extend(EngineSpec(date, b, tuple(lf.line for lf in plan.lines), configs, str(out_dir), keys, truth)
                       for b in range(plan.routes.engines))
    rows = run_tasks(spark, decodes)      # stage 1: day x line
    engines = sized(engines, rows)
    rows += run_tasks(spark, engines)     # stage 2: day x bucket, over what stage 1 staged
    for plan in plans:
        shutil.rmtree(layout.root / "backtest" / f"date={plan.date}" / STAGE_DIR, ignore_errors=True)
    result.tasks = rows
    for plan in plans:
        out_dir = layout.root / "backtest" / f"date={plan.date}"
        day_rows = [r for r in rows if r["date"] == plan.date]
        configs = next((s.configs for s in engines if s.date == plan.date), options.configs)
        _day_tables(plan, day_rows, configs, out_dir, result)
        if plan.runs:
            found = [f for r in day_rows for f in json.loads(r["found_json"])]
            recon, mismatches = [], []
            for run in plan.runs:
                row, bad = reconcile_run(run, out_dir / f"config={REFERENCE}" / "signals", found)
                recon.append(row)
                mismatches.extend(bad)
            _write(recon, out_dir / "reconciliation", RECONCILE_SCHEMA)
            _write(mismatches, out_dir / "reconciliation_mismatches", RECONCILE_MISMATCH_SCHEMA)
            result.reconciliation.extend(recon)
        report_problems(plan.date, JOB, plan.problems)
        result.problems.extend((plan.date, p) for p in plan.problems)
    result.seconds = time.perf_counter() - started
    return result


def summary_lines(result: BacktestResult) -> list[str]:
    """What the command prints."""
    out = [f"backtest {', '.join(result.dates)}: {result.files} files, {result.messages:,} messages, "
           f"{len(result.tasks)} tasks, {result.task_cpu_s:.2f} task CPU-s, {result.seconds:.1f} s"]
    need = bucket_needs(result.tasks)
    for date in result.dates:
        sizes = [need[k] for k in sorted(need) if k[0] == date]
        if sizes:
            out.append(f"  {date} engines: {len(sizes)} bucket{'s' if len(sizes) > 1 else ''} of "
                       f"{' / '.join(f'{s:,}' for s, _ in sizes)} series in "
                       f"{' / '.join(f'{g:,}' for _, g in sizes)} (underlying, expiry) groups")
    for c in result.configs:
        scored = (f", precision {c['precision']:.3f}, recall {c['recall']:.3f} ({c['detected']} of {c['events']} "
                  f"injected events)" if c["precision"] is not None else "")
        out.append(f"  {c['date']} config {c['config']}: {c['signals']:,} signals (crossed {c['crossed']}, locked "
                   f"{c['locked']}, off_smile {c['off_smile']}, parity {c['parity']}){scored}"
                   + (f"; {c['table_full']:,} quotes of series that found the engine full (max_series of the "
                      f"configuration; without it each engine holds its bucket's series)" if c["table_full"] else ""))
    for r in result.reconciliation:
        out.append(f"  reconciliation {r['run_id']} (rate {r['rate_x']}x): {r['live_signals']} live signals, "
                   f"{r['matched']} matched, {r['mismatches']} mismatches: {r['status']}")
    for date, p in result.problems:
        out.append(f"  {date} {p.action}: {p.path}: {p.error}")
    return out


def main(argv: list[str] | None = None) -> int:
    """``spark-submit ops/spark/backtest/backtest_job.py --date D [--to D2] [--data DIR] [--config F ...]``;
    exit 1 on a reconciliation mismatch."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--date", required=True)
    parser.add_argument("--to", default=None)
    parser.add_argument("--data", default=DEFAULT_DATA_DIR)
    parser.add_argument("--master", default=None, help="default: spark-submit's, else local[*]")
    parser.add_argument("--config", action="append", default=[])
    parser.add_argument("--buckets", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        dates = date_range(args.date, args.to)
        configs = tuple(load_configs(args.config))
    except ValueError as exc:
        parser.error(str(exc))
    spark = build_session("omdp-backtest", args.master)
    try:
        result = run_backtest(spark, DataLayout(Path(args.data)), dates, BacktestOptions(configs, args.buckets))
    finally:
        spark.stop()
    print("\n".join(summary_lines(result)))
    return result.exit_status


if __name__ == "__main__":
    raise SystemExit(main())
