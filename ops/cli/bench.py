"""``omdp bench``: the benchmark commands; each benchmark module adds its command here."""
from __future__ import annotations

from ops.cli.main import cli


@cli.group("bench")
def bench() -> None:
    """Benchmarks: each writes JSON with --json and states machine and command."""
