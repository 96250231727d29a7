"""``omdp bench soak``: a long pipeline run with every process's resident memory followed, and
the run's accounting beside it (ops/bench/soak.py)."""
from __future__ import annotations

from pathlib import Path

import click

from ops.cli.bench.output import write_bench_json

from ops.cli.options import DATA_ENVVAR, parse_rate_x, positive_seconds


@click.command("soak")
@click.argument("topology", default="ops/topologies/opra_fused.toml")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="omdp data directory (captures/, runs/)")
@click.option("--rate", default="5x", show_default=True, help="the replay's rate (Nx)")
@click.option("--seconds", type=float, default=1800.0, show_default=True, callback=positive_seconds,
              help="how long the run lasts")
@click.option("--every", type=click.FloatRange(min=0.5), default=10.0, show_default=True,
              help="seconds between memory samples")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="passed to omdp run --set (repeatable)")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write results here")
def bench_soak(topology: str, data_dir: Path, rate: str, seconds: float, every: float, overrides: tuple[str, ...],
               json_out: Path | None) -> None:
    """Run TOPOLOGY for --seconds at --rate, following each process's memory."""
    from tqdm import tqdm

    from ops.bench.soak import run_soak

    parse_rate_x(rate)
    extra = tuple(a for kv in overrides for a in ("--set", kv))
    with tqdm(total=round(seconds), unit="s", desc="soak", disable=None) as bar:
        def progress(t: float) -> None:
            bar.update(round(t) - bar.n)
        try:
            r = run_soak(topology, data_dir, rate, seconds, every, extra, progress)
        except RuntimeError as e:
            raise click.ClickException(str(e)) from None
    click.echo(f"machine: {r['machine']['cpu_model']} ({r['machine']['logical_cpus']} CPUs); {r['run_command']}")
    click.echo(f"{'process':<34} {'1 min':>8} {'middle':>8} {'highest':>8} {'end':>8} {'MiB/min, 2nd half':>18}")
    for name, m in r["memory"].items():
        click.echo(f"{name:<34} {m['first_min_mib']:>8.1f} {m['middle_mib']:>8.1f} {m['highest_mib']:>8.1f} "
                   f"{m['end_mib']:>8.1f} {m['second_half_mib_per_min']:>18.2f}")
    acc = r["run"].get("accounting", {})
    click.echo("accounting: " + ", ".join(f"{k} {v:,}" for k, v in acc.items() if isinstance(v, int)))
    if json_out:
        write_bench_json(json_out, r)
        click.echo(f"wrote {json_out}")
