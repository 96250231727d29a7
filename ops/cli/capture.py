"""``omdp capture ...``: tools over recorded captures."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ops.cli.options import writable_output, write_output
from ops.cli.table_output import csv_text, output_option


@click.group("capture")
def capture() -> None:
    """Inspect captures (directories of line pcaps, or single pcaps)."""


@capture.command("stats")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--copies", "copies", default=None, help="Which copy of the lines: A (default) or B, either case.")
@click.option("--copy", "old_copy", default=None, hidden=True,
              help="deprecated alias of --copies (docs/cli.md \"Option spellings\")")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              callback=writable_output,
              help="Also write the statistics as JSON.")
@output_option
def stats(path: Path, copies: str | None, old_copy: str | None, json_out: Path | None, output: str) -> None:
    """Per line and in total: packets/s and messages/s (mean, peak 100 ms and 10 ms windows),
    messages and bytes per packet, and the category mix (decoded in C). Exit status 1 when
    any packet was malformed (the statistics are still printed)."""
    from ops.capture.stats import capture_stats, format_stats
    from ops.cli.options import parse_copies_option

    if copies is not None and old_copy is not None:
        raise click.UsageError("--copy is the old spelling of --copies: give only --copies")
    option = "--copy" if old_copy is not None else "--copies"
    copy = parse_copies_option(old_copy or copies or "A", option=option, one=True)[0].lower()

    st = capture_stats(path, copy, progress=sys.stderr.isatty())
    output = output.lower()
    if output == "json":
        click.echo(json.dumps(st.to_dict(), indent=1))
    elif output == "csv":
        d = st.to_dict()
        click.echo(csv_text([*({"line": k, **v} for k, v in d["lines"].items()), {"line": "total", **d["total"]}]))
    else:
        click.echo(format_stats(st))
    if json_out is not None:
        write_output(json_out, json.dumps(st.to_dict(), indent=1))
    if st.total.bad_packets:
        where = st.total.truncated + st.total.malformed_frames
        raise click.ClickException(f"{path}: {st.total.bad_packets} malformed packet(s)"
                                   + (f" ({'; '.join(where)})" if where else ""))
