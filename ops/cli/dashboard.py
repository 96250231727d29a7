"""``omdp dashboard``: serve the latency dashboard of a finished run (``--run RUN_DIR``) or
of a run live on this host (``--live RUN_ID``) until Ctrl-C.

``omdp run ... --dashboard HOST:PORT`` and ``omdp demo`` start the same dashboard inside
the run's own process (``ops.dashboard.serve.start_dashboard``).
"""
from __future__ import annotations

import threading
from pathlib import Path

import click


@click.command("dashboard")
@click.option("--run", "run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="a finished run directory (runs/<date>/<run_id>/)")
@click.option("--live", "run_id", default=None, help="the id of a run live on this host (reads its stats segment)")
@click.option("--address", default="127.0.0.1:8000", show_default=True,
              help="HOST:PORT to listen on (port 0: any free one)")
def dashboard(run_dir: Path | None, run_id: str | None, address: str) -> None:
    """Serve the latency dashboard (page, JSON API, /metrics) of one run until Ctrl-C."""
    from omdp.metrics.run_files import RunRecordError
    from ops.dashboard.serve import parse_address, start_dashboard

    if (run_dir is None) == (run_id is None):
        raise click.UsageError("give exactly one of --run RUN_DIR (a finished run) or --live RUN_ID (a running one)")
    try:
        host, port = parse_address(address)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--address") from None
    if run_id is not None:
        _check_live(run_id)
    try:
        server = start_dashboard(run_dir if run_dir is not None else run_id, host, port)
    except (ValueError, OSError, RunRecordError) as e:
        raise click.ClickException(str(e)) from None
    what = f"run directory {run_dir}" if run_dir is not None else f"live run {run_id}"
    click.echo(f"dashboard of {what} on {server.url} (API docs {server.url}docs); Ctrl-C stops", err=False)
    try:
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
                                 "A finished run: --run RUN_DIR", param_hint="--live") from None
    reader.close()
