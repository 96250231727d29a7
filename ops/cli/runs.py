"""``omdp runs ...``: finished runs, from their run directories.

``runs list`` lists every run under ``--data`` (id, topology, capture date, rate, verdict,
when); ``runs show RUN`` prints one run's latency breakdown and whether its rate was
sustainable. A run is given by its id or
its directory (``ops.cli.run_ref``)."""
from __future__ import annotations

import json
from pathlib import Path

import click

from ops.cli.options import DATA_ENVVAR
from ops.cli.run_ref import DATA_HELP, run_dir_of
from ops.cli.table_output import chosen_output, csv_text, output_option

_DATA = click.option("--data", "data_dir", envvar=DATA_ENVVAR, show_envvar=True,
                     type=click.Path(file_okay=False, path_type=Path), default=Path("omdp-data"),
                     show_default=True, help=DATA_HELP)


@click.group("runs")
def runs() -> None:
    """Look at finished runs (runs/<date>/<run_id>/ under --data)."""


@runs.command("list")
@_DATA
@click.option("--json", "as_json", is_flag=True, help="Print the runs as a JSON array instead of a table.")
def list_cmd(data_dir: Path, as_json: bool) -> None:
    """Every run under --data, oldest first: id, topology, capture date, rate, verdict
    (sustainable / not sustainable for a pipeline run; else how it ended), start time (UTC)."""
    from ops.run_index import list_runs

    rows = list_runs(data_dir)
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=1))
        return
    if not rows:
        click.echo(f"no runs under {data_dir / 'runs'}")
        return
    click.echo(f"{'run':28} {'topology':24} {'capture':10} {'rate':>7}  {'verdict':18} started (UTC)")
    for r in rows:
        rate = f"{r.rate_x:g}x" if r.rate_x else "-"
        click.echo(f"{r.run_id:28} {r.topology or '-':24} {r.capture_date or '-':10} {rate:>7}  {r.verdict:18} "
                   f"{r.started}")


@runs.command("show")
@click.argument("run")
@_DATA
@click.option("--json", "as_json", is_flag=True, hidden=True, help="old spelling of --output json")
@output_option
def show(run: str, data_dir: Path, as_json: bool, output: str) -> None:
    """Print the latency breakdown of RUN (its id or its directory), rebuilt from its records,
    and whether its rate was sustainable (the rule of docs/architecture.md, from the same
    records). ``--output csv``: one row per hop, latencies in us (the breakdown alone)."""
    from omdp.metrics.breakdown import Breakdown, format_breakdown
    from omdp.metrics.run_verdict import read_verdict

    run_dir = run_dir_of(run, data_dir, "RUN")
    b = Breakdown.from_run_dir(run_dir)  # a missing or damaged record: one line, exit 1 (ops/cli/errors.py)
    v = read_verdict(run_dir, breakdown=b)
    output = chosen_output(output, as_json)
    if output == "json":
        click.echo(json.dumps({**b.to_dict(), "sustainable": v.judged, "reasons": list(v.reasons),
                                "not_judged": list(v.unknown)}, indent=2))
    elif output == "csv":
        click.echo(csv_text({"hop": hop, **summary} for hop, summary in b.hops.items()))
    else:
        click.echo(format_breakdown(b))
        click.echo("sustainable: " + v.text())
