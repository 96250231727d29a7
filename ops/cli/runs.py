"""``omdp runs ...``: finished runs, from their run directories."""
from __future__ import annotations

import json
from pathlib import Path

import click


@click.group("runs")
def runs() -> None:
    """Look at finished runs (runs/<date>/<run_id>/ under --data)."""


@runs.command("show")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the breakdown as JSON instead of a table.")
def show(run_dir: Path, as_json: bool) -> None:
    """Print the latency breakdown of the run in RUN_DIR, rebuilt from its records."""
    from omdp.metrics.breakdown import Breakdown, format_breakdown

    b = Breakdown.from_run_dir(run_dir)  # a missing or damaged record: one line, exit 1 (ops/cli/errors.py)
    click.echo(json.dumps(b.to_dict(), indent=2) if as_json else format_breakdown(b))
