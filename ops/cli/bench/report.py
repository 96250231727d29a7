"""``omdp bench report``: the bench JSON files as Markdown tables, one per machine (the work is
in ``ops.bench.report``)."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from omdp.atomic_files import write_text_atomic


@click.command("report")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--markdown", "md_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the tables here")
def bench_report(paths: tuple[Path, ...], md_out: Path | None) -> None:
    """Print the figures of the JSON files that `omdp bench ... --json` wrote, one table per
    machine, each figure with its command and date. PATHS: files or folders of *.json
    (default: bench-results/)."""
    from ops.bench.report import report

    given = list(paths) or [Path("bench-results")]
    missing = [p for p in given if not p.exists()]
    if missing:
        click.echo(f"bench report: {missing[0]}: no such file or folder", err=True)
        sys.exit(2)
    text, skipped = report(given)
    for line in skipped:
        click.echo(f"skipped {line}", err=True)
    if not text:
        click.echo(f"bench report: no benchmark figures in {', '.join(map(str, given))}", err=True)
        sys.exit(1)
    click.echo(text, nl=False)
    if md_out:
        write_text_atomic(md_out, text)
