"""Every artifact is written atomically (omdp.atomic_files): on a full disk the write fails
with the file's name and the reason, the file it would replace is intact, and no temporary
or empty file is left - run.json, status.json and Parquet records alike."""
from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from full_disk_support import full_disk, leftovers, small_disk  # noqa: F401  (fixtures)

from omdp.atomic_files import ArtifactWriteError, atomic_path, write_parquet_atomic, write_text_atomic
from omdp.metrics.run_files import write_ingest
from ops.replay.intended_parquet import IntendedParquetWriter
from ops.replay.native_layout import SENT_DTYPE


def test_a_failing_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text('{"old": true}')
    with pytest.raises(ArtifactWriteError) as caught, atomic_path(path) as tmp:
        tmp.write_text('{"new": ')
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    assert caught.value.errno == errno.ENOSPC
    assert path.read_text() == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def test_json_on_a_full_disk(full_disk: Path) -> None:  # noqa: F811
    with pytest.raises(ArtifactWriteError, match=r"cannot write .*status\.json: No space left on device"):
        write_text_atomic(full_disk / "data" / "status.json", "x" * 10_000)
    assert not (full_disk / "data" / "status.json").exists()
    assert leftovers(full_disk) == []


def test_parquet_on_a_full_disk(full_disk: Path) -> None:  # noqa: F811
    table = pa.table({"a": np.arange(200_000, dtype=np.int64) * 7919})
    with pytest.raises(ArtifactWriteError, match="No space left on device"):
        write_parquet_atomic(table, full_disk / "data" / "t.parquet")
    n = 100_000
    rows = {"ts_ns": np.arange(n) * 7919, "line": np.ones(n, dtype=np.uint16), "packets_received": np.arange(n) * 3,
            "messages_received": np.arange(n) * 31, "messages_missed": np.zeros(n, dtype=np.int64),
            "packets_duplicate": np.arange(n) * 2, "decode_errors": np.zeros(n, dtype=np.int64)}
    with pytest.raises(ArtifactWriteError, match=r"ingest\.parquet"):
        write_ingest(full_disk / "data", rows)
    assert leftovers(full_disk) == [] and not list((full_disk / "data").iterdir())


def test_the_replays_intended_parquet_on_a_full_disk(full_disk: Path) -> None:  # noqa: F811
    w = IntendedParquetWriter(full_disk / "data" / "intended.parquet")
    sent = np.zeros(50_000, dtype=SENT_DTYPE)
    sent["line"] = 1
    sent["block_seq"] = np.arange(50_000)
    sent["intended_ns"] = np.arange(50_000) * 1000
    sent["sent_ns"][:, 0] = sent["intended_ns"] + 5
    sent["messages"] = 3
    with pytest.raises(ArtifactWriteError, match=r"intended\.parquet: No space left on device"):
        for _ in range(40):
            w.add(sent)
        w.close()
    assert leftovers(full_disk) == [] and not list((full_disk / "data").iterdir())

