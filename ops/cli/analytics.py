"""``omdp analytics feeds|latency|nightly``: the nightly Spark jobs (ops/spark) from the
command line. Each job is also a ``spark-submit`` entry (``ops/spark/<job>/<job>_job.py``)."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ops.cli.options import DATA_ENVVAR, writable_output


T = TypeVar("T")

_DEFAULT_MASTER = "local[*]"
_DEFAULT_DATA = "./omdp-data"


def _check_date(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from ops.spark.common.data_layout import check_date

    try:
        return check_date(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _parse_conf(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """``--conf k=v`` (repeatable) -> {k: v}, each a Spark setting passed through."""
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{v!r}: give KEY=VALUE, e.g. spark.driver.memory=4g", ctx=ctx, param=param)
        out[key.strip()] = value
    return out


def _spark_opts(f: Callable) -> Callable:
    """How Spark runs and how much it says: every analytics command takes these."""
    from ops.spark.common.session import DEFAULT_LOG_LEVEL, LOG_LEVELS

    f = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")(f)
    f = click.option("--conf", "spark_conf", multiple=True, metavar="KEY=VALUE", callback=_parse_conf,
                     help="A Spark setting passed through, e.g. spark.driver.memory=4g (repeatable).")(f)
    f = click.option("--spark-log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default=DEFAULT_LOG_LEVEL,
                     show_default=True, help="Spark's log level (WARN shows its start-up and task warnings).")(f)
    return f


_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|yarn"
                     r"|(spark|mesos)://[^\s/:]+:\d+(,[^\s/:]+:\d+)*|k8s://\S+")
"""The master URLs Spark takes (local, local[N], local[*], local[N,F], spark://HOST:PORT, yarn, ...)."""


def _check_master(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not _MASTER.fullmatch(value):
        raise click.BadParameter(f"{value!r} is not a Spark master URL: give local[N], local[*], "
                                 "spark://HOST:PORT, yarn or k8s://URL")
    return value


def _common(f: Callable) -> Callable:
    f = _spark_opts(f)
    f = click.option("--ui/--no-ui", default=False, show_default=True, help="Spark web UI while the job runs.")(f)
    f = click.option("--master", default=_DEFAULT_MASTER, show_default=True, callback=_check_master,
                     help="Spark master: local[N], spark://host:7077, yarn.")(f)
    f = click.option("--data", "data", envvar=DATA_ENVVAR, show_envvar=True, default=_DEFAULT_DATA, show_default=True, type=click.Path(file_okay=False, path_type=Path),
                     help="Data root: captures/, runs/, ticks/, tick_windows/, backtest/, reports/.")(f)
    f = click.option("--date", required=True, callback=_check_date, help="The night to process, YYYY-MM-DD.")(f)
    return f


def _feeds_opts(f: Callable) -> Callable:
    f = click.option("--top-underlyings", default=20, show_default=True, help="Underlyings listed by messages.")(f)
    f = click.option("--chunk-packets", default=16_384, show_default=True, help="Packets per C decode call.")(f)
    f = click.option("--copies", type=click.Choice(["A", "B"], case_sensitive=False), default="A", show_default=True,
                     help="Which feed copy to decode: A (the primary) or B (when A was damaged); either case.")(f)
    return f


def _latency_opts(f: Callable) -> Callable:
    f = click.option("--lookback-nights", default=7, show_default=True, help="Earlier nights searched for a baseline.")(f)
    f = click.option("--regression-min-delta-ns", default=1_000.0, show_default=True,
                     help="A regression must also exceed the baseline by this many ns.")(f)
    f = click.option("--regression-threshold", default=0.20, show_default=True,
                     help="Flag mean/p99 above baseline by this fraction (sustainable rate below it by it).")(f)
    return f


def _require_data(date: str, found: bool, missing: str) -> None:
    """Refuse, before Spark starts, a night with nothing to read: its report would be empty
    and a scheduler would take the exit status 0 for a night that was analysed."""
    if not found:
        raise click.ClickException(f"--date {date}: {missing}: nothing to analyse (no report written)")


def _has_runs(runs_dir: Path) -> bool:
    return runs_dir.is_dir() and any(p.is_dir() for p in runs_dir.iterdir())


def _run_job(name: str, master: str, ui: bool, spark: dict, job: Callable[[Any], T]) -> T:
    """Start the session (``spark``: the ``_spark_opts`` values), run ``job`` on it under a
    bar of its tasks (stderr; off with --quiet or off a terminal), stop the session. A
    session that cannot start is a one-line error naming --master."""
    from pyspark.errors import PySparkException

    from ops.progress import SparkTasksBar
    from ops.spark.common.session import build_session

    try:
        session = build_session(name, master, ui=ui, log_level=spark["spark_log_level"],
                                spark_conf=spark["spark_conf"])
    except PySparkException as e:
        raise click.ClickException(f"--master {master}: Spark did not start ({e.getMessage() or e})") from None
    try:
        with SparkTasksBar(session.sparkContext.statusTracker(), desc=name, quiet=spark["quiet"]):
            return job(session)
    finally:
        session.stop()


def _feeds_options(copies: str, chunk_packets: int, top_underlyings: int):
    from ops.spark.feeds.feeds_job import FeedsOptions

    return FeedsOptions(copies=copies, chunk_packets=chunk_packets, top_underlyings=top_underlyings)


def _latency_options(regression_threshold: float, regression_min_delta_ns: float, lookback_nights: int):
    from ops.spark.latency.latency_job import LatencyOptions
    from ops.spark.latency.regression_check import RegressionRule

    return LatencyOptions(
        regression=RegressionRule(
            threshold=regression_threshold, min_delta_ns=regression_min_delta_ns, lookback_nights=lookback_nights
        )
    )


def _backtest_options():
    from ops.spark.backtest.backtest_job import BacktestOptions

    return BacktestOptions()


@click.group("analytics")
def analytics() -> None:
    """Nightly Spark analytics: historical feeds, latency breakdowns, the report."""


@analytics.command("feeds")
@_common
@_feeds_opts
def feeds(date: str, data: Path, master: str, ui: bool, copies: str, chunk_packets: int, top_underlyings: int,
          **spark: Any) -> None:
    """Decode the day's captures into the tick table and profile the feed."""
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.feeds.feeds_job import run_feeds

    layout = DataLayout(data)
    _require_data(date, bool(layout.capture_files(date, copies.upper())),
                  f"no copy {copies.upper()} capture files in {layout.captures(date)}")
    r = _run_job("omdp-feeds", master, ui, spark, lambda s: run_feeds(
        s, DataLayout(data), date, _feeds_options(copies, chunk_packets, top_underlyings)))
    click.echo(f"feeds {r.date}: {r.files} files ({r.files_skipped} skipped), {r.packets:,} packets, {r.messages:,} messages")
    for p in r.problems:
        click.echo(f"  {p.action}: {p.path}: {p.error}", err=True)
    click.echo(f"tables: {DataLayout(data).reports(date)}")


@analytics.command("latency")
@_common
@_latency_opts
def latency(date: str, data: Path, master: str, ui: bool, regression_threshold: float, regression_min_delta_ns: float,
            lookback_nights: int, **spark: Any) -> None:
    """Latency breakdowns, sustainability and regressions of the day's runs (exit 1 on a
    flagged regression)."""
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.latency.latency_job import run_latency

    _require_data(date, _has_runs(DataLayout(data).runs(date)), f"no runs in {DataLayout(data).runs(date)}")
    r = _run_job("omdp-latency", master, ui, spark, lambda s: run_latency(
        s, DataLayout(data), date, _latency_options(regression_threshold, regression_min_delta_ns, lookback_nights)))
    click.echo(f"latency {r.date}: {r.runs} runs, {r.sample_rows:,} samples; {len(r.flagged)} regressions flagged")
    for p in r.problems:
        click.echo(f"  {p.action}: {p.path}: {p.error}", err=True)
    if r.flagged:
        raise SystemExit(1)


@analytics.command("nightly")
@_common
@_feeds_opts
@_latency_opts
@click.option("--backtest/--no-backtest", default=True, show_default=True,
              help="Backtest the night's captures through the engines and reconcile the live runs.")
@click.option("--replay/--no-replay", "replay_alias", default=None, hidden=True,
              help="The former name of --backtest/--no-backtest.")
@click.option("--market/--no-market", default=True, show_default=True,
              help="Compute the captures' market windows offline and check the live runs' against them.")
def nightly(date: str, data: Path, master: str, ui: bool, copies: str, chunk_packets: int, top_underlyings: int,
            regression_threshold: float, regression_min_delta_ns: float, lookback_nights: int, backtest: bool,
            replay_alias: bool | None, market: bool, **spark: Any) -> None:
    """Feeds, latency and backtest jobs, then the report page in reports/<date>/ (exit 1 on a
    flagged regression or a live run that disagrees with the backtest). DATE may be the date
    runs were made or a capture's date: the report says which it used."""
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.report.nightly_job import run_nightly, summary_lines
    from ops.spark.report.backtest_report import resolve_night

    layout = DataLayout(data)
    _require_data(date, resolve_night(layout, date).read_as != "neither",
                  f"no capture in {layout.captures(date)} and no runs in {layout.runs(date)}")
    r = _run_job("omdp-nightly", master, ui, spark, lambda s: run_nightly(
        s,
        DataLayout(data),
        date,
        _feeds_options(copies, chunk_packets, top_underlyings),
        _latency_options(regression_threshold, regression_min_delta_ns, lookback_nights),
        _backtest_options() if (backtest if replay_alias is None else replay_alias) else None,
        market,
    ))
    click.echo("\n".join(summary_lines(r)))
    if r.exit_status:
        raise SystemExit(r.exit_status)


@analytics.command("backtest")
@click.option("--date", required=True, callback=_check_date, help="First capture date to backtest, YYYY-MM-DD.")
@click.option("--to", "to", default=None, help="Last capture date (inclusive); default: --date only.")
@click.option("--data", "data", envvar=DATA_ENVVAR, show_envvar=True, default=_DEFAULT_DATA, show_default=True, type=click.Path(file_okay=False, path_type=Path),
              help="Data root: captures/, runs/, backtest/.")
@click.option("--master", default=_DEFAULT_MASTER, show_default=True, callback=_check_master,
              help="Spark master: local[N], spark://host:7077, yarn.")
@click.option("--ui/--no-ui", default=False, show_default=True, help="Spark web UI while the job runs.")
@click.option("--config", "configs", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Engine configuration file (TOML; repeat for a what-if). Default: the live defaults.")
@click.option("--buckets", type=int, default=None, help="Underlying buckets (engine tasks) per day; default: Spark's parallelism.")
@click.option("--reconcile/--no-reconcile", default=True, show_default=True,
              help="Reconcile with the capture's live --no-loop runs (exit 1 on a mismatch).")
@click.option("--json", "json_out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              callback=writable_output, help="Write the job's result (per day, configuration and run) as JSON here.")
@_spark_opts
def backtest(date: str, to: str | None, data: Path, master: str, ui: bool, configs: tuple[Path, ...],
             buckets: int | None, reconcile: bool, json_out: Path | None, **spark: Any) -> None:
    """Run captures through the decision engines on Spark (a backtest): signals, per-underlying
    statistics and smiles under DATA/backtest/date=D/config=NAME/, reconciled with live runs."""
    import json

    from ops.cli.options import check_positive, write_output
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.backtest.backtest_config import BacktestConfigError, load_configs
    from ops.spark.backtest.backtest_job import BacktestOptions, date_range, run_backtest, summary_lines

    try:
        dates = date_range(date, to)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--to") from None
    check_positive("--buckets", buckets)
    if buckets is not None and buckets > 64:
        raise click.UsageError(f"--buckets must be at most 64 (the feed handler's engine ports), got {buckets}")
    try:
        loaded = tuple(load_configs([str(c) for c in configs]))
    except BacktestConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from None
    layout = DataLayout(data)
    _require_data(date, any(layout.captures(d).is_dir() for d in dates),
                  f"no capture in {layout.captures(date)}" + (f" nor of the dates to {to}" if to else ""))
    r = _run_job("omdp-backtest", master, ui, spark, lambda s: run_backtest(
        s, DataLayout(data), dates, BacktestOptions(loaded, buckets, reconcile)))
    click.echo("\n".join(summary_lines(r)))
    if json_out is not None:
        doc = {"dates": r.dates, "messages": r.messages, "files": r.files, "seconds": r.seconds,
               "task_cpu_s": r.task_cpu_s, "tasks": r.tasks, "configs": r.configs, "reconciliation": r.reconciliation,
               "mismatches": r.mismatches,
               "problems": [{"date": d, "path": p.path, "action": p.action, "error": p.error} for d, p in r.problems]}
        write_output(json_out, json.dumps(doc, indent=2))
    if r.exit_status:
        raise SystemExit(r.exit_status)


@analytics.command("market")
@click.option("--date", required=True, callback=_check_date, help="Capture date, YYYY-MM-DD.")
@click.option("--data", "data", envvar=DATA_ENVVAR, show_envvar=True, default=_DEFAULT_DATA, show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Data root: captures/, runs/, market/.")
@click.option("--master", default=_DEFAULT_MASTER, show_default=True, callback=_check_master,
              help="Spark master: local[N], spark://host:7077, yarn.")
@click.option("--ui/--no-ui", default=False, show_default=True, help="Spark web UI while the job runs.")
@click.option("--window-ms", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Window of event time, ms (the live market_stats window_ms).")
@_spark_opts
def market(date: str, data: Path, master: str, ui: bool, window_ms: int, **spark: Any) -> None:
    """The capture's market windows computed offline (DATA/market/date=D/), checked against
    the live --no-loop runs' market_windows.parquet (exit 1 when one differs)."""
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.market.market_job import run_market, summary_lines

    layout = DataLayout(data)
    _require_data(date, layout.captures(date).is_dir(), f"no capture in {layout.captures(date)}")
    r = _run_job("omdp-market", master, ui, spark, lambda s: run_market(s, layout, [date], window_ms))
    click.echo("\n".join(summary_lines(r)))
    if r.exit_status:
        raise SystemExit(r.exit_status)


analytics.add_command(
    click.Command("replay", callback=backtest.callback, params=backtest.params, hidden=True,
                  help="The former name of `omdp analytics backtest` (hidden; it still works)."),
)
"""``omdp analytics replay``: the name the backtest had before "replay" meant only the packet
replayer; kept, hidden, so existing scripts and crontabs go on working."""
