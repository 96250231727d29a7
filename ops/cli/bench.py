"""``omdp bench ...``: benchmarks that write JSON; each lives in ``ops.bench``."""
from __future__ import annotations

from ops.cli.main import cli


@cli.group("bench")
def bench() -> None:
    """Run a benchmark and print (and optionally write as JSON) its figures."""
