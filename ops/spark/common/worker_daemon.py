"""The executors' Python worker daemon (``spark.python.daemon.module``): PySpark's own,
started after moving PySpark's zip archives to the end of the import path.

Spark starts the daemon with ``$SPARK_HOME/python/lib/pyspark.zip`` and the py4j zip first
on ``PYTHONPATH``. Modules imported from a zip are compiled from source on every import
(nothing caches their bytecode), and each worker the daemon forks imports ``pyspark.worker``
and what it needs: about a second of CPU per worker before its first task (measured in
docs/benchmarks.md). Where PySpark is installed as a package too (pip), its cached bytecode
is used instead; where it is only in the zips (a Spark distribution), they stay on the path
and nothing changes. Nothing of PySpark may be imported before the path is set, so this
module imports only the standard library at the top.
"""
from __future__ import annotations

import sys


def is_spark_zip(entry: str) -> bool:
    """True for an import path entry that is PySpark's or py4j's zip archive."""
    name = entry.replace("\\", "/").rsplit("/", 1)[-1]
    return name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith(".zip"))


def zips_last(path: list[str]) -> list[str]:
    """``path`` with PySpark's and py4j's zip archives moved to the end, order otherwise kept."""
    return [p for p in path if not is_spark_zip(p)] + [p for p in path if is_spark_zip(p)]


def main() -> None:
    """Run PySpark's daemon with the zips last on the path."""
    sys.path[:] = zips_last(sys.path)
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
