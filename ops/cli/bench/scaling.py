"""``omdp bench scaling --cores 2,4,8,16 --rates 2x,5x,10x,20x``: the paper's shared-memory
layout scaled to each core count and swept over the rates (ops/bench/scaling.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ops.cli.bench.sweep_output import emit_sweep
from ops.cli.options import DATA_ENVVAR, positive_seconds, writable_output


def _cores(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    try:
        cores = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(f"give core counts such as 2,4,8,16 (got {value!r})") from None
    if not cores or min(cores) < 2:
        raise click.BadParameter(f"each core count must be 2 or more (got {value!r})")
    return sorted(set(cores))


@click.command("scaling")
@click.option("--cores", default="2,4,8,16", show_default=True, callback=_cores,
              help="core counts: the paper's layout is scaled to each (CPUs 0..N-1)")
@click.option("--rates", default="2x,5x,10x,15x,20x,30x", show_default=True, help="comma-separated rates, Nx")
@click.option("--seconds", type=float, callback=positive_seconds, default=10.0, show_default=True,
              help="replay length of each run")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory (captures/, runs/)")
@click.option("--capture-date", default=None, help="capture to replay (default: the newest)")
@click.option("--cores-per-sender", type=click.IntRange(1), default=4, show_default=True,
              help="one multicast feed sender per this many cores (the paper's layout: 16)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override every scaled layout (repeatable), e.g. operators.de.params.pricing_period_s=5")
@click.option("--stop-after-failures", type=int, default=2, show_default=True,
              help="skip a core count's higher rates after this many in a row it did not keep up with")
@click.option("--sample-every", type=int, default=None, help="engines forward 1 in N messages (default 1,600)")
@click.option("--topologies-out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="where the scaled topology files are written (default: DATA/scaling/SWEEP)")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=writable_output,
              help="write every point here")
@click.option("--markdown", "md_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=writable_output,
              help="write the table for docs/benchmarks.md here")
def bench_scaling(cores: list[int], rates: str, seconds: float, data_dir: Path, capture_date: str | None,
                  cores_per_sender: int, overrides: tuple[str, ...], stop_after_failures: int, sample_every: int | None, topologies_out: Path | None,
                  json_out: Path | None, md_out: Path | None) -> None:
    """Size a deployment: the sustainable rate and the latency from intended per core count."""
    import time

    from omdp.topology.load import TopologyError
    from ops.bench.scaling import markdown, run_scaling
    from ops.pipeline.capture_info import CaptureInputError, latest_capture_date

    date = capture_date or latest_capture_date(data_dir)
    if date is None:
        click.echo(f"no capture under {data_dir / 'captures'}: make one with `omdp synth`", err=True)
        sys.exit(2)
    out_dir = topologies_out or data_dir / "scaling" / time.strftime("%Y%m%dT%H%M%S")
    try:
        result = run_scaling(cores, [r.strip() for r in rates.split(",") if r.strip()], data_dir, date, seconds,
                             out_dir, say=lambda line: click.echo(line, err=True),
                             stop_after_failures=stop_after_failures, sample_every=sample_every,
                             cores_per_sender=cores_per_sender, overrides=overrides)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--cores") from None
    except (TopologyError, CaptureInputError) as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    emit_sweep("scaling", result.to_dict(), lambda command, machine: markdown(result, command, machine), json_out, md_out)
