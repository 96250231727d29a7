"""The collector's chunk hand-off: a C loop (here a feeding thread calling the C function with
the GIL released) keeps collecting while another thread writes the handed-over chunks to
samples.parquet; every row arrives once, in order, and the rows held stay bounded. Runs
under ASan/UBSan in CI (two threads on the collector's memory)."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.sample_identity import SAMPLE_ID_DTYPE
from omdp.native import ffi, lib
from omdp.record import STAMPS_DTYPE

T0 = 1_700_000_000_000_000_000


def _rows(start: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    stamps = np.zeros(n, dtype=STAMPS_DTYPE)
    for i, hop in enumerate(("intended", "fh_in", "fh_out", "de_in", "de_out", "mc_in")):
        stamps[hop] = T0 + np.arange(start, start + n) * 1_000 + i * 100
    ids = np.zeros(n, dtype=SAMPLE_ID_DTYPE)
    ids["msg_seq"] = np.arange(start, start + n)
    ids["line"] = 1
    return stamps, ids


def test_chunks_handed_over_while_collecting_arrive_once_in_order(tmp_path: Path) -> None:
    total, per_call, chunk = 200_000, 500, 4_096
    # max_rows = total: this feeder (no engine, no market pacing) outruns any writer, and
    # the point here is exactly-once and order across the threads, not the cap (below).
    c = LatencyCollector(spill_dir=tmp_path, chunk_rows=chunk, max_rows=total)
    c.hand_off_chunks()
    held = []

    def feed() -> None:  # the C loop's side: straight into C, as the partition loop does
        for start in range(0, total, per_call):
            stamps, ids = _rows(start, per_call)
            lib.omdp_latency_collect_rows(c.c_pointer, ffi.from_buffer("omdp_stamps_t[]", stamps),
                                          ffi.from_buffer("omdp_sample_id_t[]", ids), per_call)
            held.append(c.held_rows)

    feeder = threading.Thread(target=feed)
    feeder.start()
    while feeder.is_alive():
        c.drain_chunks()
    feeder.join()
    c.drain_chunks()
    path = c.write_samples(tmp_path)
    seq = pq.read_table(path, columns=["msg_seq"])["msg_seq"].to_numpy()
    assert len(seq) == total and (seq == np.arange(total)).all()
    assert c.counters()["rows_dropped"] == 0 and c.counters()["samples"] == total
    assert c.spilled_rows == total and min(held) < chunk  # chunks did leave while it ran


def test_without_hand_off_every_row_stays_held(tmp_path: Path) -> None:
    c = LatencyCollector(spill_dir=tmp_path, chunk_rows=1_000)
    stamps, ids = _rows(0, 5_000)
    lib.omdp_latency_collect_rows(c.c_pointer, ffi.from_buffer("omdp_stamps_t[]", stamps),
                                  ffi.from_buffer("omdp_sample_id_t[]", ids), 5_000)
    assert c.drain_chunks() == 0 and c.held_rows == 5_000


def test_a_slow_reader_leaves_rows_held_up_to_the_cap_then_counts_drops(tmp_path: Path) -> None:
    c = LatencyCollector(spill_dir=tmp_path, chunk_rows=1_000, max_rows=3_000)
    c.hand_off_chunks()
    stamps, ids = _rows(0, 10_000)
    lib.omdp_latency_collect_rows(c.c_pointer, ffi.from_buffer("omdp_stamps_t[]", stamps),
                                  ffi.from_buffer("omdp_sample_id_t[]", ids), 10_000)
    # One chunk waits (1,000 rows); the next rows grow to max_rows, the rest are dropped.
    assert c.held_rows == 3_000 and c.counters()["rows_dropped"] == 6_000
    assert c.drain_chunks() == 1_000
    path = c.write_samples(tmp_path)
    seq = pq.read_table(path, columns=["msg_seq"])["msg_seq"].to_numpy()
    assert (seq == np.arange(4_000)).all()
