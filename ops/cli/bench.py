"""``omdp bench``: the benchmark group. Each benchmark adds its command in its own module."""
from __future__ import annotations

from ops.cli.main import cli


@cli.group("bench")
def bench() -> None:
    """Benchmarks: each prints what it measured and can write it as JSON (--json OUT)."""
