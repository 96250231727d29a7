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
    """Print the latency breakdown of the run in RUN_DIR, rebuilt from its records, and
    whether its rate was sustainable (the rule of docs/architecture.md, from the same records)."""
    from omdp.metrics.breakdown import Breakdown, format_breakdown
    from omdp.metrics.run_files import RunRecordError
    from omdp.metrics.run_verdict import read_verdict

    try:
        b = Breakdown.from_run_dir(run_dir)
        v = read_verdict(run_dir, breakdown=b)
    except RunRecordError as e:
        raise click.ClickException(str(e)) from e
    if as_json:
        click.echo(json.dumps({**b.to_dict(), "sustainable": v.sustainable, "reasons": list(v.reasons)}, indent=2))
        return
    click.echo(format_breakdown(b))
    click.echo("sustainable: " + ("yes" if v.sustainable else "no (" + "; ".join(v.reasons) + ")"))
