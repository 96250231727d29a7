"""``omdp dashboard``: serve the latency dashboard of a finished run (``--run RUN``) or
of a run live on this host (``--live RUN``) until Ctrl-C or SIGTERM; RUN is the run's id or
its directory (``ops.cli.run_ref``).

``omdp run ... --address HOST:PORT`` and ``omdp demo`` start the same dashboard inside
the run's own process (``ops.dashboard.serve.start_dashboard``).
"""
from __future__ import annotations

import threading
from pathlib import Path

import click

from ops.cli.options import DATA_ENVVAR
from ops.cli.run_ref import DATA_HELP, run_dir_of, run_id_of
from ops.cli.stop_signals import stop_on_signals


@click.command("dashboard")
@click.option("--run", "run_ref", default=None, metavar="RUN",
              help="a finished run: its id or its directory (runs/<date>/<run_id>/)")
@click.option("--live", "live_ref", default=None, metavar="RUN",
              help="a run live on this host, by id or directory (reads its stats segment)")
@click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True, type=click.Path(file_okay=False, path_type=Path),
              default=Path("omdp-data"), show_default=True, help=DATA_HELP)
@click.option("--address", default="127.0.0.1:8000", show_default=True,
              help="HOST:PORT to listen on (port 0: any free one)")
@click.option("--read-token", envvar="OMDP_DASHBOARD_TOKEN", default=None,
              help="every figure (API, stream, /metrics) needs this token; env OMDP_DASHBOARD_TOKEN")
def dashboard(run_ref: str | None, live_ref: str | None, data_dir: Path, address: str, read_token: str | None) -> None:
    """Serve the latency dashboard (page, JSON API, /metrics) of one run until Ctrl-C."""
    from omdp.metrics.run_files import RunRecordError
    from ops.dashboard.serve import parse_address, start_dashboard

    if (run_ref is None) == (live_ref is None):
        raise click.UsageError("give exactly one of --run RUN (a finished run) or --live RUN (a running one)")
    run_dir = run_dir_of(run_ref, data_dir, "--run") if run_ref is not None else None
    run_id = run_id_of(live_ref) if live_ref is not None else None
    try:
        host, port = parse_address(address)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--address") from None
    if read_token is not None and not read_token.strip():
        raise click.BadParameter("must not be empty", param_hint="--read-token")
    if run_id is not None:
        _check_live(run_id)
    try:
        server = start_dashboard(run_dir if run_dir is not None else run_id, host, port, read_token=read_token)
    except (ValueError, OSError, RunRecordError) as e:
        raise click.ClickException(str(e)) from None
    if server.exposure_warning:
        click.echo(server.exposure_warning, err=True)
    what = f"run directory {run_dir}" if run_dir is not None else f"live run {run_id}"
    click.echo(f"dashboard of {what} on {server.url} (API docs {server.url}docs); Ctrl-C stops", err=False)
    try:
        with stop_on_signals():
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _check_live(run_id: str) -> None:
    """Fail at start, not with a page of 503s, when run ``run_id`` has no stats segment on
    this host (not started yet, ended, or a typo)."""
    from omdp.metrics.stats_segment import StatsReader, StatsSegmentError, stats_segment_name

    try:
        name = stats_segment_name(run_id)
        reader = StatsReader(run_id)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--live") from None
    except (StatsSegmentError, OSError) as e:
        raise click.BadParameter(f"no live run {run_id!r} on this host (/dev/shm/{name}: {e}); is it running? "
                                 "A finished run: --run RUN", param_hint="--live") from None
    reader.close()
