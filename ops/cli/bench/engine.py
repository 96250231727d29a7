"""``omdp bench engine``: the decision engine's ns per message (ops/bench/engine.py)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from omdp.units import fmt_ns, fmt_us


@click.command("engine")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write results here")
@click.option("--messages", default=1_000_000, show_default=True, help="re-quotes timed per run")
@click.option("--underlyings", default=400, show_default=True,
              help="underlyings in the engine's share of the model market (not with --capture)")
@click.option("--runs", default=5, show_default=True, help="timed runs; the median is reported")
@click.option("--clock", type=click.Choice(["auto", "tsc", "realtime"]), default="auto", show_default=True,
              help="stamp clock of the engine's de_in / de_out, as `omdp run --clock`")
@click.option("--capture", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="time a capture's own messages (a directory with manifest.json, e.g. DATA/captures/DATE) "
                   "instead of the model market")
@click.option("--engines", type=click.IntRange(min=1), default=2, show_default=True,
              help="with --capture: engines the underlyings are balanced over; engine 0's share is timed")
@click.option("--max-series", type=click.IntRange(min=1, max=1 << 24), default=None,
              help="series slots of the timed engine (default: the model market's series with room, or the "
                   "engine's default 131,072 with --capture; a today capture's share needs about 524,288)")
def bench_engine(json_out: Path | None, messages: int, underlyings: int, runs: int, clock: str,
                 capture: Path | None, engines: int, max_series: int | None) -> None:
    """Time the C decision engine per message, the pricing refresh, and a Python custom engine."""
    from omdp.clock import TscClockError
    from ops.bench.engine import CaptureShareError, run_engine_bench
    from ops.bench.targets import ENGINE

    if capture is not None and not (capture / "manifest.json").is_file():
        raise click.UsageError(f"--capture {capture}: no manifest.json there (a capture's directory is "
                               "DATA/captures/DATE)")
    try:
        r = run_engine_bench(n_underlyings=underlyings, n_messages=messages, runs=runs, clock=clock,
                             capture=capture, engines=engines, max_series=max_series)
    except (TscClockError, CaptureShareError) as e:
        raise click.UsageError(str(e)) from None
    m = r["market"]
    click.echo(f"machine: {r['machine']['cpu_model']} ({r['machine']['logical_cpus']} CPUs); stamp clock {r['stamp_clock']}")
    click.echo("times: CPU time of the benchmark thread, median of the runs")
    if capture is not None:
        click.echo(f"capture: {m['capture']}, engine 0 of {m['engines']}: {m['engine_messages']} of "
                   f"{m['capture_messages']} messages (all to warm up)")
    click.echo(f"market: {m['series']} series in {m['groups']} groups ({m['max_series']:,} slots, state "
               f"{m['state_bytes'] / 2**20:,.1f} MiB); {m['timed_messages']} messages timed per run, {runs} runs")
    if r["counters"]["table_full"]:
        click.echo(f"warning: {r['counters']['table_full']:,} quotes refused for lack of a series slot "
                   "(table_full): give --max-series the share's series count with room")
    for e in r["engine"].values():
        click.echo(f"C engine, batches of {e['batch']:>4} (called from {e['driver']:>6}): "
                   f"{e['ns_per_message_median']:7.1f} ns/message median "
                   f"(min {e['ns_per_message_min']:.1f}, max {e['ns_per_message_max']:.1f}; "
                   f"wall {e['wall_ns_per_message_median']:.1f})")
    sizes = [r["engine"][k]["ns_per_message_median"] for k in ("batch_56", "batch_28") if k in r["engine"]]
    slower = max(sizes) if sizes else None
    click.echo(ENGINE.line(slower, "on the capture's own messages" if capture else "on the model market"))
    r["targets"] = [ENGINE.verdict(slower)]
    click.echo(f"pricing every series (snapshot excluded): {fmt_ns(r['pricing_refresh_s_median'] * 1e9)} median")
    inc = r["pricing_refresh_incremental"]
    click.echo(f"pricing refresh after {inc['messages_between']:,} re-quotes, building on the last (all of it: "
               f"snapshot, pricing, publish): {fmt_ns(inc['s_median'] * 1e9)} median, "
               f"{fmt_ns(inc['cpu_s_median'] * 1e9)} of CPU, {inc['repriced_share_median']:.1%} of the series priced again")
    for c in r["custom_python_engine"].values():
        click.echo(f"Python custom engine, batches of {c['batch']:>4}: {fmt_us(c['us_per_batch_median']):>9}/batch "
                   f"({c['ns_per_message_median']:.0f} ns/message)")
    if json_out:
        write_bench_json(json_out, r)
        click.echo(f"wrote {json_out}")
