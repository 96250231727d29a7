"""One Spark task per item: ``map_tasks(spark, items, fn)`` runs ``fn(item)`` on the
executors and hands the results back in item order.

The nightly jobs' stages are a few dozen Python tasks that each do seconds of C work and
hand back a few small values (a capture file's outcome, a backtest stage's status row, a run's
analysis). They run as a plain RDD of item numbers with the items broadcast, not as a
DataFrame's ``mapInArrow`` over a range: its SQL plan and Arrow streams cost a Python task
about twice the fixed time (8 empty tasks) and the backtest of a 30 s day about 5 s of wall
time on two cores (docs/benchmarks.md, 2026-11-27 and 2026-11-28).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import pyarrow as pa
from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")


def map_tasks(spark: SparkSession, items: Sequence[T], fn: Callable[[T], R]) -> list[R]:
    """``[fn(item) for item in items]``, one Spark task per item (``fn`` and its closure
    are pickled for every task; large shared inputs belong in the items)."""
    if not items:
        return []
    sc = spark.sparkContext
    shared = sc.broadcast(list(items))

    def run(numbers):
        todo = shared.value
        return [fn(todo[i]) for i in numbers]

    try:
        # one partition per number, collected in partition order: item order
        return sc.parallelize(range(len(items)), len(items)).mapPartitions(run).collect()
    finally:
        shared.unpersist()


def typed_rows(rows: list[dict], schema: pa.Schema) -> list[dict]:
    """Result dicts as ``schema`` types them: every field present (None where missing),
    numbers as Python ints and floats, nested structs as dicts."""
    return pa.Table.from_pylist(rows, schema=schema).to_pylist()
