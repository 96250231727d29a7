"""``omdp bench synth``: how fast ``omdp synth`` writes a capture (the work is in
``ops.bench.synth``)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from ops.cli.options import DATA_ENVVAR, positive_seconds


@click.command("synth")
@click.option("--seconds", type=float, callback=positive_seconds, default=60.0, show_default=True, help="Length of the capture.")
@click.option("--rate", "rate_text", default="1x", show_default=True, help="Nx = N x 24,000 packets/s.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--num-lines", type=click.IntRange(1, 99), default=24, show_default=True)
@click.option("--data", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the capture here (default: a temporary directory, removed after).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the results as JSON.")
def bench_synth(seconds: float, rate_text: str, seed: int, num_lines: int, data: Path | None, json_out: Path | None) -> None:
    """Generation speed of omdp synth: messages/s of wall and CPU time, per stage."""
    from omdp.runtime.machine import machine_info
    from ops.bench.synth import measure_synth
    from ops.cli.options import parse_rate_x

    rate = parse_rate_x(rate_text)
    if data is not None:
        result = measure_synth(data, seconds, rate, seed, num_lines)
    else:
        with tempfile.TemporaryDirectory(prefix="omdp-bench-synth-") as tmp:
            result = measure_synth(Path(tmp), seconds, rate, seed, num_lines)
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
