"""The latency collector: hop arithmetic on hand-built stamp blocks, selection, identity
extraction, bad batches, the paper's middle-100,000 method and the n/a rule. Runs under
ASan/UBSan in CI (the batch walk reads caller memory)."""
from __future__ import annotations

import numpy as np
import pytest

from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_collector import LatencyCollector, RecordBatchError, middle_rows
from omdp.metrics.latency_summary import PERCENTILES, min_samples, percentile_field, summarize
from omdp.metrics.sample_identity import SAMPLE_ID_DTYPE, IdentityField, IdentityLayout
from omdp.native import ffi, lib
from omdp.record import RECORD_HEADER_DTYPE, RF_SAMPLED, STAMPS_DTYPE

REC = np.dtype([("hdr", RECORD_HEADER_DTYPE), ("seq", "<u8"), ("key", "<u4"), ("line", "<u2"), ("cat", "u1"),
                ("pad", "u1")])
ID = IdentityLayout.from_dtype(REC, line="line", msg_seq="seq", key="key", category="cat")
T0 = 1_700_000_000_000_000_000


def batch(stamps: list[tuple[int, int, int, int, int]], flags: int = RF_SAMPLED) -> np.ndarray:
    """Records with stamp blocks (intended, fh_in, fh_out, de_in, de_out); mc_in left 0."""
    b = np.zeros(len(stamps), dtype=REC)
    b["hdr"]["type"] = 3
    b["hdr"]["length"] = REC.itemsize
    b["hdr"]["flags"] = flags
    for i, (it, fi, fo, di, do) in enumerate(stamps):
        b["hdr"]["stamps"][i] = (it, fi, fo, di, do, 0)
    b["seq"] = np.arange(100, 100 + len(stamps))
    b["key"] = 7
    b["line"] = 3
    b["cat"] = ord("k")
    return b


def test_hops_of_a_hand_built_stamp_block() -> None:
    c = LatencyCollector(identity=ID)
    b = batch([(T0, T0 + 1_000, T0 + 1_300, T0 + 2_300, T0 + 2_350)])
    assert c.collect(b, source=5, mc_in=T0 + 4_000) == 1
    h = c.live_histograms()
    expect = {"fh": 300, "to_de": 1_000, "de": 50, "to_mc": 1_650, "e2e": 3_000, "e2e_intended": 4_000}
    for k, v in expect.items():
        assert h[k].count == 1 and h[k].min_ns == v == h[k].max_ns, k
    assert b["hdr"]["stamps"]["mc_in"][0] == 0  # the batch is only read
    row = c.samples_table().to_pylist()[0]
    assert row == {"line": 3, "block_seq": 0, "msg_seq": 100, "engine": 5, "underlying_id": 7, "category": ord("k"),
                   "intended": T0, "fh_in": T0 + 1_000, "fh_out": T0 + 1_300, "de_in": T0 + 2_300,
                   "de_out": T0 + 2_350, "mc_in": T0 + 4_000}


def test_unstamped_hops_are_missing_not_zero() -> None:
    c = LatencyCollector()
    # intended = 0 (live feed, no replayer) and de stamps absent (no engine on the path).
    c.collect(batch([(0, T0, T0 + 100, 0, 0)]), mc_in=T0 + 900)
    h, k = c.live_histograms(), c.counters()
    assert h["fh"].count == 1 and h["e2e"].count == 1 and h["e2e"].max_ns == 900
    assert h["e2e_intended"].count == 0 and h["to_de"].count == 0 and h["de"].count == 0 and h["to_mc"].count == 0
    assert k["missing"] == {"fh": 0, "to_de": 1, "de": 1, "to_mc": 1, "e2e": 0, "e2e_intended": 1}


def test_negative_hops_are_clamped_and_counted() -> None:
    c = LatencyCollector()
    c.collect(batch([(T0, T0 + 500, T0 + 400, T0 + 600, T0 + 700)]), mc_in=T0 + 800)
    fh = c.live_histograms()["fh"]
    assert fh.count == 1 and fh.max_ns == 0 and fh.below_zero == 1


def test_flagged_selection_takes_only_sampled_records() -> None:
    b = batch([(T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4)] * 10, flags=0)
    b["hdr"]["flags"][[2, 7]] = RF_SAMPLED
    c = LatencyCollector(identity=ID)
    assert c.collect(b, mc_in=T0 + 10) == 2
    assert c.counters()["not_sampled"] == 8
    assert c.samples_table().column("msg_seq").to_pylist() == [102, 107]


def test_every_n_selection_and_record_type_filter() -> None:
    b = batch([(T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4)] * 10, flags=0)
    b["hdr"]["type"][1] = 2  # another record type: never a candidate
    c = LatencyCollector(select="every_n", sample_every=3, record_type=3, identity=ID)
    assert c.collect(b, mc_in=T0 + 10) == 3
    # candidates are records 0, 2..9; every 3rd from the first: 0, 4, 7
    assert c.samples_table().column("msg_seq").to_pylist() == [100, 104, 107]


def test_bad_record_length_collects_what_precedes_it() -> None:
    b = batch([(T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4)] * 4)
    b["hdr"]["length"][2] = 12  # not a multiple of 8
    c = LatencyCollector()
    with pytest.raises(RecordBatchError) as e:
        c.collect(b, mc_in=T0 + 10)
    assert e.value.offset == 2 * REC.itemsize and e.value.samples_taken == 2
    k = c.counters()
    assert k["bad_batches"] == 1 and k["samples"] == 2 and k["last_error_offset"] == 2 * REC.itemsize
    # A length running past the end, and a truncated header, are refused the same way.
    b2 = batch([(T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4)] * 2)
    b2["hdr"]["length"][1] = 4096
    with pytest.raises(RecordBatchError):
        c.collect(b2, mc_in=T0 + 10)
    with pytest.raises(RecordBatchError):
        c.collect(b.view(np.uint8)[:40].copy(), mc_in=T0 + 10)
    assert c.counters()["bad_batches"] == 3


def test_batches_need_no_alignment() -> None:
    b = batch([(T0, T0 + 1_000, T0 + 1_300, T0 + 2_300, T0 + 2_350)] * 2)
    raw = np.zeros(b.nbytes + 3, dtype=np.uint8)
    raw[3:] = b.view(np.uint8)
    c = LatencyCollector()
    assert c.collect(raw[3:], mc_in=T0 + 4_000) == 2
    assert c.live_histograms()["to_mc"].max_ns == 1_650
    with pytest.raises(ValueError, match="mc_in"):
        c.collect(b, mc_in=-1)


def test_identity_fields_past_the_record_end_read_as_zero() -> None:
    layout = IdentityLayout(msg_seq=IdentityField(REC.itemsize, 8))
    c = LatencyCollector(identity=layout)
    c.collect(batch([(T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4)]), mc_in=T0 + 10)
    assert c.counters()["id_out_of_bounds"] == 1
    assert c.samples_table().column("msg_seq").to_pylist() == [0]


def test_identity_layout_validation() -> None:
    with pytest.raises(ValueError):
        IdentityField(0, 3)
    with pytest.raises(ValueError, match="does not fit"):
        IdentityLayout(line=IdentityField(0, 8))
    with pytest.raises(KeyError, match="no field"):
        IdentityLayout.from_dtype(REC, line="nope")
    with pytest.raises(KeyError, match="unknown identity"):
        IdentityLayout.from_dtype(REC, colour="line")


def test_pre_extracted_rows() -> None:
    stamps = np.zeros(3, dtype=STAMPS_DTYPE)
    for i in range(3):
        stamps[i] = (T0, T0 + 10, T0 + 20, T0 + 40, T0 + 80, T0 + 160 + i)
    ids = np.zeros(3, dtype=SAMPLE_ID_DTYPE)
    ids["line"] = [1, 2, 3]
    c = LatencyCollector()
    assert c.collect_rows(stamps, ids) == 3
    assert c.live_histograms()["to_mc"].max_ns == 82
    assert c.samples_table().column("line").to_pylist() == [1, 2, 3]
    with pytest.raises(TypeError):
        c.collect_rows(np.zeros(3, dtype=np.int64))


def test_middle_rows_of_the_papers_method() -> None:
    assert middle_rows(150_000, 150_000, 100_000) == (25_000, 125_000)
    assert middle_rows(400_000, 150_000, 100_000) == (25_000, 125_000)
    assert middle_rows(1_500, 150_000, 100_000) == (250, 1_250)
    assert middle_rows(0, 150_000, 100_000) == (0, 0)


def test_middle_method_reports_the_middle_rows_only() -> None:
    # 150 samples; the first 25 and last 25 are outliers that the method must drop.
    n, collect, report = 160, 150, 100
    stamps = np.zeros(n, dtype=STAMPS_DTYPE)
    e2e = np.full(n, 5_000)
    e2e[:25] = 1_000_000
    e2e[125:] = 2_000_000
    stamps["fh_in"] = T0
    stamps["mc_in"] = T0 + e2e
    c = LatencyCollector(method="middle", collect=collect, report=report)
    assert not c.complete
    c.collect_rows(stamps[:100])
    assert not c.complete
    c.collect_rows(stamps[100:])
    assert c.complete and c.rows == collect
    assert c.counters()["rows_dropped"] == n - collect
    rep = c.report_histograms()["e2e"]
    assert rep.count == report and rep.max_ns == 5_000
    assert c.live_histograms()["e2e"].count == n  # live figures keep everything
    assert c.samples_metadata()["omdp.report_rows"] == "25:125"
    assert c.summary()["e2e"]["count"] == report


def test_na_tails() -> None:
    for name, p in PERCENTILES:
        need = min_samples(p)
        below = summarize(LatencyHistogram.of(np.arange(1, need)))
        enough = summarize(LatencyHistogram.of(np.arange(1, need + 1)))
        assert below[percentile_field(name)] is None, name
        assert enough[percentile_field(name)] is not None, name
        assert below["mean_us"] is not None and below["max_us"] is not None
    assert [min_samples(p) for _, p in PERCENTILES] == [20, 100, 1_000, 10_000, 100_000]
    empty = summarize(LatencyHistogram())
    assert empty["count"] == 0 and all(v is None for k, v in empty.items() if k != "count")


def test_bad_options() -> None:
    with pytest.raises(ValueError):
        LatencyCollector(sample_every=0)
    with pytest.raises(ValueError):
        LatencyCollector(method="middle", collect=10, report=20)
    with pytest.raises(ValueError):
        LatencyCollector(select="random")  # type: ignore[arg-type]
    assert lib.omdp_latency_collector_new(ffi.NULL) == ffi.NULL
    assert lib.omdp_latency_collect_batch(LatencyCollector().c_pointer, ffi.NULL, 8, 0, 0) == lib.OMDP_LAT_EINVAL
    cfg = ffi.new("omdp_latency_config_t *", {"sample_every": 1, "id": {"line": {"offset": 0, "size": 3}}})
    assert lib.omdp_latency_collector_new(cfg) == ffi.NULL


def test_hop_keys_cover_the_summary() -> None:
    c = LatencyCollector()
    assert list(c.summary()) == list(HOP_KEYS)


def test_spilling_collector_holds_at_most_a_chunk_and_writes_every_row(tmp_path) -> None:
    import pyarrow.parquet as pq

    chunk, per_call, calls = 1_000, 300, 40   # 12,000 rows: twelve chunks
    c = LatencyCollector(spill_dir=tmp_path, chunk_rows=chunk, max_rows=chunk + per_call)
    for k in range(calls):
        stamps = np.zeros(per_call, dtype=STAMPS_DTYPE)
        stamps["fh_in"] = T0
        stamps["mc_in"] = T0 + 1_000 + np.arange(per_call)
        ids = np.zeros(per_call, dtype=SAMPLE_ID_DTYPE)
        ids["msg_seq"] = np.arange(k * per_call, (k + 1) * per_call)
        c.collect_rows(stamps, ids)
        assert c.held_rows < chunk   # after each call: a full chunk went to the file
    assert c.max_held_rows <= chunk + per_call - 1
    assert c.rows == calls * per_call and c.counters()["rows_dropped"] == 0
    assert c.live_histograms()["e2e"].count == calls * per_call
    path = c.write_samples(tmp_path)
    table = pq.read_table(path)
    assert table.num_rows == calls * per_call
    assert table.column("msg_seq").to_pylist() == list(range(calls * per_call))
    assert table.schema.remove_metadata() == c.samples_table().schema.remove_metadata()
    assert table.schema.metadata[b"omdp.report_rows"] == f"0:{calls * per_call}".encode()
    assert not list(tmp_path.glob(".samples.parquet.*"))
