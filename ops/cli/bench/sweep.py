"""``omdp bench sweep TOPOLOGY... --rates 1x,2.5x,5x``: the pipeline at each rate and
configuration, the sustainable rate of each (ops/pipeline/sweep.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ops.cli.bench.sweep_output import emit_sweep
from ops.cli.options import DATA_ENVVAR, positive_seconds, writable_output


@click.command("sweep")
@click.argument("topologies", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--rates", default="1x,2.5x,5x,10x", show_default=True, help="comma-separated rates, Nx")
@click.option("--seconds", type=float, callback=positive_seconds, default=30.0, show_default=True, help="replay length of each run")
@click.option("--knobs", default="tuned,default", show_default=True,
              help="Vega knob sets for topologies with channels: tuned (the file's), default (the paper's)")
@click.option("--inputs", default="ring", show_default=True,
              help="feed handler inputs, comma-separated: ring, multicast (kernel UDP sockets over loopback), "
                   "multicast_veth (the same over a veth pair across two namespaces), xdp (AF_XDP on both ends of "
                   "that pair); the veth inputs need root (docs/xdp.md)")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory (captures/, runs/)")
@click.option("--capture-date", default=None, help="capture to replay (default: the newest)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="override every topology (repeatable)")
@click.option("--stop-after-failures", type=int, default=2, show_default=True,
              help="skip a configuration's higher rates after this many unsustainable ones in a row")
@click.option("--sample-every", type=int, default=None, help="engines forward 1 in N messages (default 1,600)")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=writable_output,
              help="write every run's figures here")
@click.option("--markdown", "md_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=writable_output,
              help="write the table for docs/benchmarks.md here")
def bench_sweep(topologies: tuple[str, ...], rates: str, seconds: float, knobs: str, inputs: str, data_dir: Path,
                capture_date: str | None, overrides: tuple[str, ...], stop_after_failures: int,
                sample_every: int | None, json_out: Path | None, md_out: Path | None) -> None:
    """Run each topology at each rate (one run at a time, one sweep_id) and report the
    breakdown, missed ratio, achieved rate and the sustainable rate per configuration."""
    from omdp.topology.load import TopologyError
    from ops.pipeline.capture_info import CaptureInputError, latest_capture_date
    from ops.netns.veth import make_veth, xdp_veth_unavailable
    from ops.pipeline.sweep import INPUTS, KNOB_SETS, VETH_INPUTS, configurations, markdown, run_sweep, sweep_dict

    knob_sets = [k.strip() for k in knobs.split(",") if k.strip()]
    bad = [k for k in knob_sets if k not in KNOB_SETS]
    if bad:
        raise click.BadParameter(f"unknown knob set {bad[0]!r} (known: {', '.join(KNOB_SETS)})", param_hint="--knobs")
    input_list = [i.strip() for i in inputs.split(",") if i.strip()]
    if not input_list or any(i not in INPUTS for i in input_list):
        raise click.BadParameter(f"give one or more of {', '.join(INPUTS)}, comma-separated", param_hint="--inputs")
    on_veth = [i for i in input_list if i in VETH_INPUTS]
    why = xdp_veth_unavailable() if on_veth else None
    if why:
        click.echo(f"--inputs {','.join(on_veth)}: {why}", err=True)
        sys.exit(2)
    date = capture_date or latest_capture_date(data_dir)
    if date is None:
        click.echo(f"no capture under {data_dir / 'captures'}: make one with `omdp synth`", err=True)
        sys.exit(2)
    veth = make_veth() if on_veth else None
    try:
        configs = configurations(list(topologies), knob_sets, input_list, overrides, veth)
        sweep = run_sweep(configs, [r.strip() for r in rates.split(",") if r.strip()], data_dir, date, seconds,
                          say=lambda line: click.echo(line, err=True), stop_after_failures=stop_after_failures,
                          sample_every=sample_every)
    except (TopologyError, CaptureInputError, ValueError) as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    finally:
        if veth is not None:
            veth.close()
    emit_sweep("sweep", sweep_dict(sweep), lambda command, machine: markdown(sweep, command, machine), json_out, md_out)
