"""``omdp bench market-state``: market statistics' CPU per message, shared state against the
re-partitioning baseline, over partitions and key skew (ops/market/bench.py); with
``--pipeline``, the shipped pipelines with the statistics off, shared and routed, every
partition's CPU (ops/market/pipeline_bench.py)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected numbers separated by commas") from None


def _emit(r: dict) -> str:
    """The windows' emission after their end, or n/a when no window closed while records came."""
    if r.get("emit_wall_us_p50") is None:
        return "n/a"
    return (f"{r['emit_event_ms_p50']:.0f} / {r['emit_event_ms_p99']:.0f} ms, "
            f"wall {r['emit_wall_us_p50']:,.0f} / {r['emit_wall_us_p99']:,.0f} us, "
            f"CPU {r['emit_cpu_us_p50']:,.0f} / {r['emit_cpu_us_p99']:,.0f} us")


def _pipeline(parts: list[int], data: Path, date: str, rate: str, rounds: int, json_out: Path | None) -> None:
    from ops.market.pipeline_bench import TOPOLOGIES, PipelineRunFailed, run_pipeline_bench

    if any(p not in TOPOLOGIES for p in parts):
        raise click.BadParameter(f"{','.join(map(str, parts))}: the pipeline comparison has topologies for "
                                 f"{' and '.join(map(str, TOPOLOGIES))} handler partitions", param_hint="--partitions")
    if not (data / "captures" / date).is_dir():
        raise click.BadParameter(f"{data / 'captures' / date}: no such capture (omdp synth --data {data})",
                                 param_hint="--capture-date")
    try:
        rows = run_pipeline_bench(parts, data, date, rate, rounds, progress=lambda m: click.echo(m, err=True))
    except PipelineRunFailed as e:
        raise click.ClickException(f"market-state --pipeline: {e}") from None
    click.echo(f"capture {date}, one lap at {rate}, median of {rounds} rounds (configurations in turn); loop thread "
               "CPU of every partition (all spin-block) per message received; over off: the statistics' ns per "
               "message and their share of the pipeline's CPU, counting every partition, and counting the handlers "
               "and leaders only; work est.: the run report's estimate, summed")
    click.echo(f"{'parts':>5} {'mode':>7} {'pipeline ns/msg':>16} {'handlers':>9} {'leaders':>8} {'rest':>7} "
               f"{'over off':>15} {'handlers+leaders':>17} {'route/shared':>13} {'work est.':>10} {'windows':>9}")
    shared = {r["partitions"]: r for r in rows if r["mode"] == "shared"}
    for r in rows:
        over = own = ratio = ""
        if r["mode"] != "off":
            over = f"{r['over_off_ns_per_msg']:+,.1f} ({r['over_off_share']:+.0%})"
            own = f"{r['own_over_off_ns_per_msg']:+,.1f} ({r['own_over_off_share']:+.0%})"
        s = shared.get(r["partitions"])
        if r["mode"] == "route" and s and s["over_off_ns_per_msg"] > 0 and s["own_over_off_ns_per_msg"] > 0:
            ratio = (f"{r['over_off_ns_per_msg'] / s['over_off_ns_per_msg']:.1f}x / "
                     f"{r['own_over_off_ns_per_msg'] / s['own_over_off_ns_per_msg']:.1f}x")
        windows = "" if r["complete"] is None else "complete" if r["complete"] else "INCOMPLETE"
        click.echo(f"{r['partitions']:>5} {r['mode']:>7} {r['total_ns_per_msg']:>16,.1f} {r['handler_ns_per_msg']:>9,.1f} "
                   f"{r['leader_ns_per_msg']:>8,.1f} {r['other_ns_per_msg']:>7,.1f} {over:>15} {own:>17} {ratio:>13} "
                   f"{r['work_total_ns_per_msg']:>10,.1f} {windows:>9}")
    if json_out:
        write_bench_json(json_out, {"rows": rows})
        click.echo(f"wrote {json_out}")


@click.command("market-state")
@click.option("--messages", type=click.IntRange(min=10_000), default=1_000_000, show_default=True,
              help="messages in the synthetic stream")
@click.option("--partitions", help="partition counts (leaders = partitions, <= 8) [default: 1,2,4; --pipeline: 1,2]")
@click.option("--skew", "skews", default="0.2,1.0,2.0", show_default=True, help="Zipf exponents of the underlyings")
@click.option("--window-ms", type=click.IntRange(min=1), default=1000, show_default=True, help="window length")
@click.option("--runs", type=click.IntRange(min=1), default=3, show_default=True,
              help="runs per point; medians reported")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write results here")
@click.option("--pipeline", is_flag=True,
              help="run the shipped pipelines instead (statistics off / shared / route at 1 and 2 handler "
                   "partitions over a capture, every partition's CPU)")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), envvar="OMDP_DATA",
              default="omdp-data", show_default=True, help="--pipeline: the data directory of the capture")
@click.option("--capture-date", default="2008-02-04", show_default=True, help="--pipeline: the capture replayed")
@click.option("--rate", default="1x", show_default=True, help="--pipeline: replay rate")
@click.option("--rounds", type=click.IntRange(min=1), default=2, show_default=True,
              help="--pipeline: rounds of every configuration in turn; medians reported")
def bench_market(messages: int, partitions: str | None, skews: str, window_ms: int, runs: int, json_out: Path | None,
                 pipeline: bool, data_dir: Path, capture_date: str, rate: str, rounds: int) -> None:
    """CPU per message of market statistics: shared state vs the re-partitioning baseline."""
    from ops.market.bench import run_market_bench

    partitions = partitions or ("1,2" if pipeline else "1,2,4")
    parts = [int(p) for p in _floats(partitions)]
    if not parts or any(p < 1 or p > 64 for p in parts):
        raise click.BadParameter(f"{partitions!r}: partition counts must be 1 .. 64", param_hint="--partitions")
    if pipeline:
        _pipeline(parts, data_dir, capture_date, rate, rounds, json_out)
        return
    rows = run_market_bench(messages, parts, _floats(skews), window_ms, runs)
    click.echo(f"{messages:,} messages, {window_ms} ms windows, median of {runs} runs; thread CPU, no transport")
    click.echo(f"{'skew':>5} {'parts':>5} {'mode':>7} {'partition ns/msg':>17} {'leader ns/msg':>14} "
               f"{'total ns/msg':>13} {'deltas/msg':>11} {'baseline/shared':>16} "
               f"{'emitted after end: event ms, wall us, CPU us (p50 / p99)':>64}")
    shared = {}
    for r in rows:
        key = (r["skew"], r["partitions"])
        if r["mode"] == "shared":
            shared[key] = r["total_ns_per_msg"]
        ratio = f"{r['total_ns_per_msg'] / shared[key]:.1f}x" if r["mode"] == "route" and key in shared else ""
        click.echo(f"{r['skew']:>5g} {r['partitions']:>5} {r['mode']:>7} {r['partition_ns_per_msg']:>17.1f} "
                   f"{r['leader_ns_per_msg']:>14.1f} {r['total_ns_per_msg']:>13.1f} "
                   f"{r['deltas_per_msg']:>11.3f} {ratio:>16} {_emit(r):>64}")
    if json_out:
        write_bench_json(json_out, {"rows": rows})
        click.echo(f"wrote {json_out}")
