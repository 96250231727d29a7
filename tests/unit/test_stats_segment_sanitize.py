"""The stats segment in one process: naming and lifecycle, window queries over the
per-second ring, the collector publishing into it, the tables, signals and run info, and
refused input. Runs under ASan/UBSan in CI. (Cross-process reads: tests/integration.)"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.stats_segment import (
    RING_SECONDS,
    SIGNALS,
    StatsReader,
    StatsSegmentError,
    StatsWriter,
    stats_segment_name,
)
from omdp.native import ffi, lib
from omdp.record import STAMPS_DTYPE

NS = 1_000_000_000
S0 = 1_800_000_000  # an epoch second for hand-built histories


@pytest.fixture
def run_id() -> Iterator[str]:
    rid = f"test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield rid
    lib.omdp_stats_unlink(rid.encode())
    assert not Path("/dev/shm", stats_segment_name(rid)).exists()


def hops_of(values: list[int]) -> dict[str, LatencyHistogram]:
    return {k: LatencyHistogram.of(values) for k in HOP_KEYS}


def test_name_mode_and_unlink_on_close(run_id: str) -> None:
    w = StatsWriter.create(run_id)
    path = Path("/dev/shm", f"omdp-{run_id}-stats")
    assert w.name == path.name and path.exists()
    assert path.stat().st_mode & 0o777 == 0o600
    r = StatsReader(run_id)
    info = r.info()
    assert info["run_id"] == run_id and info["pid"] == os.getpid() and info["closed_ns"] == 0
    assert info["heartbeat_ns"] >= info["start_ns"] > 0
    w.heartbeat(info["start_ns"] + 5)
    assert r.info()["heartbeat_ns"] == info["start_ns"] + 5
    w.close()
    assert not path.exists()
    assert r.info()["closed_ns"] > 0  # a reader still mapped sees the run closed
    r.close()
    w.close()  # closing twice is harmless


def test_create_open_errors(run_id: str) -> None:
    with pytest.raises(StatsSegmentError) as e:
        StatsReader(run_id)
    assert e.value.code == lib.OMDP_STATS_ENOENT and run_id in str(e.value)
    with StatsWriter.create(run_id):
        with pytest.raises(StatsSegmentError) as e:
            StatsWriter.create(run_id)
        assert e.value.code == lib.OMDP_STATS_EEXIST
    for bad in ("", ".hidden", "a/b", "x" * 64, "sp ace"):
        with pytest.raises(ValueError, match="invalid run id"):
            StatsWriter.create(bad)


def test_a_foreign_file_is_not_a_segment(run_id: str) -> None:
    path = Path("/dev/shm", stats_segment_name(run_id))
    path.write_bytes(b"\0" * lib.omdp_stats_layout_size())
    with pytest.raises(StatsSegmentError) as e:
        StatsReader(run_id)
    assert e.value.code == lib.OMDP_STATS_ELAYOUT
    path.write_bytes(b"short")
    with pytest.raises(StatsSegmentError):
        StatsReader(run_id)


def test_read_only_attachment_cannot_write(run_id: str) -> None:
    with StatsWriter.create(run_id), StatsReader(run_id) as r:
        ptr = r._handle.ptr
        assert lib.omdp_stats_heartbeat(ptr, 1) == lib.OMDP_STATS_EROFS
        assert lib.omdp_stats_line_register(ptr, 1) == lib.OMDP_STATS_EROFS
        assert lib.omdp_stats_op_register(ptr, b"x", b"op", 0, b"a") == lib.OMDP_STATS_EROFS


def test_window_queries_merge_the_seconds_of_the_ring(run_id: str) -> None:
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        # Second S0 + i holds i + 1 samples of (i + 1) us each, for i = 0..29.
        for i in range(30):
            w.publish_latency_second(S0 + i, hops_of([(i + 1) * 1000] * (i + 1)))
        now = (S0 + 29) * NS + 500_000_000
        lat = r.latency(10, now)
        counts = [i + 1 for i in range(20, 30)]
        assert lat["de"]["count"] == sum(counts)
        assert lat["de"]["mean_us"] == pytest.approx(sum(c * c for c in counts) / sum(counts))
        assert lat["de"]["max_us"] == 30.0
        assert r.latency(1, now)["fh"]["count"] == 30
        assert r.latency(30, now)["fh"]["count"] == sum(range(1, 31))
        # Five seconds later with nothing new: the window holds only what is still inside it.
        assert r.latency(10, now + 5 * NS)["fh"]["count"] == sum(i + 1 for i in range(25, 30))
        assert r.latency(10, now + 60 * NS)["fh"]["count"] == 0
        with pytest.raises(ValueError):
            r.latency(RING_SECONDS + 1, now)
        with pytest.raises(ValueError):
            r.latency(0, now)


def test_old_seconds_overwritten_by_the_ring_are_not_reported(run_id: str) -> None:
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        w.publish_latency_second(S0, hops_of([1000]))
        w.publish_latency_second(S0 + RING_SECONDS, hops_of([2000, 2000]))  # same slot
        arr = ffi.new("omdp_hist_t[]", len(HOP_KEYS))
        assert lib.omdp_stats_latency_read_second(r._handle.ptr, S0, arr) == 0
        assert lib.omdp_stats_latency_read_second(r._handle.ptr, S0 + RING_SECONDS, arr) == 1
        assert arr[0].count == 2
        assert r.latency(RING_SECONDS, (S0 + RING_SECONDS) * NS)["fh"]["count"] == 2


def test_history_is_per_second_oldest_first(run_id: str) -> None:
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        for i in (0, 2):
            w.publish_latency_second(S0 + i, hops_of(list(range(1000, 1000 + 50 * (i + 1)))))
        hist = r.latency_history(3, (S0 + 2) * NS)
        assert [h["second"] for h in hist] == [S0, S0 + 1, S0 + 2]
        assert [h["hops"]["fh"]["count"] for h in hist] == [50, 0, 150]
        assert hist[1]["hops"]["fh"]["mean_us"] is None
        assert hist[2]["hops"]["fh"]["p90_us"] is not None and hist[0]["hops"]["fh"]["p90_us"] is None
        assert hist[2]["hops"]["e2e"]["max_us"] == pytest.approx(1.149)


def test_collector_publishes_cumulative_and_per_second(run_id: str) -> None:
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        c = LatencyCollector(stats=w, publish_interval_ms=0)
        for sec, n in ((S0, 3), (S0 + 1, 5), (S0 + 2, 7)):
            stamps = np.zeros(n, dtype=STAMPS_DTYPE)
            stamps["fh_in"] = sec * NS
            stamps["fh_out"] = sec * NS + 100
            stamps["mc_in"] = sec * NS + 2_000
            c.collect_rows(stamps)
        c.publish(ts_ns=(S0 + 2) * NS + 1)
        assert r.latency(None)["e2e"]["count"] == 15
        assert r.latency(1, (S0 + 1) * NS)["e2e"]["count"] == 5  # published at rollover
        assert r.latency(3, (S0 + 2) * NS)["fh"]["count"] == 15
        assert r.missing_stamps()["to_de"] == 15
        ops = {o["name"]: o for o in r.operators()}
        assert ops["latency-collector"]["kind"] == "collector"
        assert ops["latency-collector"]["counters"]["samples"] == 15
        c.close()
        assert {o["name"]: o for o in r.operators()}["latency-collector"]["state"] == "closed"


def test_operator_table(run_id: str) -> None:
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        op = w.register_operator("vega fh0->de1", "channel", ["messages", "bytes", "full_ring", "spins"], cpu=1)
        op.publish([10, 2560, 1, 99])
        op.publish({"spins": 100})
        (row,) = r.operators()
        assert row["name"] == "vega fh0->de1" and row["kind"] == "channel" and row["cpu"] == 1
        assert row["counters"] == {"messages": 10, "bytes": 2560, "full_ring": 1, "spins": 100}
        with pytest.raises(StatsSegmentError) as e:
            w.register_operator("vega fh0->de1", "channel", ["messages"])
        assert e.value.code == lib.OMDP_STATS_EEXIST
        with pytest.raises(ValueError):
            w.register_operator("too many", "op", [f"c{i}" for i in range(9)])
        with pytest.raises(ValueError):
            op.publish([1, 2])
        with pytest.raises(KeyError):
            op.publish({"colour": 1})
        assert lib.omdp_stats_op_register(w.c_handle, b"n" * 48, b"op", 0, b"a") == lib.OMDP_STATS_EINVAL
        assert lib.omdp_stats_op_register(w.c_handle, b"n", b"op", 0, b"a,,b") == lib.OMDP_STATS_EINVAL
        assert lib.omdp_stats_op_register(w.c_handle, b"n", b"op", 0, b"c" * 24) == lib.OMDP_STATS_EINVAL
        op.close()
        again = w.register_operator("vega fh0->de1", "channel", ["messages"])
        assert again.index == op.index  # a closed entry is reused for its own name
        for i in range(lib.OMDP_STATS_MAX_OPERATORS - 1):
            w.register_operator(f"op{i}", "operator", ["m"])
        with pytest.raises(StatsSegmentError) as e:
            w.register_operator("one more", "operator", ["m"])
        assert e.value.code == lib.OMDP_STATS_EFULL


def test_lines_signals_and_run_info(run_id: str) -> None:
    with StatsWriter.create(run_id) as w, StatsReader(run_id) as r:
        w.publish_line(5, packets_received=10, messages_received=50, messages_missed=2)
        w.publish_line(1, packets_received=3, packets_duplicate=3, decode_errors=1)
        w.publish_line(5, packets_received=11, messages_received=55, messages_missed=2)
        assert [(l["line"], l["packets_received"], l["messages_missed"]) for l in r.ingest()] == [(1, 3, 0), (5, 11, 2)]
        with pytest.raises(KeyError):
            w.publish_line(1, colour=2)
        for i in range(SIGNALS + 44):
            w.push_signal("crossed" if i % 2 else "parity", f"SERIES-{i}", float(i), engine=i % 8)
        sig = r.signals(SIGNALS)
        assert len(sig) == SIGNALS and r.signals_total() == SIGNALS + 44
        assert sig[0]["series"] == f"SERIES-{SIGNALS + 43}" and sig[0]["value"] == SIGNALS + 43
        assert [s["value"] for s in sig] == sorted((s["value"] for s in sig), reverse=True)
        assert len(r.signals(5)) == 5
        w.push_signal("x" * 40, "y" * 100, 1.0)  # text is cut to fit, never overflows
        assert r.signals(1)[0]["series"] == "y" * 39
        w.set_run_info(state="running", topology="fused-2core", config="fused", knobs={"queue_size": 32},
                       target_pps=240_000, achieved_pps=239_990.5, run_dir="runs/2008-02-01/r1")
        StatsWriter.attach(run_id).set_run_info(achieved_pps=240_000)  # another writer, one field
        info = r.run_info()
        assert info["state"] == "running" and info["topology"] == "fused-2core" and info["target_pps"] == 240_000
        assert info["knobs"] == {"queue_size": 32} and info["achieved_pps"] == 240_000
        with pytest.raises(ValueError):
            w.set_run_info(knobs={"k": "v" * 5000})
        with pytest.raises(ValueError):
            w.set_run_info(state="sleeping")
        with pytest.raises(KeyError):
            w.set_run_info(colour="blue")


def test_attached_partition_registers_its_own_entries(run_id: str) -> None:
    with StatsWriter.create(run_id) as owner, StatsReader(run_id) as r:
        part = StatsWriter.attach(run_id)
        part.register_operator("fh3", "operator", ["messages"]).publish([7])
        part.publish_line(3, messages_received=7)
        part.close()  # not the owner: the segment stays
        assert Path("/dev/shm", owner.name).exists()
        assert r.operators()[0]["counters"] == {"messages": 7} and r.ingest()[0]["messages_received"] == 7
