"""Summary tables under ``reports/<date>/<table>/``: written by Spark with their explicit
schema (one Parquet part file each, they are small), read back for earlier nights.

Writing a table replaces that table of that date only; other dates and tables stay.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ops.spark.data_layout import DataLayout
from ops.spark.file_problems import FileProblem
from ops.spark.report_schemas import conform


def write_table(df: DataFrame, reports_dir: Path, name: str, schema: T.StructType) -> Path:
    """Write ``df`` conformed to ``schema`` as ``reports_dir/name/``; return the path."""
    path = reports_dir / name
    conform(df, schema).coalesce(1).write.mode("overwrite").parquet(str(path))
    return path


def empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """A frame with ``schema`` and no rows."""
    return spark.createDataFrame([], schema)


def table_problem(path: Path, schema: T.StructType) -> str | None:
    """Why the table directory ``path`` cannot be read with ``schema``, or None if it can."""
    parts = sorted(path.glob("part-*.parquet")) if path.is_dir() else []
    if not parts:
        return "no Parquet part files"
    for part in parts:
        try:
            found = pq.read_metadata(part).schema.to_arrow_schema()
        except (OSError, pa.ArrowException) as exc:
            return f"{part.name}: unreadable Parquet: {exc}"
        missing = [f.name for f in schema.fields if found.get_field_index(f.name) < 0]
        if missing:
            return f"{part.name}: columns missing: {', '.join(missing)}"
    return None


def read_history(
    spark: SparkSession, layout: DataLayout, date: str, name: str, schema: T.StructType, nights: int
) -> tuple[DataFrame, list[FileProblem]]:
    """Table ``name`` of the report directories of the ``nights`` days before ``date`` (those
    that have it), as one frame; unreadable ones are reported and left out."""
    paths: list[str] = []
    problems: list[FileProblem] = []
    for d in layout.previous_report_dates(date, nights):
        path = layout.reports(d) / name
        if not path.exists():
            continue
        why = table_problem(path, schema)
        if why is None:
            paths.append(str(path))
        else:
            problems.append(FileProblem(str(path), "skipped", f"earlier night's table unusable: {why}"))
    if not paths:
        return empty_frame(spark, schema), problems
    return spark.read.schema(schema).parquet(*paths), problems
