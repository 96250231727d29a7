"""``omdp demo``: synthesize a short capture (unless there is one), run the fused pipeline on
this machine for about 30 s and print the latency breakdown (ops/pipeline/demo.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ops.cli.options import DATA_ENVVAR, one_address, positive_seconds, writable_output
from ops.cli.run import check_rate
from ops.progress import RunCountdown


@click.command("demo")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
              show_default=True, help="data directory: the capture and the run are kept there")
@click.option("--seconds", type=float, callback=positive_seconds, default=30.0, show_default=True, help="how long the pipeline runs")
@click.option("--rate", default="1x", show_default=True, callback=check_rate, help="replay rate, Nx = N x 24,000 packets/s")
@click.option("--capture-seconds", type=float, default=5.0, show_default=True,
              help="length of the capture synthesized when there is none (it is replayed in a loop)")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the synthetic capture")
@click.option("--address", "dashboard", default=None, metavar="HOST:PORT",
              help="serve the live dashboard on HOST:PORT, and the finished run until Ctrl-C")
@click.option("--dashboard", "dashboard_old", default=None, hidden=True, help="old spelling of --address")
@click.option("--json", "json_out", default=None, metavar="OUT", callback=writable_output,
              help="also write the report as JSON to OUT")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar or progress messages (the report still prints)")
def demo(data_dir: Path, seconds: float, rate: str, capture_seconds: float, seed: int, dashboard: str | None,
         json_out: str | None, quiet: bool, dashboard_old: str | None) -> None:
    """Synthesize a February-2008-like capture, replay it through feed handler -> decision
    engines -> collectors on this machine, print the latency breakdown."""
    dashboard = one_address(dashboard, dashboard_old, "--dashboard")
    from omdp.topology.load import TopologyError
    from ops.cli.run import dashboard_hook
    from ops.pipeline.capture_info import CaptureInputError
    from ops.pipeline.demo import run_demo

    hook = dashboard_hook(dashboard) if dashboard else None
    try:
        with RunCountdown(seconds, desc="demo", quiet=quiet) as progress:
            run = run_demo(data_dir, seconds, rate, capture_seconds, seed, say=progress.write, dashboard=hook,
                           running=progress.start)
    except (TopologyError, CaptureInputError) as e:
        click.echo(str(e), err=True)
        sys.exit(2)
    click.echo(run.text())
    if dashboard:
        _serve_until_interrupted(dashboard, run.run_dir)
    if json_out:
        from ops.cli.options import write_output

        write_output(json_out, json.dumps(run.to_dict(), indent=2, default=str))
    if run.result.failure:
        click.echo(run.result.failure, err=True)
    sys.exit(0 if run.result.ok else 1)


def _serve_until_interrupted(address: str, run_dir: Path) -> None:
    """With --dashboard the demo keeps serving the finished run until Ctrl-C."""
    import signal

    from ops.dashboard.serve import parse_address, start_dashboard

    host, port = parse_address(address)
    server = start_dashboard(Path(run_dir), host, port)
    click.echo(f"dashboard: {server.url} (the finished run; Ctrl-C to leave)", err=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
