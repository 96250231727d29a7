"""``intended.parquet``: every copy that was sent becomes one row with its times, whatever
the row groups; the times are delta-encoded (the file is written on the replayer's CPU
while the run goes, so its encoding is chosen for the writer's CPU)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from omdp.metrics.run_records import RUN_INTENDED_SCHEMA
from ops.replay import intended_parquet as ip
from ops.replay.native_layout import SENT_DTYPE


def _sent(n: int, start: int, rng: np.random.Generator) -> np.ndarray:
    s = np.zeros(n, dtype=SENT_DTYPE)
    s["intended_ns"] = 1_202_130_000_000_000_000 + start * 1_000 + np.cumsum(rng.integers(0, 3_000, n))
    s["sent_ns"][:, 0] = s["intended_ns"] + rng.integers(50, 5_000, n)
    b = rng.random(n) < 0.5  # half the packets also sent as copy B
    s["sent_ns"][b, 1] = s["intended_ns"][b] + 7
    s["block_seq"] = start + np.arange(n)
    s["line"] = rng.integers(1, 25, n)
    s["messages"] = rng.integers(1, 40, n)
    return s


def test_rows_per_copy_round_trip_across_row_groups(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ip, "ROW_GROUP_ROWS", 1_000)
    rng = np.random.default_rng(5)
    drains = [_sent(700, k * 700, rng) for k in range(5)]
    w = ip.IntendedParquetWriter(tmp_path / "intended.parquet")
    for d in drains:
        w.add(d)
    w.close()
    f = pq.ParquetFile(tmp_path / "intended.parquet")
    assert f.metadata.num_row_groups > 1
    t = f.read()
    assert t.schema.equals(RUN_INTENDED_SCHEMA)
    sent = np.concatenate(drains)
    b = sent["sent_ns"][:, 1] != 0
    assert t.num_rows == w.rows_written == len(sent) + int(b.sum())
    got = {(c, int(q), int(i), int(s)) for c, q, i, s in zip(t["copy"].to_pylist(), t["block_seq"].to_numpy(),
                                                            t["intended_ns"].to_numpy(), t["sent_ns"].to_numpy())}
    want = {("A", int(q), int(i), int(s)) for q, i, s in zip(sent["block_seq"], sent["intended_ns"], sent["sent_ns"][:, 0])}
    want |= {("B", int(q), int(i), int(s)) for q, i, s in zip(sent["block_seq"][b], sent["intended_ns"][b],
                                                              sent["sent_ns"][b, 1])}
    assert got == want
    rg = f.metadata.row_group(0)
    enc = {rg.column(k).path_in_schema: rg.column(k).encodings for k in range(rg.num_columns)}
    for name in ("intended_ns", "sent_ns", "block_seq"):
        assert "DELTA_BINARY_PACKED" in enc[name], (name, enc[name])
        assert rg.column(RUN_INTENDED_SCHEMA.names.index(name)).compression == "UNCOMPRESSED"


def test_unsent_entries_and_empty_run(tmp_path: Path) -> None:
    w = ip.IntendedParquetWriter(tmp_path / "intended.parquet")
    w.add(np.zeros(3, dtype=SENT_DTYPE))  # sent_ns 0: dropped before sending, no row
    w.close()
    t = pq.read_table(tmp_path / "intended.parquet")
    assert t.num_rows == 0 and t.schema.equals(RUN_INTENDED_SCHEMA)
