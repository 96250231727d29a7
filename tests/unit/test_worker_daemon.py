"""ops.spark.common.worker_daemon: PySpark's and py4j's zips move to the end of the path, the rest
keeps its order; it imports nothing of PySpark before the path is set."""
from __future__ import annotations

import ast
from pathlib import Path

from ops.spark.common import worker_daemon
from ops.spark.common.worker_daemon import zips_last


def test_zips_go_last_in_their_order() -> None:
    lib = "/opt/spark/python/lib"
    path = [f"{lib}/pyspark.zip", f"{lib}/py4j-0.10.9.9-src.zip", "/proj", "/usr/lib/python311.zip",
            "/venv/site-packages", "/data/my-pyspark.zip"]
    assert zips_last(path) == ["/proj", "/usr/lib/python311.zip", "/venv/site-packages", "/data/my-pyspark.zip",
                               f"{lib}/pyspark.zip", f"{lib}/py4j-0.10.9.9-src.zip"]
    assert zips_last(["/a", "/b"]) == ["/a", "/b"]
    assert zips_last(["C:\\spark\\python\\lib\\pyspark.zip", "/a"]) == ["/a", "C:\\spark\\python\\lib\\pyspark.zip"]


def test_no_pyspark_import_at_module_level() -> None:
    tree = ast.parse(Path(worker_daemon.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name for n in top for a in n.names} | {n.module for n in top if isinstance(n, ast.ImportFrom)}
    assert not any(n and n.split(".")[0] in ("pyspark", "py4j") for n in names)
