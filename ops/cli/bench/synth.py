"""``omdp bench synth``: how fast ``omdp synth`` writes a capture (the work is in
``ops.bench.synth``)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from ops.cli.options import DATA_ENVVAR, positive_seconds


@click.command("synth")
@click.option("--market", type=click.Choice(["2008", "today"]), default="2008", show_default=True,
              help="2008 (FAST V2) or today (OBI v6, docs/synth.md).")
@click.option("--seconds", type=float, callback=positive_seconds, default=None,
              help="Length of the capture [default 60; today 10].")
@click.option("--rate", "rate_text", default=None,
              help="2008: Nx = N x 24,000 packets/s [default 1x]; today: N x the profile's mean [default 0.02x].")
@click.option("--underlyings", type=click.IntRange(1, None), default=None, help="today: underlyings [default 5,000].")
@click.option("--series", type=click.IntRange(4, None), default=None, help="today: series [default 1,000,000].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--num-lines", type=click.IntRange(1, 99), default=24, show_default=True)
@click.option("--data", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the capture here (default: a temporary directory, removed after).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the results as JSON.")
def bench_synth(market: str, seconds: float | None, rate_text: str | None, underlyings: int | None, series: int | None,
                seed: int, num_lines: int, data: Path | None, json_out: Path | None) -> None:
    """Generation speed of omdp synth: messages/s of wall and CPU time, per stage."""
    from omdp.runtime.machine import machine_info
    from ops.bench.synth import measure_synth, measure_synth_today
    from ops.cli.options import parse_rate_x

    if market == "today":
        seconds = seconds or 10.0
        rate = parse_rate_x(rate_text) if rate_text else None

        def measure(where: Path) -> dict:
            return measure_synth_today(where, seconds, rate, seed, underlyings, series)
    else:
        seconds = seconds or 60.0
        rate = parse_rate_x(rate_text or "1x")

        def measure(where: Path) -> dict:
            return measure_synth(where, seconds, rate, seed, num_lines)
    rate_text = f"{rate if rate is not None else 0.02:g}x"
    if data is not None:
        result = measure(data)
    else:
        with tempfile.TemporaryDirectory(prefix="omdp-bench-synth-") as tmp:
            result = measure(Path(tmp))
    result = {"benchmark": "synth", "machine": machine_info(), **result}
    click.echo(f"{result['messages']:,} messages, {result['packets']:,} packets ({result['messages_per_packet']} per packet) "
               f"for {seconds:g} s at {rate_text}")
    click.echo(f"wall {result['wall_s']:.1f} s (setup {result['setup_wall_s']:.1f} s), CPU {result['cpu_s']:.1f} s: "
               f"{result['msgs_per_s_wall']:,} messages/s wall, {result['msgs_per_s_cpu']:,} messages/s CPU "
               f"({result['msgs_per_s_run_cpu']:,} after setup)")
    click.echo(f"peak memory (max RSS of the process) {result['max_rss_mb']} MB")
    for name, st in result["stages"].items():
        click.echo(f"  {name:<8} cpu {st['cpu_s']:7.2f} s  wall {st['wall_s']:7.2f} s")
    click.echo(f"machine: {result['machine']['cpu_model']}, {result['machine']['logical_cpus']} CPUs, "
               f"load average {result['machine']['load_average']}")
    if json_out is not None:
        write_bench_json(json_out, result, indent=1)
