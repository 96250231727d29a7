"""Writing and reading the Parquet files of a run directory, checked against their schemas.

Every writer takes columns in any usual shape (a pyarrow Table, a dict of arrays, a numpy
structured array, a list of row dicts), insists on exactly the columns of the schema in
``run_records`` (an error names what is missing or extra), casts safely (an overflow or a
wrong type is an error naming the column), and writes atomically (``omdp.atomic_files``:
temporary file, then rename), so a Spark job never reads half a file. Readers refuse a file whose columns differ
from the schema. Schema-level metadata (key/value pairs) is kept and ignored by the check.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.atomic_files import write_parquet_atomic
from omdp.errors import InputError
from omdp.metrics.run_records import RUN_FILES

ColumnData = pa.Table | pa.RecordBatch | Mapping[str, Any] | np.ndarray | Sequence[Mapping[str, Any]]


class RunRecordError(InputError):
    """A run record does not match its schema: which file and what is wrong."""

    def __init__(self, file: str, problem: str) -> None:
        super().__init__(f"{file}: {problem}")
        self.file = file
        self.problem = problem


def _columns(data: ColumnData) -> dict[str, Any]:
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return {n: data.column(n) for n in data.schema.names}
    if isinstance(data, np.ndarray):
        if data.dtype.names is None:
            raise TypeError("a numpy array of records needs a structured dtype")
        return {n: np.ascontiguousarray(data[n]) for n in data.dtype.names}
    if isinstance(data, Mapping):
        return dict(data)
    rows = list(data)
    names = list(rows[0]) if rows else []
    return {n: [r[n] for r in rows] for n in names}


def to_table(file: str, data: ColumnData, metadata: Mapping[str, str] | None = None) -> pa.Table:
    """``data`` as a table with exactly the schema of run file ``file`` (e.g. "meta.parquet")."""
    if file not in RUN_FILES:
        raise RunRecordError(file, f"not a run record file; known: {sorted(RUN_FILES)}")
    schema = RUN_FILES[file]
    cols = _columns(data)
    missing = [n for n in schema.names if n not in cols]
    extra = [n for n in cols if n not in schema.names]
    if missing or extra:
        raise RunRecordError(file, f"columns missing {missing}, unexpected {extra}")
    arrays = []
    for field in schema:
        try:
            arr = pa.array(cols[field.name], type=field.type) if not isinstance(
                cols[field.name], (pa.Array, pa.ChunkedArray)) else cols[field.name].cast(field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as e:
            raise RunRecordError(file, f"column {field.name!r} does not fit {field.type}: {e}") from e
        arrays.append(arr)
    lengths = {len(a) for a in arrays}
    if len(lengths) > 1:
        raise RunRecordError(file, f"columns have different lengths {sorted(lengths)}")
    table = pa.Table.from_arrays(arrays, schema=schema)
    if metadata:
        table = table.replace_schema_metadata({str(k): str(v) for k, v in metadata.items()})
    return table


def write_run_file(run_dir: str | Path, file: str, data: ColumnData, metadata: Mapping[str, str] | None = None) -> Path:
    """Check ``data`` against the schema of ``file`` and write ``run_dir/file`` atomically."""
    table = to_table(file, data, metadata)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    return write_parquet_atomic(table, run_dir / file)


def write_meta(run_dir: str | Path, meta: Mapping[str, Any]) -> Path:
    """meta.parquet: one row, every field of ``RUN_META_SCHEMA``."""
    return write_run_file(run_dir, "meta.parquet", {k: [v] for k, v in meta.items()})


def write_samples(run_dir: str | Path, data: ColumnData, metadata: Mapping[str, str] | None = None) -> Path:
    """samples.parquet: one row per latency sample (identity + six stamps)."""
    return write_run_file(run_dir, "samples.parquet", data, metadata)


def write_ingest(run_dir: str | Path, data: ColumnData) -> Path:
    """ingest.parquet: periodic per-line cumulative counters."""
    return write_run_file(run_dir, "ingest.parquet", data)


def write_intended(run_dir: str | Path, data: ColumnData) -> Path:
    """intended.parquet: per packet copy, planned and actual send times (the replayer's)."""
    return write_run_file(run_dir, "intended.parquet", data)


def write_signals(run_dir: str | Path, data: ColumnData) -> Path:
    """signals.parquet: every signal the engines raised."""
    return write_run_file(run_dir, "signals.parquet", data)


def read_run_file(run_dir: str | Path, file: str) -> pa.Table:
    """Read ``run_dir/file`` and check its columns against the schema (metadata is kept)."""
    if file not in RUN_FILES:
        raise RunRecordError(file, f"not a run record file; known: {sorted(RUN_FILES)}")
    path = Path(run_dir) / file
    if not path.is_file():
        raise RunRecordError(file, f"no such file in {run_dir}")
    try:
        table = pq.read_table(path)
    except pa.ArrowException as e:
        detail = str(e).splitlines()[0].split("': ", 1)[-1]  # pyarrow repeats the path first
        raise RunRecordError(str(path), f"not a readable Parquet file (corrupt or cut short): {detail}") from None
    expected = RUN_FILES[file]
    if not table.schema.equals(expected, check_metadata=False):
        got = {f.name: str(f.type) for f in table.schema}
        want = {f.name: str(f.type) for f in expected}
        diff = {k: (got.get(k), want.get(k)) for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)}
        raise RunRecordError(file, f"schema differs from the run record contract (column: found, expected): {diff}")
    return table


def read_meta(run_dir: str | Path) -> dict[str, Any]:
    """meta.parquet's single row as a dict."""
    table = read_run_file(run_dir, "meta.parquet")
    if table.num_rows != 1:
        raise RunRecordError("meta.parquet", f"expected one row, found {table.num_rows}")
    return {k: v[0] for k, v in table.to_pydict().items()}

