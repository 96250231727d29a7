"""``omdp bench analytics``: how fast the nightly Spark jobs go, and whether they spread over
cores.

- Decode: the feeds job's decode stage (capture files -> C batch decoder on the executors ->
  Arrow -> the Parquet tick table) over synthetic captures (``omdp synth``; with ``markets``
  2008 FAST V2 and/or today's OBI v6, side by side in one run): messages/s of
  wall time, the same per executor core, and messages per CPU-second of the decode tasks
  (what one core does when it has the CPU; robust to other load on the machine).
- Replay: the backtest job (``omdp analytics backtest``: arbitrate, decode, route, the C engine)
  over the same days, with the live defaults (pricing every 100 ms of capture time) and
  with book checks only (``pricing = false``): wall time against the capture's length,
  messages per task CPU-second, and that CPU split into the feed side and the engines.
- Latency: the latency job over synthetic run directories, in record rows/s (samples plus
  planned packets read).

Each master (default ``local[1]`` then ``local[2]``) gets a fresh SparkSession; each
measurement is repeated and the median reported after a warm-up pass. Capture days of
``--scale`` times ``--seconds`` show the work growing linearly with the data.

The command line is ``ops/cli/bench/analytics.py``; this module only measures.
"""
from __future__ import annotations

import datetime as dt
import statistics
import tempfile
from pathlib import Path

from omdp.runtime.machine import machine_info

BASE_DATE = dt.date(2008, 2, 4)
MARKET_DATES = {"2008": BASE_DATE, "today": dt.date(2026, 3, 2)}
"""The first capture date of each market's days (``omdp synth --market``'s default dates)."""


def _cores(master: str, spark) -> int:
    from ops.spark.common.session import is_local_master, local_cores

    if is_local_master(master):
        return local_cores(master)
    return int(spark.sparkContext.defaultParallelism)


def _prepare(data: Path, seconds: float, rate: float, lines: int, scales: list[int], runs: int,
             run_seconds: float, markets: tuple[str, ...] = ("2008",), today_rate: float = 0.02) -> list[str]:
    """Capture days (``scales`` x ``seconds`` each, per market: 2008 at ``rate``, today at
    ``today_rate`` in its own units) and one day of runs; return the dates, market by market."""
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.latency.synthetic_runs import SyntheticRun, write_synthetic_run
    from ops.synth.generator import SynthConfig, synthesize
    from ops.synth.today.generator import TodayConfig, synthesize_today

    layout = DataLayout(data)
    dates = []
    for market in markets:
        for i, k in enumerate(scales):
            date = MARKET_DATES[market] + dt.timedelta(days=i)
            dates.append(date.isoformat())
            if layout.manifest(date.isoformat()).exists():
                continue
            if market == "today":
                synthesize_today(TodayConfig(data=data, date=date, seconds=seconds * k, rate=today_rate, seed=11 + i,
                                             num_lines=lines, progress=False))
            else:
                synthesize(SynthConfig(data=data, date=date, seconds=seconds * k, rate=rate, seed=11 + i, num_lines=lines,
                                       progress=False))
    runs_dir = layout.runs(dates[0])
    if not runs_dir.is_dir():
        for j in range(runs):
            write_synthetic_run(
                runs_dir,
                SyntheticRun(f"bench-{j:02d}", dates[0], rate_x=1.0 + j, duration_s=run_seconds, sweep_id="bench",
                             sample_every=16, seed=j),
            )
    return dates


def _spark_cpu_s(spark) -> float:
    """Spark's own task metrics: executorCpuTime summed over the application's completed
    stages (status REST API of the driver's web UI), in seconds. It counts the executors'
    JVM task threads - for the jobs' Arrow tasks, the JVM side (scheduling, Arrow
    hand-over, result collection), not the Python worker that decodes and runs the engines,
    whose CPU the tasks measure themselves. NaN when the UI is off, or does not answer within
    30 s (a loaded machine): the figure is then missing, the measurement goes on."""
    import json as _json
    import urllib.error
    import urllib.request

    url = spark.sparkContext.uiWebUrl
    if not url:
        return float("nan")
    app = spark.sparkContext.applicationId
    try:
        with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages?status=complete", timeout=30) as r:
            stages = _json.load(r)
    except (urllib.error.URLError, TimeoutError):
        return float("nan")
    return sum(st.get("executorCpuTime", 0) for st in stages) / 1e9


def _median(values: list[float]) -> float:
    return statistics.median(values)


JOBS = ("feeds", "replay", "latency")


def measure(master: str, data: Path, dates: list[str], spans_s: list[float], repeats: int,
            replay_configs: tuple | None = None, jobs: tuple[str, ...] = JOBS) -> dict:
    """Decode, replay and latency figures under one master (the replay once per
    configuration of ``replay_configs``; None: the live defaults and book checks only), for
    the ``jobs`` asked for (a job left out gives an empty list / None: a feeds-only pass is
    a minute, not several, under the bench lock)."""
    from ops.spark.common.data_layout import DataLayout
    from ops.spark.feeds.feeds_job import run_feeds
    from ops.spark.latency.latency_job import run_latency
    from ops.spark.backtest.backtest_config import BacktestConfig
    from ops.spark.backtest.backtest_job import BacktestOptions, run_backtest
    from ops.spark.common.session import build_session

    layout = DataLayout(data)
    spark = build_session(f"omdp-bench-{master}", master, ui=True)  # ui: Spark's task metrics (_spark_cpu_s)
    try:
        cores = _cores(master, spark)
        if "feeds" in jobs or "replay" in jobs:
            run_feeds(spark, layout, dates[0])  # warm-up: JVM, Python workers, code generation (replay: its tick table)
        decode = []
        for date in dates if "feeds" in jobs else []:
            walls, totals, cpus, writes, jvm = [], [], [], [], []
            for _ in range(repeats):
                before = _spark_cpu_s(spark)
                r = run_feeds(spark, layout, date)
                jvm.append(_spark_cpu_s(spark) - before)
                walls.append(r.decode_seconds)
                totals.append(r.seconds)
                cpus.append(r.decode_cpu_seconds)
                writes.append(r.write_cpu_seconds)
            mps = r.messages / _median(walls)
            decode.append(
                {
                    "date": date, "feed": ",".join(sorted(r.formats)), "files": r.files, "packets": r.packets, "messages": r.messages,
                    "decode_wall_s": _median(walls), "feeds_job_wall_s": _median(totals),
                    "messages_per_s": mps, "messages_per_s_per_core": mps / cores,
                    "task_cpu_s": _median(cpus), "messages_per_task_cpu_s": r.messages / _median(cpus),
                    # the tasks' CPU without the Parquet write of the tick files: read + decode + count
                    "write_cpu_s": _median(writes),
                    "messages_per_decode_cpu_s": r.messages / _median([c - w for c, w in zip(cpus, writes)]),
                    "spark_executor_cpu_s": _median(jvm),   # the whole feeds job's stages, JVM side
                }
            )
        replay = []
        for date, span_s in zip(dates, spans_s) if "replay" in jobs else []:
            for cfg in replay_configs or (BacktestConfig(), BacktestConfig(name="book-only", pricing=False)):
                opts = BacktestOptions(configs=(cfg,), reconcile=False)
                walls, cpus, feed_cpus, engine_cpus, stage_cpus = [], [], [], [], []
                jvm = []
                for _ in range(repeats):
                    before = _spark_cpu_s(spark)
                    rr = run_backtest(spark, layout, [date], opts)
                    jvm.append(_spark_cpu_s(spark) - before)
                    walls.append(rr.seconds)
                    cpus.append(rr.task_cpu_s)
                    feed_cpus.append(sum(t["decode_cpu_s"] for t in rr.tasks))
                    engine_cpus.append(sum(t["engine_cpu_s"] for t in rr.tasks))
                    stage_cpus.append({st: sum(t["cpu_s"] for t in rr.tasks if t["stage"] == st)
                                       for st in ("decode", "engines")})
                replay.append({
                    "date": date, "config": cfg.name, "messages": rr.messages, "tasks": len(rr.tasks),
                    "capture_s": span_s, "job_wall_s": _median(walls), "wall_over_capture": _median(walls) / span_s,
                    "task_cpu_s": _median(cpus), "feed_cpu_s": _median(feed_cpus), "engine_cpu_s": _median(engine_cpus),
                    "decode_stage_cpu_s": _median([c["decode"] for c in stage_cpus]),
                    "engine_stage_cpu_s": _median([c["engines"] for c in stage_cpus]),
                    "messages_per_task_cpu_s": rr.messages / _median(cpus),
                    "walls_s": walls, "task_cpus_s": cpus, "spark_executor_cpu_s": _median(jvm),
                })
        latency = None
        if "latency" in jobs:
            run_latency(spark, layout, dates[0])
            secs = []
            for _ in range(repeats):
                lat = run_latency(spark, layout, dates[0])
                secs.append(lat.seconds)
            rows = lat.sample_rows + lat.intended_rows
            latency = {
                "runs": lat.runs, "sample_rows": lat.sample_rows, "intended_rows": lat.intended_rows,
                "job_wall_s": _median(secs), "rows_per_s": rows / _median(secs),
                "rows_per_s_per_core": rows / _median(secs) / cores,
            }
    finally:
        spark.stop()
    return {"master": master, "cores": cores, "decode": decode, "replay": replay, "latency": latency}


def run_analytics_bench(data: Path | None, masters: tuple[str, ...], *, seconds: float, rate: float, num_lines: int,
                        scales: list[int], runs: int, run_seconds: float, repeats: int,
                        replay_configs: tuple | None = None, jobs: tuple[str, ...] = JOBS,
                        markets: tuple[str, ...] = ("2008",), today_rate: float = 0.02) -> dict:
    """Prepare the data (in ``data``, or a temporary directory removed after) and measure
    under each master; the JSON document less its command."""
    with tempfile.TemporaryDirectory(prefix="omdp-bench-analytics-") as tmp:
        root = data or Path(tmp)
        dates = _prepare(root, seconds, rate, num_lines, scales, runs, run_seconds, markets, today_rate)
        spans = [seconds * k for k in scales] * len(markets)
        results = [measure(m, root, dates, spans, repeats, replay_configs, jobs) for m in masters]
    return {
        "machine": machine_info(),
        "config": {"seconds": seconds, "rate_x": rate, "markets": list(markets), "today_rate_x": today_rate,
                   "num_lines": num_lines, "scales": scales, "runs": runs,
                   "run_seconds": run_seconds, "repeats": repeats, "jobs": list(jobs),
                   "replay_configs": [c.model_dump() for c in replay_configs] if replay_configs else None},
        "results": results,
    }
