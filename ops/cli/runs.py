"""``omdp runs ...``: finished runs, from their run directories."""
from __future__ import annotations

import json
from pathlib import Path

import click

from ops.cli.table_output import chosen_output, csv_text, output_option


@click.group("runs")
def runs() -> None:
    """Look at finished runs (runs/<date>/<run_id>/ under --data)."""


@runs.command("show")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, hidden=True, help="old spelling of --output json")
@output_option
def show(run_dir: Path, as_json: bool, output: str) -> None:
    """Print the latency breakdown of the run in RUN_DIR, rebuilt from its records
    (``--output csv``: one row per hop, latencies in us)."""
    from omdp.metrics.breakdown import Breakdown, format_breakdown
    from omdp.metrics.run_files import RunRecordError

    try:
        b = Breakdown.from_run_dir(run_dir)
    except RunRecordError as e:
        raise click.ClickException(str(e)) from e
    output = chosen_output(output, as_json)
    if output == "json":
        click.echo(json.dumps(b.to_dict(), indent=2))
    elif output == "csv":
        click.echo(csv_text({"hop": hop, **summary} for hop, summary in b.hops.items()))
    else:
        click.echo(format_breakdown(b))
