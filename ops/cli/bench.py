"""``omdp bench``: the benchmark commands. Each benchmark module adds its subcommand to this
group and writes JSON with ``--json``; docs/benchmarks.md records the results."""
from __future__ import annotations

import click

from ops.cli.main import cli


@cli.group("bench")
def bench() -> None:
    """Benchmarks: each prints a table and can write its results as JSON."""
