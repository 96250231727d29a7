"""The nightly latency job: the day's run directories -> per run and hop breakdowns, the
sustainability of each run, the sweeps' sustainable rates, and regressions against earlier
nights, written as summary tables to ``reports/<date>/latency_*.parquet``.

Spark does the work that grows with the data - every sample and every planned packet of
every run (``breakdown``, ``latency_growth``: one run's records per group, on the
executors), the ingest and signal records; what is left is one row per run and hop, judged
and compared on the driver.

Run it as ``omdp analytics latency --date D`` or ``spark-submit ops/spark/latency_job.py
--date D``.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from omdp.record import HOPS
from ops.spark.data_layout import DEFAULT_DATA_DIR, DataLayout, check_date
from ops.spark.file_problems import FileProblem, report_problems
from ops.spark.latency_breakdown import breakdown
from ops.spark.latency_hops import HOP_ORDER, SAMPLE_HOPS, SEND_LAG_HOP
from ops.spark.regression_check import RegressionRule, compare_latency, compare_sustainable_rate
from ops.spark.report_schemas import (
    LATENCY_BREAKDOWN,
    LATENCY_INGEST,
    LATENCY_REGRESSIONS,
    LATENCY_RUNS,
    LATENCY_SIGNALS,
    LATENCY_SWEEPS,
    SKIPPED_FILES,
)
from ops.spark.report_tables import read_history_rows, write_rows
from ops.spark.run_records_frames import read_meta, read_record_file
from ops.spark.run_records_scan import RunDirectory, scan_runs
from ops.spark.session import build_session
from ops.spark.sustainability import SustainabilityRule, judge_run, latency_growth, sweep_summaries

JOB = "latency"
_INGEST_COUNTERS = ("packets_received", "messages_received", "messages_missed", "packets_duplicate", "decode_errors")


@dataclass(frozen=True)
class LatencyOptions:
    """The rules the latency job judges by."""

    sustainability: SustainabilityRule = SustainabilityRule()
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


def _reconcile(stats: list[dict], runs: list[RunDirectory]) -> tuple[set[str], set[str], list[FileProblem]]:
    """Runs whose samples Spark could read only in part (left out) and runs whose intended
    file it could read only in part (send lag left out), judged by the rows each footer
    states. Spark skips a file with corrupt pages (``ignoreCorruptFiles``); this names it."""
    seen = {(r["run_dir"], r["hop"]): r["rows"] for r in stats}
    bad_samples: set[str] = set()
    bad_intended: set[str] = set()
    problems: list[FileProblem] = []
    for run in runs:
        want = run.rows["samples.parquet"]
        got = seen.get((run.name, SAMPLE_HOPS[0].name), 0)
        if got != want:
            bad_samples.add(run.name)
            problems.append(
                FileProblem(str(run.files["samples.parquet"]), "skipped", f"only {got} of {want} rows readable; run skipped")
            )
        if "intended.parquet" in run.files:
            want = run.rows["intended.parquet"]
            got = seen.get((run.name, SEND_LAG_HOP.name), 0)
            if got != want:
                bad_intended.add(run.name)
                problems.append(
                    FileProblem(str(run.files["intended.parquet"]), "partly skipped",
                                f"only {got} of {want} rows readable; send lag left out")
                )
    return bad_samples, bad_intended, problems


def _run_key(meta: dict) -> dict:
    return {k: meta[k] for k in ("date", "run_id", "sweep_id", "topology", "config", "rate_x")}


def run_latency(
    spark: SparkSession, layout: DataLayout, date: str, options: LatencyOptions = LatencyOptions()
) -> LatencyResult:
    """Compute and write the day's latency tables; return what was done."""
    started = time.perf_counter()
    check_date(date)
    runs, problems = scan_runs(layout.runs(date))
    out = layout.reports(date)
    out.mkdir(parents=True, exist_ok=True)

    meta, more = read_meta(runs, date)
    problems += more
    runs = [r for r in runs if r.name in meta]
    samples = read_record_file(spark, runs, "samples.parquet", list(HOPS))
    intended = read_record_file(spark, runs, "intended.parquet", ["intended_ns", "sent_ns"])
    stats = [r.asDict() for r in breakdown(samples, intended).collect()]
    bad_samples, bad_intended, more = _reconcile(stats, runs)
    problems += more
    good = sorted(r.name for r in runs if r.name not in bad_samples)
    stats = [
        s for s in stats
        if s["run_dir"] in good and not (s["hop"] == SEND_LAG_HOP.name and s["run_dir"] in bad_intended)
    ]
    breakdown_rows = sorted(
        ({**_run_key(meta[s["run_dir"]]), "target_pps": meta[s["run_dir"]]["target_pps"], **s} for s in stats),
        key=lambda r: (r["run_id"], HOP_ORDER[r["hop"]]),
    )

    growth = {
        r["run_dir"]: r.asDict() for r in latency_growth(samples.where(F.col("run_dir").isin(good))).collect()
    }
    by_run_hop = {(s["run_dir"], s["hop"]): s for s in stats}
    run_rows = []
    for name in good:
        m = meta[name]
        e2e = {
            f"{h}_{p}": by_run_hop[(name, h)][p] if (name, h) in by_run_hop else None
            for h in ("e2e_fh", "e2e_intended")
            for p in ("p50_ns", "p99_ns")
        }
        samples_read = by_run_hop.get((name, SAMPLE_HOPS[0].name), {}).get("rows", 0)
        run_rows.append(
            {**m, "samples": samples_read, **e2e, **judge_run(m, growth.get(name), options.sustainability)}
        )
    run_rows.sort(key=lambda r: (r["sweep_id"], r["rate_x"], r["run_id"]))
    sweeps = sweep_summaries(run_rows)

    run_id_of = {name: meta[name]["run_id"] for name in good}
    ingest = read_record_file(spark, runs, "ingest.parquet").where(F.col("run_dir").isin(good))
    ingest_rows = [
        {**r.asDict(), "date": date, "run_id": run_id_of[r["run_dir"]]}
        for r in ingest.groupBy("run_dir", "line").agg(*[F.max(c).alias(c) for c in _INGEST_COUNTERS]).collect()
    ]
    signals = read_record_file(spark, runs, "signals.parquet", ["kind"]).where(F.col("run_dir").isin(good))
    signal_rows = [
        {**r.asDict(), "date": date, "run_id": run_id_of[r["run_dir"]]}
        for r in signals.groupBy("run_dir", "kind").agg(F.count(F.lit(1)).alias("signals")).collect()
    ]

    rule = options.regression
    hist_breakdown, p1 = read_history_rows(layout, date, "latency_breakdown", LATENCY_BREAKDOWN, rule.lookback_nights)
    hist_sweeps, p2 = read_history_rows(layout, date, "latency_sweeps", LATENCY_SWEEPS, rule.lookback_nights)
    problems += p1 + p2
    regressions = compare_latency(date, breakdown_rows, hist_breakdown, rule) + compare_sustainable_rate(
        date, sweeps, hist_sweeps, rule
    )

    tables = {
        "latency_breakdown": write_rows(breakdown_rows, out, "latency_breakdown", LATENCY_BREAKDOWN),
        "latency_runs": write_rows(run_rows, out, "latency_runs", LATENCY_RUNS),
        "latency_sweeps": write_rows(sweeps, out, "latency_sweeps", LATENCY_SWEEPS),
        "latency_regressions": write_rows(regressions, out, "latency_regressions", LATENCY_REGRESSIONS),
        "latency_ingest": write_rows(
            sorted(ingest_rows, key=lambda r: (r["run_id"], r["line"])), out, "latency_ingest", LATENCY_INGEST
        ),
        "latency_signals": write_rows(
            sorted(signal_rows, key=lambda r: (r["run_id"], r["kind"])), out, "latency_signals", LATENCY_SIGNALS
        ),
        "latency_skipped_files": write_rows(
            [p.row(date, JOB) for p in problems], out, "latency_skipped_files", SKIPPED_FILES
        ),
    }
    report_problems(date, JOB, problems)
    return LatencyResult(
        date=date,
        runs=len(good),
        sample_rows=sum(r.rows["samples.parquet"] for r in runs),
        intended_rows=sum(r.rows.get("intended.parquet", 0) for r in runs),
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
    """``spark-submit ops/spark/latency_job.py --date D [--data DIR]``; exit 1 on a flagged
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
