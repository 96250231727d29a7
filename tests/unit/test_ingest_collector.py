"""The ingest collector: per-line counters in, periodic ingest.parquet rows out, through
the stats segment when there is one (so lines published by other processes count too)."""
from __future__ import annotations

import os
import uuid

import numpy as np
import pytest

from omdp.metrics.ingest_collector import LINE_COUNTS_DTYPE, IngestCollector
from omdp.metrics.run_files import read_run_file
from omdp.metrics.stats_segment import StatsReader, StatsWriter

NS = 1_000_000_000


def test_rows_every_interval_without_a_segment(tmp_path) -> None:
    ing = IngestCollector(interval_s=1.0)
    ing.update(2, packets_received=10, messages_received=40)
    ing.update(1, packets_received=5, messages_received=20, messages_missed=1)
    assert ing.tick(10 * NS)
    assert not ing.tick(10 * NS + 500_000_000)  # within the interval
    ing.update(1, packets_received=9, messages_received=36, messages_missed=3, packets_duplicate=9)
    assert ing.tick(11 * NS)
    rows = ing.rows()
    assert [(r["ts_ns"], r["line"], r["messages_missed"]) for r in rows] == [
        (10 * NS, 1, 1), (10 * NS, 2, 0), (11 * NS, 1, 3), (11 * NS, 2, 0)]
    assert ing.totals()["messages_received"] == 76
    assert ing.missed_ratio() == pytest.approx(3 / 79)
    path = ing.write(tmp_path)
    assert read_run_file(tmp_path, "ingest.parquet").num_rows == 4 and path.name == "ingest.parquet"


def test_bad_updates() -> None:
    ing = IngestCollector()
    with pytest.raises(KeyError):
        ing.update(1, colour=3)
    with pytest.raises(ValueError):
        ing.update(1, messages_missed=-1)
    with pytest.raises(TypeError):
        ing.update_many(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError):
        IngestCollector(interval_s=0)
    assert IngestCollector().missed_ratio() is None


def test_through_the_segment_with_a_partition_publishing_directly() -> None:
    run_id = f"ing-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        ing = IngestCollector(stats=w)
        polled = np.zeros(2, dtype=LINE_COUNTS_DTYPE)
        polled["line"] = [0, 1]
        polled["messages_received"] = [100, 200]
        ing.update_many(polled)
        fh = StatsWriter.attach(run_id)  # a feed handler partition publishing its own line
        fh.publish_line(5, packets_received=3, messages_received=12, decode_errors=1)
        fh.close()
        ing.snapshot(7 * NS)
        assert sorted(row["line"] for row in ing.rows()) == [0, 1, 5]
        assert ing.totals()["decode_errors"] == 1
        assert [row["messages_received"] for row in r.ingest()] == [100, 200, 12]


def test_rows_past_a_chunk_are_written_as_the_run_goes_and_the_file_holds_them_all(tmp_path) -> None:
    """With spill_dir the collector holds at most chunk_rows rows (a soak's memory stays put);
    ingest.parquet still has every row, in order, and reads back with its schema."""
    ing = IngestCollector(interval_s=1.0, spill_dir=tmp_path, chunk_rows=10)
    most = 0
    for t in range(25):
        for line in (1, 2, 3):
            ing.update(line, messages_received=100 * t + line)
        assert ing.tick((t + 1) * NS)
        most = max(most, ing.held_rows)
    assert most < 10 + 3 and ing.spilled_rows == 72 and ing.held_rows == 3
    assert not (tmp_path / "ingest.parquet").exists()              # only the temporary file so far
    ing.write(tmp_path)
    table = read_run_file(tmp_path, "ingest.parquet")
    assert table.num_rows == 75 and [p.name for p in tmp_path.iterdir()] == ["ingest.parquet"]
    got = table.to_pydict()
    assert got["ts_ns"] == [(t + 1) * NS for t in range(25) for _ in (1, 2, 3)]
    assert got["messages_received"] == [100 * t + line for t in range(25) for line in (1, 2, 3)]
