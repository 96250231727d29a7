"""The checked run record files of a day: Spark DataFrames over the big ones (samples,
packets planned, ingest, signals), read with explicit schemas derived from the Arrow contract
(``omdp.metrics.run_records``), and the one-row meta files read on the driver.

Spark has no unsigned integers: its Parquet reader widens uint8 -> short, uint16 -> int,
uint32 -> long and uint64 -> decimal(20, 0); the read schema says the same. Every frame gets
``run_dir`` (the run's directory name), the key that joins a run's files.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from omdp.metrics.run_records import RUN_FILES
from ops.spark.file_problems import FileProblem
from ops.spark.run_records_scan import RunDirectory

_SPARK_TYPE_OF = {
    pa.int64(): T.LongType(),
    pa.uint8(): T.ShortType(),
    pa.uint16(): T.IntegerType(),
    pa.uint32(): T.LongType(),
    pa.uint64(): T.DecimalType(20, 0),
    pa.float64(): T.DoubleType(),
    pa.string(): T.StringType(),
}


def spark_schema(arrow_schema: pa.Schema, columns: list[str] | None = None) -> T.StructType:
    """The Spark read schema of (some ``columns`` of) a run record contract schema."""
    names = columns if columns is not None else arrow_schema.names
    return T.StructType([T.StructField(n, _SPARK_TYPE_OF[arrow_schema.field(n).type], True) for n in names])


def read_record_file(
    spark: SparkSession, runs: list[RunDirectory], name: str, columns: list[str] | None = None
) -> DataFrame:
    """The ``name`` files (e.g. "samples.parquet") of ``runs`` that passed the check, as one
    DataFrame of ``run_dir`` + ``columns`` (all contract columns if None).

    Files are read with ``ignoreCorruptFiles``: a file whose footer was sound but whose pages
    are not gives fewer rows than its footer states, which the latency job reconciles and
    reports, instead of failing the night.
    """
    schema = spark_schema(RUN_FILES[name], columns)
    paths = [str(r.files[name]) for r in runs if name in r.files]
    if not paths:
        return spark.createDataFrame([], T.StructType([T.StructField("run_dir", T.StringType())] + schema.fields))
    df = spark.read.schema(schema).option("ignoreCorruptFiles", "true").parquet(*paths)
    run_dir = F.regexp_extract(F.col("_metadata.file_path"), r"([^/]+)/[^/]+$", 1)
    return df.select(run_dir.alias("run_dir"), *schema.fieldNames())


def read_meta(runs: list[RunDirectory], date: str) -> tuple[dict[str, dict], list[FileProblem]]:
    """``{run_dir: meta row}`` (``date`` set to the night) and the problems. Read on the
    driver: a meta file is one row, and reading it there costs no Spark job. A meta file
    whose footer was sound but whose row is not is reported and its run left out."""
    rows: dict[str, dict] = {}
    problems: list[FileProblem] = []
    for run in runs:
        path = run.files["meta.parquet"]
        try:
            (row,) = pq.read_table(path, schema=RUN_FILES["meta.parquet"]).to_pylist()
        except (OSError, ValueError, pa.ArrowException) as exc:
            problems.append(FileProblem(str(path), "skipped", f"meta row unreadable: {exc}; run skipped"))
            continue
        rows[run.name] = {**row, "date": date}
    return rows, problems
