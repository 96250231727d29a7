"""Run record files: every writer round-trips its schema, and wrong columns, types or
overflowing values are refused with the file and column named."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from omdp.metrics.run_files import (
    RunRecordError,
    read_meta,
    read_run_file,
    to_table,
    write_ingest,
    write_intended,
    write_meta,
    write_samples,
    write_signals,
)
from omdp.metrics.run_records import RUN_FILES, RUN_META_SCHEMA

META = {
    "run_id": "r1", "sweep_id": "", "date": "2026-01-02", "capture_date": "2008-02-01", "topology": "fused-2core",
    "config": "fused", "knobs_json": "{}", "target_pps": 240_000.0, "achieved_pps": 239_999.0, "rate_x": 10.0,
    "messages_per_packet": 5.2, "packets_sent": 7_200_000, "messages_sent": 37_440_000,
    "messages_processed": 37_440_000, "messages_missed": 0, "sample_every": 1600, "started_ns": 1, "ended_ns": 2,
    "host": "h", "cpu_model": "c", "clock_offset_error_ns": 0,
}


def example(file: str, n: int = 3) -> dict:
    """n rows of plausible values for every column of a run file."""
    cols = {}
    for f in RUN_FILES[file]:
        if pa.types.is_string(f.type):
            cols[f.name] = ["A"] * n
        elif pa.types.is_floating(f.type):
            cols[f.name] = np.linspace(0, 1, n)
        else:
            cols[f.name] = np.arange(n) + 1
    return cols


@pytest.mark.parametrize("writer,file", [
    (write_samples, "samples.parquet"), (write_ingest, "ingest.parquet"),
    (write_intended, "intended.parquet"), (write_signals, "signals.parquet"),
])
def test_every_file_round_trips(tmp_path, writer, file: str) -> None:
    data = example(file)
    path = writer(tmp_path, data)
    assert path == tmp_path / file
    table = read_run_file(tmp_path, file)
    assert table.schema.equals(RUN_FILES[file])
    assert table.num_rows == 3
    assert not list(tmp_path.glob(".*.tmp"))


def test_meta_round_trip(tmp_path) -> None:
    write_meta(tmp_path, META)
    assert read_meta(tmp_path) == META


def test_metadata_is_kept_and_ignored_by_the_check(tmp_path) -> None:
    write_samples(tmp_path, example("samples.parquet"), {"omdp.report_rows": "0:3"})
    assert read_run_file(tmp_path, "samples.parquet").schema.metadata[b"omdp.report_rows"] == b"0:3"


def test_input_shapes() -> None:
    rows = [{f.name: 1 for f in RUN_FILES["ingest.parquet"]}]
    assert to_table("ingest.parquet", rows).num_rows == 1
    arr = np.zeros(2, dtype=[(f.name, "<i8") for f in RUN_FILES["ingest.parquet"]])
    assert to_table("ingest.parquet", arr).num_rows == 2
    assert to_table("ingest.parquet", to_table("ingest.parquet", arr)).num_rows == 2


def test_wrong_columns_types_and_values_are_refused(tmp_path) -> None:
    data = example("samples.parquet")
    with pytest.raises(RunRecordError, match=r"samples.parquet: columns missing \['mc_in'\]"):
        write_samples(tmp_path, {k: v for k, v in data.items() if k != "mc_in"})
    with pytest.raises(RunRecordError, match="unexpected"):
        write_samples(tmp_path, {**data, "colour": [1, 2, 3]})
    with pytest.raises(RunRecordError, match="'line'"):
        write_samples(tmp_path, {**data, "line": [70_000, 1, 2]})  # uint16 overflow
    with pytest.raises(RunRecordError, match="'intended'"):
        write_samples(tmp_path, {**data, "intended": ["a", "b", "c"]})
    with pytest.raises(RunRecordError, match="different lengths"):
        write_samples(tmp_path, {**data, "intended": [1, 2]})
    with pytest.raises(RunRecordError, match="not a run record"):
        to_table("other.parquet", data)
    with pytest.raises(RunRecordError, match="missing"):
        write_meta(tmp_path, {k: v for k, v in META.items() if k != "host"})


def test_reader_refuses_a_file_with_another_schema(tmp_path) -> None:
    pq.write_table(pa.table({"run_id": ["x"]}), tmp_path / "meta.parquet")
    with pytest.raises(RunRecordError, match="schema differs"):
        read_meta(tmp_path)
    with pytest.raises(RunRecordError, match="no such file"):
        read_run_file(tmp_path, "signals.parquet")
    pq.write_table(pa.Table.from_pylist([META, META], schema=RUN_META_SCHEMA), tmp_path / "meta.parquet")
    with pytest.raises(RunRecordError, match="one row"):
        read_meta(tmp_path)
