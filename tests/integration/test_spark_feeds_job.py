"""The nightly feeds job on a real local SparkSession, against captures written with the C
encoder and the pcap writer: the tick table holds exactly what the C decoder decodes, the
rate profile matches the capture's known timing, the feed's mix and top underlyings follow
the manifest, and a corrupt or cut-short capture is reported by name without failing."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from feedhandlers.captures import read_pcap
from feedhandlers.opra_fast import decode_batch
from ops.spark.common.data_layout import DataLayout
from ops.spark.feeds.feeds_job import FeedsResult, read_tick_windows, read_ticks, run_feeds
from spark_test_data import ROOTS, T0_NS, write_capture, write_manifest
from spark_test_session import local_spark

pytestmark = pytest.mark.full  # a Spark session

DATE = "2008-02-04"
MS = 1_000_000


def _line1_timing() -> tuple[np.ndarray, np.ndarray]:
    """Second 0: one packet every 5 ms. Second 1: one every 5 ms plus a burst of 30 packets
    inside 4 ms at 1.5 s. Second 2: nothing. Second 3: one packet every 20 ms.
    Packets hold 1, 2, 3, 4, 1, 2, ... messages."""
    s0 = T0_NS + np.arange(200) * 5 * MS
    s1 = T0_NS + 1_000 * MS + np.arange(200) * 5 * MS
    burst = T0_NS + 1_500 * MS + 1 * MS + np.arange(30) * 100_000
    s3 = T0_NS + 3_000 * MS + np.arange(50) * 20 * MS
    ts = np.sort(np.concatenate([s0, s1, burst, s3]))
    return ts, np.arange(ts.size) % 4 + 1


def _line2_timing() -> tuple[np.ndarray, np.ndarray]:
    """Two seconds of one 3-message packet every 2 ms, starting 0.25 s after line 1."""
    ts = T0_NS + 250 * MS + np.arange(1_000) * 2 * MS
    return ts, np.full(ts.size, 3)


@pytest.fixture(scope="module")
def spark():
    with local_spark("test-feeds-job") as s:
        yield s


@pytest.fixture(scope="module")
def day(spark, tmp_path_factory) -> tuple[DataLayout, FeedsResult]:
    layout = DataLayout(tmp_path_factory.mktemp("omdp-data"))
    folder = layout.captures(DATE)
    folder.mkdir(parents=True)
    ts1, n1 = _line1_timing()
    # Line 1 rotates into three files; its B copy must not be decoded by default.
    line1 = write_capture(folder / "line01.pcap", ts1, n1, line=1, seed=1, max_bytes=16_000)
    assert [p.name for p in line1[:2]] == ["line01.pcap", "line01.1.pcap"]
    write_capture(folder / "line01-b.pcap", ts1, n1, line=1, seed=1)
    ts2, n2 = _line2_timing()
    write_capture(folder / "line02.pcap", ts2, n2, line=2, seed=2)
    # Line 3 is not a pcap at all; line 4 was cut off in the middle of a packet record.
    (folder / "line03.pcap").write_bytes(b"this is not a capture\n" * 20)
    write_capture(folder / "line04.pcap", T0_NS + np.arange(100) * MS, np.full(100, 2), line=4, seed=4)
    data = (folder / "line04.pcap").read_bytes()
    (folder / "line04.pcap").write_bytes(data[:-10])
    write_manifest(folder, DATE)
    return layout, run_feeds(spark, layout, DATE)


def _table(layout: DataLayout, name: str) -> list[dict]:
    return pq.read_table(layout.reports(DATE) / f"{name}.parquet").to_pylist()


def _decoded_by_c(paths: list[Path]) -> np.ndarray:
    """Every record the C batch decoder gives for these files, in file order."""
    out = []
    for p in paths:
        cap = read_pcap(p)
        out.append(decode_batch(cap.buf, cap.offsets, cap.lengths).records)
    return np.concatenate(out)


def test_tick_counts_equal_the_c_decoder(spark, day) -> None:
    layout, result = day
    folder = layout.captures(DATE)
    ticks = read_ticks(spark, layout, DATE)
    per_line = {r["line"]: r for r in ticks.groupBy("line").agg({"msg_seq": "sum", "*": "count"}).collect()}
    line1 = sorted(folder.glob("line01.*pcap"))
    assert len(line1) > 2
    for line, files in ((1, line1), (2, [folder / "line02.pcap"]), (4, [folder / "line04.pcap"])):
        c = _decoded_by_c(files)
        assert per_line[line]["count(1)"] == c.shape[0], line
        assert per_line[line]["sum(msg_seq)"] == int(c["msg_seq"].sum()), line
    assert set(per_line) == {1, 2, 4}
    assert result.messages == sum(r["count(1)"] for r in per_line.values())
    ts1, n1 = _line1_timing()
    assert per_line[1]["count(1)"] == n1.sum()


def test_tick_rows_carry_the_decoded_fields(spark, day) -> None:
    layout, _ = day
    c = _decoded_by_c([layout.captures(DATE) / "line02.pcap"])
    rows = read_ticks(spark, layout, DATE).where("line = 2").orderBy("msg_seq").limit(5).collect()
    ts2, _ = _line2_timing()
    for r, rec in zip(rows, c[:5]):
        assert r["msg_seq"] == rec["msg_seq"] and r["bid_px"] == rec["bid_px"] and r["offer_size"] == rec["offer_size"]
        assert r["root"] == rec["root"].decode() and r["underlying"] == ROOTS[r["root"]]
        assert r["expiry"] == 20080322 and r["put_call"] in ("C", "P") and r["category"] in ("k", "a")
        assert r["packet_messages"] == 3 and r["date"] == DATE
    assert rows[0]["ts_ns"] == ts2[0] and rows[3]["ts_ns"] == ts2[1]
    # A quote carries no last-sale premium: null, not 0.
    quote = next(r for r in rows if r["category"] == "k")
    assert quote["premium_px"] is None and quote["volume"] is None


def test_tick_windows_equal_the_tick_tables_10ms_aggregate(spark, day) -> None:
    """The decode tasks' windows files hold what Spark counts from the tick table itself."""
    from pyspark.sql import functions as F

    layout, _ = day
    first = F.col("msg_index") == 0
    ticks = read_ticks(spark, layout, DATE).groupBy("line", (F.col("ts_ns") - F.pmod("ts_ns", F.lit(10 * MS))).alias("w10")).agg(
        F.sum(first.cast("long")).alias("packets"), F.count(F.lit(1)).alias("messages"),
        F.sum(F.when(first, F.col("packet_bytes")).otherwise(0).cast("long")).alias("bytes"),
        F.min("ts_ns").alias("first_ns"), F.max("ts_ns").alias("last_ns"))
    windows = read_tick_windows(spark, layout, DATE).groupBy("line", "w10").agg(
        F.sum("packets").alias("packets"), F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
        F.min("first_ns").alias("first_ns"), F.max("last_ns").alias("last_ns"))
    want = sorted(tuple(r) for r in ticks.collect())
    assert len(want) > 100 and sorted(tuple(r) for r in windows.select(*ticks.columns).collect()) == want
    # Line 1's three files: each its own windows file, a window cut by the rotation in two.
    assert len(list((layout.tick_windows() / f"date={DATE}" / "line=1").glob("*.parquet"))) > 2


def _expected_profile(ts_list: list[np.ndarray], counts_list: list[np.ndarray], window_ms: int) -> dict[str, float]:
    ts = np.concatenate(ts_list)
    counts = np.concatenate(counts_list)
    w = ts // (window_ms * MS)
    windows = int(w.max() - w.min() + 1)
    keys, inv = np.unique(w, return_inverse=True)
    packets = np.bincount(inv)
    messages = np.bincount(inv, weights=counts)
    per_s = 1_000 / window_ms
    span_s = (ts.max() - ts.min()) / 1e9
    return {
        "windows": windows,
        "mean_pps": ts.size / span_s,
        "peak_pps": packets.max() * per_s,
        "mean_mps": counts.sum() / span_s,
        "peak_mps": messages.max() * per_s,
    }


def test_rate_profile_matches_the_known_timing(day) -> None:
    layout, _ = day
    profile = {(r["line"], r["window_ms"]): r for r in _table(layout, "feeds_rate_profile")}
    ts1, n1 = _line1_timing()
    ts2, n2 = _line2_timing()
    ts4, n4 = T0_NS + np.arange(99) * MS, np.full(99, 2)  # the cut-off record is lost
    for window_ms in (1_000, 100, 10):
        for line, want in (
            (1, _expected_profile([ts1], [n1], window_ms)),
            (2, _expected_profile([ts2], [n2], window_ms)),
            (None, _expected_profile([ts1, ts2, ts4], [n1, n2, n4], window_ms)),
        ):
            got = profile[(line, window_ms)]
            for k, v in want.items():
                assert got[k] == pytest.approx(v), (line, window_ms, k)
    # Worked by hand for line 1: 2 packets per 10 ms normally; the burst puts 30 more in one.
    assert profile[(1, 10)]["peak_pps"] == 3_200.0
    assert profile[(1, 1_000)]["windows"] == 4  # the empty second 2 is part of the span
    assert profile[(1, 1_000)]["mean_pps"] == pytest.approx(480 / 3.98)  # last packet at 3.98 s


def test_day_summary_and_one_x(day) -> None:
    layout, result = day
    (row,) = _table(layout, "feeds_day")
    line1_files = len(list(layout.captures(DATE).glob("line01.*pcap")))
    assert row["files"] == line1_files + 3 and row["files_skipped"] == 1 and row["lines"] == 3
    assert row["packets"] == 480 + 1_000 + 99
    assert row["rate_x"] == pytest.approx(row["mean_pps"] / 24_000)
    assert row["peak_10ms_pps"] >= row["peak_100ms_pps"] >= row["peak_1s_pps"] >= row["mean_pps"]
    per_second = [r for r in _table(layout, "feeds_rate_per_second") if r["line"] is None]
    assert sum(r["packets"] for r in per_second) == row["packets"]
    assert result.day == row


def test_messages_per_packet_category_mix_and_top_underlyings(day) -> None:
    layout, _ = day
    hist = {(r["line"], r["messages_per_packet"]): r["packets"] for r in _table(layout, "feeds_messages_per_packet")}
    assert hist[(1, 1)] == 120 and hist[(1, 4)] == 120 and hist[(2, 3)] == 1_000
    assert hist[(None, 2)] == 120 + 99
    mix = {r["category"]: r for r in _table(layout, "feeds_category_mix")}
    assert set(mix) == {"k", "a"} and mix["k"]["category_name"] == "quote"
    assert sum(r["share"] for r in mix.values()) == pytest.approx(1.0)
    top = _table(layout, "feeds_top_underlyings")
    assert [r["rank"] for r in top] == list(range(1, len(top) + 1))
    assert {r["underlying"] for r in top} == set(ROOTS.values())
    # Two roots (IBM, IBQ) map to IBM, so it has about twice the messages of the others.
    assert top[0]["underlying"] == "IBM" and top[0]["share"] > 0.3


def test_corrupt_and_cut_short_captures_are_reported_by_name(day) -> None:
    layout, result = day
    files = {Path(r["path"]).name: r for r in _table(layout, "feeds_files")}
    assert "line01-b.pcap" not in files
    assert files["line03.pcap"]["status"] == "skipped" and "not a classic pcap" in files["line03.pcap"]["error"]
    assert files["line04.pcap"]["status"] == "partly skipped" and files["line04.pcap"]["packets"] == 99
    assert all(r["status"] == "ok" for f, r in files.items() if f.startswith(("line01", "line02")))
    assert sum(r["packets"] for f, r in files.items() if f.startswith("line01")) == 480
    skipped = {Path(r["path"]).name: r["action"] for r in _table(layout, "feeds_skipped_files")}
    assert skipped == {"line03.pcap": "skipped", "line04.pcap": "partly skipped"}
    assert {Path(p.path).name for p in result.problems} == set(skipped)


def test_each_file_says_how_much_of_its_cpu_went_to_the_parquet_write(day) -> None:
    layout, result = day
    files = {Path(r["path"]).name: r for r in _table(layout, "feeds_files")}
    written = [r for r in files.values() if r["output"]]
    assert written and all(0 < r["write_cpu_s"] <= r["cpu_s"] for r in written)
    assert files["line03.pcap"]["write_cpu_s"] == 0.0   # skipped: nothing written
    assert 0 < result.write_cpu_seconds <= result.decode_cpu_seconds


def test_python_workers_start_no_blas_threads(spark) -> None:
    """build_session sets OPENBLAS/OMP/MKL_NUM_THREADS=1 in the executors' Python workers:
    their numpy must not start BLAS threads that spin beside the single-threaded tasks."""
    from ops.spark.common.session import BLAS_THREAD_VARS

    def worker_env(_: object) -> list[tuple[str, str | None]]:
        import os
        return [(v, os.environ.get(v)) for v in BLAS_THREAD_VARS]

    got = spark.sparkContext.parallelize([0, 1], 2).flatMap(worker_env).collect()
    assert got and all(value == "1" for _, value in got)


def test_python_workers_import_the_installed_pyspark(spark) -> None:
    """build_session starts local masters' workers from ops.spark.common.worker_daemon: PySpark's zips
    go last on their path, so where PySpark is installed as a package (pip: here) the workers
    import its cached bytecode, not source compiled from the zip."""
    import pyspark

    def worker_pyspark(_: object) -> list[tuple[str, str, bool]]:
        import sys

        import pyspark as worker_side

        from ops.spark.common.worker_daemon import is_spark_zip
        spark_zip = [is_spark_zip(p) for p in sys.path]
        return [(sys.argv[0], worker_side.__file__, spark_zip == sorted(spark_zip))]  # False..., True...

    assert ".zip" not in pyspark.__file__  # the driver's: an installed package
    got = spark.sparkContext.parallelize([0, 1], 2).flatMap(worker_pyspark).collect()
    assert got
    for argv0, path, zips_at_end in got:
        assert argv0.endswith("worker_daemon.py"), argv0
        assert ".zip" not in path, path
        assert zips_at_end
