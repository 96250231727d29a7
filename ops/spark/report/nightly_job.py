"""The nightly run: the feeds job and the backtest job over the captures the night covers
(``backtest_report.resolve_night``: the captures of the date named, or those its runs
replayed), the latency job over its runs, then the report page in ``reports/<date>/``. With
``market`` the market job computes the captures' market windows offline and checks the live
runs' against them (ops/spark/market/market_job.py). The exit status is 1 when a regression
was flagged or a live run disagrees with the backtest or the market windows, so a
scheduler (cron, a systemd timer; docs/analytics.md) can alert on it.

Run it as ``omdp analytics nightly --date D`` or ``spark-submit ops/spark/report/nightly_job.py
--date D``.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from ops.spark.backtest.backtest_job import BacktestOptions, BacktestResult, run_backtest
from ops.spark.backtest.backtest_job import summary_lines as backtest_summary
from ops.spark.common.data_layout import DEFAULT_DATA_DIR, DataLayout
from ops.spark.common.report_tables import write_arrow
from ops.spark.common.session import build_session
from ops.spark.feeds.capture_decode import DEFAULT_CHUNK_PACKETS
from ops.spark.feeds.feeds_job import FeedsOptions, FeedsResult, run_feeds
from ops.spark.latency.latency_job import LatencyOptions, LatencyResult, add_rule_arguments, options_from, run_latency
from ops.spark.market.market_job import MarketResult, run_market, write_report_tables
from ops.spark.market.market_job import summary_lines as market_summary
from ops.spark.report.backtest_report import NightDates, resolve_night, write_backtest_tables
from ops.spark.report.report_html import regression_display, render_report

EXIT_REGRESSION = 1


@dataclass
class NightlyResult:
    """The jobs' results, the dates used and the page."""

    feeds: list[FeedsResult]          # one per capture date the night covers (the date named when none)
    latency: LatencyResult
    night: NightDates
    backtest: BacktestResult | None
    page: Path
    market: MarketResult | None = None

    @property
    def exit_status(self) -> int:
        """0, or EXIT_REGRESSION when a regression was flagged or a run disagrees with the
        backtest or with the offline market windows."""
        return EXIT_REGRESSION if self.latency.flagged or (self.backtest and self.backtest.mismatches) or \
            (self.market and self.market.mismatches) else 0


def run_nightly(
    spark: SparkSession,
    layout: DataLayout,
    date: str,
    feeds_options: FeedsOptions = FeedsOptions(),
    latency_options: LatencyOptions = LatencyOptions(),
    backtest_options: BacktestOptions | None = BacktestOptions(),
    market: bool = True,
) -> NightlyResult:
    """Run the jobs for ``date`` and render the report (``backtest_options`` None: no
    backtest; ``market`` False: no market windows)."""
    night = resolve_night(layout, date)
    feeds_dates = night.capture_dates or [date]
    feeds = [run_feeds(spark, layout, d, feeds_options) for d in feeds_dates]
    if feeds_dates != [date]:
        gather_feeds_tables(feeds, layout.reports(date))
    # the runs of the night's captures made on other nights count in tonight's latency tables
    # too, so naming a capture's date gives its runs' latencies (docs/analytics.md "Dates")
    latency = run_latency(spark, layout, date, latency_options,
                          {rid: d for rid, d in night.runs_of_captures.items() if d != date})
    backtest = None
    if backtest_options is not None and night.capture_dates:
        backtest = run_backtest(spark, layout, night.capture_dates, backtest_options)
    write_backtest_tables(layout.reports(date), night, backtest)
    market_result = None
    if market and night.capture_dates:
        market_result = run_market(spark, layout, night.capture_dates)
        write_report_tables(layout.reports(date), market_result)
    page = render_report(layout.reports(date), date)
    return NightlyResult(feeds, latency, night, backtest, page, market_result)


def gather_feeds_tables(feeds: list[FeedsResult], reports_dir: Path) -> None:
    """The feeds tables of the night's capture dates (each run_feeds wrote its date's in
    ``reports/<capture date>/``) as the night's own, every date's rows in one table (each
    row carries its capture date): the night of the runs reports the captures they replayed."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    for name in feeds[0].tables:
        write_arrow(pa.concat_tables([pq.read_table(f.tables[name]) for f in feeds]), reports_dir, name)


def summary_lines(result: NightlyResult) -> list[str]:
    """What a person reading the scheduler's log wants to see."""
    lat = result.latency
    lines = [
        f"feeds {f.date}: {f.files} files ({f.files_skipped} skipped), {f.packets:,} packets, {f.messages:,} messages"
        + (f", mean {f.day['mean_pps']:,.0f} packets/s = {f.day['rate_x']:.3f}x" if f.day.get("mean_pps") else "")
        for f in result.feeds
    ]
    problems = [p for f in result.feeds for p in f.problems] + lat.problems
    lines += [
        f"latency {lat.date}: {lat.runs} runs, {lat.sample_rows:,} samples, {lat.intended_rows:,} packets planned",
        f"files skipped: {len(problems)}",
    ]
    for p in problems:
        lines.append(f"  {p.action}: {p.path}: {p.error}")
    lines.append(f"regressions flagged: {len(lat.flagged)}")
    for r in regression_display(lat.flagged):
        lines.append(
            f"  {r['kind']} {r['topology']} {r['config']} rate {r['rate_x']} {r['hop'] or ''} {r['metric']}: "
            f"{r['value']:,.2f} vs {r['baseline_value']:,.2f} on {r['baseline_date']}"
        )
    n = result.night
    lines.append(f"dates: {n.date} read as {n.read_as}; captures {', '.join(n.capture_dates) or 'none'}; "
                 f"{n.runs_made} runs made that night, {len(n.runs_of_captures)} runs of those captures")
    if result.backtest is not None:
        lines += backtest_summary(result.backtest)
    if result.market is not None:
        lines += market_summary(result.market)
    lines.append(f"report: {result.page}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """``spark-submit ops/spark/report/nightly_job.py --date D [--data DIR]``; exit 1 on a flagged
    regression."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--date", required=True)
    parser.add_argument("--data", default=DEFAULT_DATA_DIR)
    parser.add_argument("--master", default=None, help="default: spark-submit's, else local[*]")
    parser.add_argument("--chunk-packets", type=int, default=DEFAULT_CHUNK_PACKETS)
    add_rule_arguments(parser)
    args = parser.parse_args(argv)
    spark = build_session("omdp-nightly", args.master)
    try:
        result = run_nightly(
            spark, DataLayout(Path(args.data)), args.date, FeedsOptions(chunk_packets=args.chunk_packets), options_from(args)
        )
    finally:
        spark.stop()
    print("\n".join(summary_lines(result)))
    return result.exit_status


if __name__ == "__main__":
    raise SystemExit(main())
