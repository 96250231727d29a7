"""``omdp bench analytics``: how fast the nightly Spark jobs go, and whether they spread over
cores (the work is in ``ops.bench.analytics``)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from ops.cli.options import DATA_ENVVAR, positive_seconds


@click.command("analytics")
@click.option("--data", "data", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Data directory to use (and fill if empty); default: a temporary one.")
@click.option("--master", "masters", multiple=True, default=("local[1]", "local[2]"), show_default=True,
              help="Spark masters to compare; repeatable (spark://host:7077 for a standalone cluster).")
@click.option("--seconds", type=float, callback=positive_seconds, default=10.0, show_default=True, help="Capture seconds at scale 1.")
@click.option("--rate", "rate_text", default="1x", show_default=True,
              help="Capture rate, Nx = N x 24,000 packets/s (a bare number is refused with a hint).")
@click.option("--market", "markets", multiple=True, type=click.Choice(["2008", "today"]), default=("2008",),
              show_default=True, help="Capture days of this market (omdp synth --market): 2008 FAST V2, today's "
                                      "OBI v6; repeatable, measured side by side in one run.")
@click.option("--today-rate", "today_rate_text", default="0.02x", show_default=True,
              help="today: the capture rate in omdp synth --market today's units (0.02x: about 300,000 messages/s, "
                   "near 2008's 1x).")
@click.option("--num-lines", type=int, default=24, show_default=True, help="OPRA lines (one file each).")
@click.option("--scale", "scales", default="1,2", show_default=True, help="Capture days of these multiples of --seconds.")
@click.option("--runs", type=int, default=8, show_default=True, help="Synthetic runs for the latency job.")
@click.option("--run-seconds", type=float, default=5.0, show_default=True, help="Length of each synthetic run.")
@click.option("--repeats", type=int, default=3, show_default=True, help="Measured passes per figure (median).")
@click.option("--replay-config", "replay_configs", multiple=True, type=click.Path(dir_okay=False),
              help="Backtest configuration file (omdp analytics backtest --config); repeatable. Default: the live "
                   "defaults and book checks only.")
@click.option("--jobs", "jobs_text", default="feeds,replay,latency", show_default=True,
              help="Which jobs to measure, comma-separated: feeds, replay, latency.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
def analytics_bench(data: Path | None, masters: tuple[str, ...], seconds: float, rate_text: str,
                    markets: tuple[str, ...], today_rate_text: str, num_lines: int, scales: str,
                    runs: int, run_seconds: float, repeats: int, replay_configs: tuple[str, ...],
                    jobs_text: str, json_out: str | None) -> None:
    """Nightly Spark jobs: decode messages/s per executor core, replay messages per task
    CPU-second and wall time against the capture, latency rows/s; local[1] vs local[2]."""
    from ops.bench.analytics import JOBS, run_analytics_bench
    from ops.cli.options import parse_rate_x

    from ops.spark.backtest.backtest_config import BacktestConfigError, load_configs

    jobs = tuple(j.strip() for j in jobs_text.split(",") if j.strip())
    unknown = sorted(set(jobs) - set(JOBS))
    if unknown or not jobs:
        raise click.BadParameter(f"{', '.join(unknown) or 'none given'}: choose from {', '.join(JOBS)}",
                                 param_hint="--jobs")
    rate = parse_rate_x(rate_text)
    today_rate = parse_rate_x(today_rate_text, option="--today-rate")
    try:
        configs = tuple(load_configs(list(replay_configs))) if replay_configs else None
    except BacktestConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--replay-config") from None

    scale_list = [int(s) for s in scales.split(",")]
    res = run_analytics_bench(data, masters, seconds=seconds, rate=rate, num_lines=num_lines, scales=scale_list,
                              runs=runs, run_seconds=run_seconds, repeats=repeats, replay_configs=configs,
                              jobs=jobs, markets=tuple(dict.fromkeys(markets)), today_rate=today_rate)
    out = {"command": "omdp " + " ".join(sys.argv[1:]), **res}
    results = out["results"]
    click.echo(f"machine: {out['machine']['cpu_model']}, {out['machine']['logical_cpus']} CPUs, "
               f"load {out['machine']['load_average'][0]:.2f}")
    click.echo(f"{'master':18s} {'capture':>12s} {'feed':>12s} {'messages':>11s} {'job s':>7s} {'decode s':>9s} {'msg/s':>11s} {'msg/s/core':>11s} "
               f"{'msg/cpu-s':>11s} {'decode only':>11s} {'write cpu':>9s} {'spark cpu':>9s}")
    for r in results:
        for d in r["decode"]:
            click.echo(f"{r['master']:18s} {d['date']:>12s} {d['feed']:>12s} {d['messages']:11,d} {d['feeds_job_wall_s']:7.2f} {d['decode_wall_s']:9.2f} "
                       f"{d['messages_per_s']:11,.0f} {d['messages_per_s_per_core']:11,.0f} {d['messages_per_task_cpu_s']:11,.0f} "
                       f"{d['messages_per_decode_cpu_s']:11,.0f} {d['write_cpu_s']:9.2f} {d['spark_executor_cpu_s']:9.2f}")
    click.echo(f"{'master':18s} {'capture':>12s} {'config':>10s} {'messages':>11s} {'capture s':>9s} {'job s':>8s} "
               f"{'msg/cpu-s':>11s} {'feed cpu':>9s} {'engine cpu':>10s} {'spark cpu':>9s}")
    for r in results:
        for d in r["replay"]:
            click.echo(f"{r['master']:18s} {d['date']:>12s} {d['config']:>10s} {d['messages']:11,d} {d['capture_s']:9.1f} "
                       f"{d['job_wall_s']:8.2f} {d['messages_per_task_cpu_s']:11,.0f} {d['feed_cpu_s']:9.2f} "
                       f"{d['engine_cpu_s']:10.2f} {d['spark_executor_cpu_s']:9.2f}")
    click.echo(f"{'master':18s} {'runs':>5s} {'rows':>11s} {'job s':>9s} {'rows/s':>11s} {'rows/s/core':>11s}")
    for r in results:
        lat = r["latency"]
        if lat is None:
            continue
        rows = lat["sample_rows"] + lat["intended_rows"]
        click.echo(f"{r['master']:18s} {lat['runs']:5d} {rows:11,d} {lat['job_wall_s']:9.2f} "
                   f"{lat['rows_per_s']:11,.0f} {lat['rows_per_s_per_core']:11,.0f}")
    out["targets"] = []
    for line, verdict in analytics_targets(results):
        click.echo(line)
        out["targets"].append(verdict)
    if json_out:
        write_bench_json(json_out, out)
        click.echo(f"wrote {json_out}")


def analytics_targets(results: list[dict]) -> list[tuple[str, dict]]:
    """The Spark jobs' targets on this run's figures: per master the feeds and replay rates
    and the replay's wall time over the capture's; local[2] over local[1] when both ran."""
    from ops.bench.targets import FEEDS, FEEDS_SPEEDUP, REPLAY, REPLAY_WALL

    out = []
    for r in results:
        for d in r["decode"]:
            v = d["messages_per_task_cpu_s"]
            out.append((FEEDS.line(v, f"{r['master']}, {d['date']}"),
                        {**FEEDS.verdict(v), "master": r["master"], **({"feed": d["feed"]} if d.get("feed") else {})}))
        for d in r["replay"]:
            where = f"{r['master']}, {d['date']}, {d['config']}"
            for t, v in ((REPLAY, d["messages_per_task_cpu_s"]), (REPLAY_WALL, d["wall_over_capture"])):
                out.append((t.line(v, where), {**t.verdict(v), "master": r["master"], "config": d["config"]}))
    walls = {r["master"]: {d["date"]: d["decode_wall_s"] for d in r["decode"]} for r in results}
    for date, one in walls.get("local[1]", {}).items():
        two = walls.get("local[2]", {}).get(date)
        if two:
            v = one / two
            out.append((FEEDS_SPEEDUP.line(v, f"{date}: {one:.2f} s against {two:.2f} s"), FEEDS_SPEEDUP.verdict(v)))
    return out
