"""Summary tables in ``reports/<date>/<table>.parquet``: computed by Spark, small, so
collected as Arrow and written by the driver as one Parquet file each with the table's
explicit schema (a temporary file renamed into place, so a reader never sees half a table).

Writing a table replaces that table of that date only; other dates and tables stay.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from omdp.atomic_files import write_parquet_atomic
from ops.spark.common.data_layout import DataLayout
from ops.spark.common.file_problems import FileProblem
from ops.spark.common.report_schemas import conform

_ARROW_TYPE_OF = {
    T.StringType(): pa.string(),
    T.LongType(): pa.int64(),
    T.IntegerType(): pa.int32(),
    T.DoubleType(): pa.float64(),
    T.BooleanType(): pa.bool_(),
}


def arrow_schema(schema: T.StructType) -> pa.Schema:
    """The Arrow twin of a report table's Spark schema."""
    return pa.schema([(f.name, _ARROW_TYPE_OF[f.dataType]) for f in schema.fields])


def table_path(reports_dir: Path, name: str) -> Path:
    """Where table ``name`` of a night lives."""
    return reports_dir / f"{name}.parquet"


def write_arrow(table: pa.Table, reports_dir: Path, name: str) -> Path:
    """Write ``table`` as table ``name`` (under a temporary name, then renamed: a reader never
    sees half a file); return the path."""
    return write_parquet_atomic(table, table_path(reports_dir, name))


def write_table(df: DataFrame, reports_dir: Path, name: str, schema: T.StructType) -> Path:
    """Collect ``df`` conformed to ``schema`` and write it as table ``name``; return the path."""
    table = conform(df, schema).toArrow()
    return write_arrow(table.cast(arrow_schema(schema)), reports_dir, name)


def write_rows(rows: list[dict], reports_dir: Path, name: str, schema: T.StructType) -> Path:
    """Write rows computed on the driver as table ``name``; return the path."""
    return write_arrow(pa.Table.from_pylist(rows, schema=arrow_schema(schema)), reports_dir, name)


def read_rows(reports_dir: Path, name: str) -> list[dict]:
    """Rows of table ``name`` in ``reports_dir`` (empty if the table was not written)."""
    path = table_path(reports_dir, name)
    return pq.read_table(path).to_pylist() if path.is_file() else []


def table_problem(path: Path, schema: T.StructType) -> str | None:
    """Why the table file ``path`` cannot be read with ``schema``, or None if it can."""
    try:
        found = pq.read_metadata(path).schema.to_arrow_schema()
    except (OSError, pa.ArrowException) as exc:
        return f"unreadable Parquet: {exc}"
    missing = [f.name for f in schema.fields if found.get_field_index(f.name) < 0]
    return f"columns missing: {', '.join(missing)}" if missing else None


def read_history_rows(
    layout: DataLayout, date: str, name: str, schema: T.StructType, nights: int
) -> tuple[list[dict], list[FileProblem]]:
    """Rows of table ``name`` from the report directories of the ``nights`` days before
    ``date`` (those that have it); unreadable ones are reported and left out."""
    rows: list[dict] = []
    problems: list[FileProblem] = []
    for d in layout.previous_report_dates(date, nights):
        path = table_path(layout.reports(d), name)
        if not path.exists():
            continue
        why = table_problem(path, schema)
        if why is None:
            rows += pq.read_table(path, columns=schema.fieldNames()).to_pylist()
        else:
            problems.append(FileProblem(str(path), "skipped", f"earlier night's table unusable: {why}"))
    return rows, problems
