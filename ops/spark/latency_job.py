"""The nightly latency job: the day's run directories -> per run and hop breakdowns, the
sustainability of each run, the sweeps' sustainable rates, and regressions against earlier
nights, written as summary tables to ``reports/<date>/latency_*``.

Run it as ``omdp analytics latency --date D`` or ``spark-submit ops/spark/latency_job.py
--date D``.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from omdp.record import HOPS
from ops.spark.data_layout import DEFAULT_DATA_DIR, DataLayout, check_date
from ops.spark.file_problems import FileProblem, report_problems
from ops.spark.latency_breakdown import breakdown, hop_latencies
from ops.spark.latency_hops import SAMPLE_HOPS, SEND_LAG_HOP
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
from ops.spark.report_tables import read_history, write_table
from ops.spark.run_records_frames import read_record_file
from ops.spark.run_records_scan import RunDirectory, scan_runs
from ops.spark.session import build_session
from ops.spark.sustainability import SustainabilityRule, judge_runs, latency_growth, sweep_summary

JOB = "latency"


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


def _reconcile(
    stats: list, runs: list[RunDirectory]
) -> tuple[set[str], set[str], list[FileProblem]]:
    """Runs whose samples Spark read in part (left out) and runs whose intended file it read
    in part (send lag left out), judged by the rows each footer states."""
    seen: dict[tuple[str, str], int] = {}
    for r in stats:
        seen[(r["run_dir"], r["hop"])] = r["rows"]
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
                    FileProblem(str(run.files["intended.parquet"]), "skipped", f"only {got} of {want} rows readable; send lag left out")
                )
    return bad_samples, bad_intended, problems


def _run_meta(spark: SparkSession, runs: list[RunDirectory], date: str) -> DataFrame:
    meta = read_record_file(spark, runs, "meta.parquet")
    return meta.select(
        "run_dir",
        F.lit(date).alias("date"),
        *[c for c in meta.columns if c not in ("run_dir", "date")],
    )


def run_latency(spark: SparkSession, layout: DataLayout, date: str, options: LatencyOptions = LatencyOptions()) -> LatencyResult:
    """Compute and write the day's latency tables; return what was done."""
    started = time.perf_counter()
    check_date(date)
    runs, problems = scan_runs(layout.runs(date))
    out = layout.reports(date)
    out.mkdir(parents=True, exist_ok=True)

    samples = read_record_file(spark, runs, "samples.parquet", list(HOPS))
    intended = read_record_file(spark, runs, "intended.parquet", ["intended_ns", "sent_ns"])
    stats_df = breakdown(hop_latencies(samples, intended))
    stats = stats_df.collect()
    bad_samples, bad_intended, more = _reconcile(stats, runs)
    problems += more
    kept = [
        r for r in stats if r["run_dir"] not in bad_samples and not (r["hop"] == SEND_LAG_HOP.name and r["run_dir"] in bad_intended)
    ]
    good_runs = [r for r in runs if r.name not in bad_samples]

    meta = _run_meta(spark, good_runs, date).cache()
    meta_dirs = {r["run_dir"] for r in meta.select("run_dir").collect()}
    for r in good_runs:
        if r.name not in meta_dirs:
            problems.append(FileProblem(str(r.files["meta.parquet"]), "skipped", "meta row unreadable; run skipped"))
    good_names = sorted(meta_dirs)

    stats_frame = spark.createDataFrame(kept, stats_df.schema).where(F.col("run_dir").isin(good_names))
    per_hop = stats_frame.join(meta, "run_dir")
    tables: dict[str, Path] = {}
    tables["latency_breakdown"] = write_table(per_hop.orderBy("run_id", "hop_order"), out, "latency_breakdown", LATENCY_BREAKDOWN)

    e2e = stats_frame.groupBy("run_dir").agg(
        *[
            F.max(F.when(F.col("hop") == h, F.col(p))).alias(f"{h}_{p}")
            for h in ("e2e_fh", "e2e_intended")
            for p in ("p50_ns", "p99_ns")
        ]
    )
    sample_rows = stats_frame.where(F.col("hop") == SAMPLE_HOPS[0].name).select("run_dir", F.col("rows").alias("samples"))
    growth = latency_growth(samples.where(F.col("run_dir").isin(good_names)))
    run_rows = (
        meta.join(sample_rows, "run_dir", "left")
        .join(e2e, "run_dir", "left")
        .join(growth, "run_dir", "left")
    )
    judged = judge_runs(run_rows, options.sustainability).cache()
    tables["latency_runs"] = write_table(judged.orderBy("sweep_id", "rate_x", "run_id"), out, "latency_runs", LATENCY_RUNS)
    sweeps = sweep_summary(judged).cache()
    tables["latency_sweeps"] = write_table(sweeps.orderBy("sweep_id"), out, "latency_sweeps", LATENCY_SWEEPS)

    ingest = read_record_file(spark, good_runs, "ingest.parquet").where(F.col("run_dir").isin(good_names))
    ingest_last = ingest.groupBy("run_dir", "line").agg(
        *[F.max(c).alias(c) for c in ("packets_received", "messages_received", "messages_missed", "packets_duplicate", "decode_errors")]
    )
    tables["latency_ingest"] = write_table(
        ingest_last.join(meta.select("run_dir", "date", "run_id"), "run_dir").orderBy("run_id", "line"), out, "latency_ingest", LATENCY_INGEST
    )
    signals = read_record_file(spark, good_runs, "signals.parquet", ["kind"]).where(F.col("run_dir").isin(good_names))
    tables["latency_signals"] = write_table(
        signals.groupBy("run_dir", "kind").agg(F.count(F.lit(1)).alias("signals"))
        .join(meta.select("run_dir", "date", "run_id"), "run_dir")
        .orderBy("run_id", "kind"),
        out,
        "latency_signals",
        LATENCY_SIGNALS,
    )

    rule = options.regression
    hist_breakdown, p1 = read_history(spark, layout, date, "latency_breakdown", LATENCY_BREAKDOWN, rule.lookback_nights)
    hist_sweeps, p2 = read_history(spark, layout, date, "latency_sweeps", LATENCY_SWEEPS, rule.lookback_nights)
    problems += p1 + p2
    today_breakdown = spark.read.schema(LATENCY_BREAKDOWN).parquet(str(tables["latency_breakdown"]))
    regressions = compare_latency(today_breakdown, hist_breakdown, rule).unionByName(
        compare_sustainable_rate(sweeps, hist_sweeps, rule)
    )
    tables["latency_regressions"] = write_table(
        regressions.orderBy("kind", "topology", "config", "rate_x", "hop", "metric"), out, "latency_regressions", LATENCY_REGRESSIONS
    )
    flagged = [
        r.asDict()
        for r in spark.read.schema(LATENCY_REGRESSIONS).parquet(str(tables["latency_regressions"])).where("flagged").collect()
    ]

    tables["latency_skipped_files"] = write_table(
        spark.createDataFrame([p.row(date, JOB) for p in problems], SKIPPED_FILES), out, "latency_skipped_files", SKIPPED_FILES
    )
    report_problems(date, JOB, problems)
    meta.unpersist()
    judged.unpersist()
    sweeps.unpersist()
    return LatencyResult(
        date=date,
        runs=len(good_names),
        sample_rows=sum(r.rows["samples.parquet"] for r in runs),
        intended_rows=sum(r.rows.get("intended.parquet", 0) for r in runs),
        seconds=time.perf_counter() - started,
        flagged=flagged,
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
