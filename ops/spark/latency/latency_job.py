"""The nightly latency job: the day's run directories -> per run and hop breakdowns, the
sustainability of each run, the sweeps' sustainable rates, and regressions against earlier
nights, written as summary tables to ``reports/<date>/latency_*.parquet``.

The work that grows with the data - every sample and every planned packet of every run - is
spread over the executors by run: one Spark task per run reads its record files with
pyarrow and computes with numpy (``run_analysis``), handing back one row per run. What is
left is a few rows per run, judged and compared on the driver.

Run it as ``omdp analytics latency --date D`` or ``spark-submit ops/spark/latency/latency_job.py
--date D``.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession

from omdp.metrics.definitions import DEFAULT_RULE, END_TO_END_HOPS, SAMPLE_HOPS, SustainabilityRule
from ops.spark.common.data_layout import DEFAULT_DATA_DIR, DataLayout, check_date
from ops.spark.common.file_problems import FileProblem, report_problems
from ops.spark.latency.latency_breakdown import HOP_ORDER
from ops.spark.latency.regression_check import RegressionRule, compare_latency, compare_sustainable_rate
from ops.spark.common.report_schemas import (
    LATENCY_BREAKDOWN,
    LATENCY_INGEST,
    LATENCY_REGRESSIONS,
    LATENCY_RUNS,
    LATENCY_SIGNALS,
    LATENCY_SWEEPS,
    SKIPPED_FILES,
)
from ops.spark.common.report_tables import read_history_rows, table_path, write_rows
from ops.spark.common.session import build_session
from ops.spark.common.task_map import map_tasks, typed_rows
from ops.spark.latency.run_analysis import RUN_RESULT_SCHEMA, analyze_run
from ops.spark.latency.run_records_scan import RunDirectory, read_meta, scan_runs
from ops.spark.latency.sustainability import judge_run, sweep_summaries

JOB = "latency"


@dataclass(frozen=True)
class LatencyOptions:
    """The rules the latency job judges by."""

    sustainability: SustainabilityRule = DEFAULT_RULE
    regression: RegressionRule = RegressionRule()


@dataclass
class LatencyResult:
    """What one night's latency job did."""

    date: str
    runs: int
    sample_rows: int
    intended_rows: int
    seconds: float
    flagged: list[dict] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)


def analyze_runs(spark: SparkSession, runs: list[RunDirectory]) -> list[dict]:
    """``run_analysis.analyze_run`` of every run on the executors: one task per run, the
    biggest first; one nested row per run comes back."""
    ordered = sorted(runs, key=lambda r: -sum(r.rows.values()))
    return typed_rows(map_tasks(spark, ordered, analyze_run), RUN_RESULT_SCHEMA)


def _run_key(meta: dict) -> dict:
    return {k: meta[k] for k in ("date", "run_id", "sweep_id", "topology", "config", "rate_x")}


@dataclass
class NightRows:
    """One night's rows, computed from its run directories."""

    runs: list[RunDirectory]
    good: list[str]
    problems: list[FileProblem]
    breakdown: list[dict]
    run_rows: list[dict]
    sweeps: list[dict]
    ingest: list[dict]
    signals: list[dict]


def night_rows(spark: SparkSession, layout: DataLayout, date: str, options: LatencyOptions,
               extra_runs: dict[str, str] | None = None) -> NightRows:
    """The breakdown, runs, sweeps, ingest and signal rows of ``date``'s runs, and of
    ``extra_runs`` (run id -> the date it is filed under: the runs of the captures a night
    covers that were made on other nights)."""
    runs, problems = scan_runs(layout.runs(date))
    for filed in sorted(set((extra_runs or {}).values()) - {date}):
        wanted = {rid for rid, d in extra_runs.items() if d == filed}
        more, found = scan_runs(layout.runs(filed))
        runs += [r for r in more if r.name in wanted]
        problems += [p for p in found if Path(p.path).parent.name in wanted]
    meta, more = read_meta(runs, date)
    problems += more
    runs = [r for r in runs if r.name in meta]
    results = analyze_runs(spark, runs)
    for r in results:
        problems += [FileProblem(p["path"], p["action"], p["error"]) for p in r["problems"]]
    usable = sorted((r for r in results if r["usable"]), key=lambda r: r["run_dir"])

    stats = [s for r in usable for s in r["stats"]]
    breakdown_rows = sorted(
        ({**_run_key(meta[s["run_dir"]]), "target_pps": meta[s["run_dir"]]["target_pps"], **s} for s in stats),
        key=lambda r: (r["run_id"], HOP_ORDER[r["hop"]]),
    )
    by_run_hop = {(s["run_dir"], s["hop"]): s for s in stats}
    run_rows = []
    for r in usable:
        name, m = r["run_dir"], meta[r["run_dir"]]
        e2e = {
            f"{h}_{p}": by_run_hop[(name, h)][p] if (name, h) in by_run_hop else None
            for h in (hop.table_name for hop in END_TO_END_HOPS)
            for p in ("p50_ns", "p99_ns")
        }
        samples_read = by_run_hop[(name, SAMPLE_HOPS[0].table_name)]["rows"]
        run_rows.append({**m, "samples": samples_read, **e2e,
                         **judge_run(m, r["figures"], r["ingest"], options.sustainability)})
    run_rows.sort(key=lambda r: (r["sweep_id"], r["rate_x"], r["run_id"]))
    return NightRows(
        runs=runs, good=[r["run_dir"] for r in usable], problems=problems, breakdown=breakdown_rows,
        run_rows=run_rows, sweeps=sweep_summaries(run_rows),
        ingest=[{**i, "date": date, "run_id": meta[r["run_dir"]]["run_id"]} for r in usable for i in r["ingest"]],
        signals=[{**k, "date": date, "run_id": meta[r["run_dir"]]["run_id"]} for r in usable for k in r["signals"]],
    )


def history_rows(spark: SparkSession, layout: DataLayout, date: str, options: LatencyOptions
                 ) -> tuple[list[dict], list[dict], list[FileProblem]]:
    """Breakdown and sweep rows of the earlier nights in the look-back: from each night's
    report tables, or, for a night with runs but no report (the job did not run that
    night), computed from its runs, so a baseline never depends on an earlier report."""
    nights = options.regression.lookback_nights
    breakdown, p1 = read_history_rows(layout, date, "latency_breakdown", LATENCY_BREAKDOWN, nights)
    sweeps, p2 = read_history_rows(layout, date, "latency_sweeps", LATENCY_SWEEPS, nights)
    for d in layout.previous_run_dates(date, nights):
        reports = layout.reports(d)
        if table_path(reports, "latency_breakdown").exists() and table_path(reports, "latency_sweeps").exists():
            continue
        earlier = night_rows(spark, layout, d, options)
        breakdown += earlier.breakdown
        sweeps += earlier.sweeps
    return breakdown, sweeps, p1 + p2


def run_latency(
    spark: SparkSession, layout: DataLayout, date: str, options: LatencyOptions = LatencyOptions(),
    extra_runs: dict[str, str] | None = None,
) -> LatencyResult:
    """Compute and write the day's latency tables (over the runs filed under ``date`` and
    ``extra_runs``: run id -> filed date); return what was done."""
    started = time.perf_counter()
    check_date(date)
    out = layout.reports(date)
    out.mkdir(parents=True, exist_ok=True)
    night = night_rows(spark, layout, date, options, extra_runs)
    problems = night.problems

    rule = options.regression
    hist_breakdown, hist_sweeps, more = history_rows(spark, layout, date, options)
    problems += more
    regressions = compare_latency(date, night.breakdown, hist_breakdown, rule) + compare_sustainable_rate(
        date, night.sweeps, hist_sweeps, rule
    )

    tables = {
        "latency_breakdown": write_rows(night.breakdown, out, "latency_breakdown", LATENCY_BREAKDOWN),
        "latency_runs": write_rows(night.run_rows, out, "latency_runs", LATENCY_RUNS),
        "latency_sweeps": write_rows(night.sweeps, out, "latency_sweeps", LATENCY_SWEEPS),
        "latency_regressions": write_rows(regressions, out, "latency_regressions", LATENCY_REGRESSIONS),
        "latency_ingest": write_rows(
            sorted(night.ingest, key=lambda r: (r["run_id"], r["line"])), out, "latency_ingest", LATENCY_INGEST
        ),
        "latency_signals": write_rows(
            sorted(night.signals, key=lambda r: (r["run_id"], r["kind"])), out, "latency_signals", LATENCY_SIGNALS
        ),
        "latency_skipped_files": write_rows(
            [p.row(date, JOB) for p in problems], out, "latency_skipped_files", SKIPPED_FILES
        ),
    }
    report_problems(date, JOB, problems)
    return LatencyResult(
        date=date,
        runs=len(night.good),
        sample_rows=sum(r.rows["samples.parquet"] for r in night.runs),
        intended_rows=sum(r.rows.get("intended.parquet", 0) for r in night.runs),
        seconds=time.perf_counter() - started,
        flagged=[r for r in regressions if r["flagged"]],
        problems=problems,
        tables=tables,
    )


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--regression-*`` and ``--lookback-nights`` options of spark-submit entries."""
    parser.add_argument("--regression-threshold", type=float, default=RegressionRule.threshold)
    parser.add_argument("--regression-min-delta-ns", type=float, default=RegressionRule.min_delta_ns)
    parser.add_argument("--lookback-nights", type=int, default=RegressionRule.lookback_nights)


def options_from(args: argparse.Namespace) -> LatencyOptions:
    """LatencyOptions from parsed ``add_rule_arguments`` options."""
    return LatencyOptions(
        regression=RegressionRule(
            threshold=args.regression_threshold,
            min_delta_ns=args.regression_min_delta_ns,
            lookback_nights=args.lookback_nights,
        )
    )


def main(argv: list[str] | None = None) -> int:
    """``spark-submit ops/spark/latency/latency_job.py --date D [--data DIR]``; exit 1 on a flagged
    regression."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--date", required=True)
    parser.add_argument("--data", default=DEFAULT_DATA_DIR)
    parser.add_argument("--master", default=None, help="default: spark-submit's, else local[*]")
    add_rule_arguments(parser)
    args = parser.parse_args(argv)
    spark = build_session("omdp-latency", args.master)
    try:
        result = run_latency(spark, DataLayout(Path(args.data)), args.date, options_from(args))
    finally:
        spark.stop()
    print(f"latency {result.date}: {result.runs} runs, {len(result.problems)} files skipped, {len(result.flagged)} regressions")
    return 1 if result.flagged else 0


if __name__ == "__main__":
    raise SystemExit(main())
