"""One real local SparkSession per test module: local[2], web UI off, logs at WARN."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pyspark.sql import SparkSession

from ops.spark.common.session import build_session


@contextmanager
def local_spark(app_name: str) -> Iterator[SparkSession]:
    """A local[2] session for the duration of a test module (skips without Java)."""
    if shutil.which("java") is None:
        pytest.skip("no Java runtime: Spark 4 needs Java 17 or later")
    spark = build_session(app_name, "local[2]", ui=False)
    assert spark.conf.get("spark.ui.enabled") == "false"
    try:
        yield spark
    finally:
        spark.stop()
