"""``--output text|json|csv``: how a command that prints a table prints it (docs/cli.md
"Option spellings"). ``text`` is the table for people (latencies through ``omdp.units``);
``json`` and ``csv`` keep the raw numbers for scripts and spreadsheets: CSV has one row per
table row, nested values as JSON in their cell."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import click

OUTPUT_FORMATS = ("text", "json", "csv")


def output_option(f: Callable) -> Callable:
    """The ``--output``/``-o`` option (``--json`` stays where a command had it: ``--output json``)."""
    return click.option("--output", "-o", "output", type=click.Choice(OUTPUT_FORMATS, case_sensitive=False),
                        default="text", show_default=True, help="print the table as text, json or csv")(f)


def chosen_output(output: str, as_json: bool) -> str:
    """``--output`` with a command's older ``--json`` flag folded in (both: they must agree)."""
    output = output.lower()
    if as_json and output not in ("text", "json"):
        raise click.UsageError(f"--json and --output {output}: give one (--json is --output json)")
    return "json" if as_json else output


def csv_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows as CSV with a header (the union of the rows' keys, in first-seen order)."""
    rows = list(rows)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (dict, list, tuple)) else v for k, v in r.items()})
    return out.getvalue().rstrip("\n")
