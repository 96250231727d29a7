"""The engine task's passes over staged records (feed_handler_stage_scan.c,
feed_handler_stage_merge.c) and the decode task's packing straight from the offline feed
handler (omdp_fh_offline_stage): the merge of time-ordered parts gives the stable sort's
order and resumes where a full output stopped; the quote hits and the per-underlying counts
agree with the numpy definitions they replace (quote_hash, unique plus bincount), and so do
the counts the merge takes as it expands; an id
too large for the dense table takes the sort; a part out of time order, a record whose
series or appendage index is past its line's table, and a bad argument are refused, not
read past. Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from feedhandlers.opra_record import NO_UNDERLYING, OPRA_MSG_DTYPE
from omdp.native import ffi, lib
from ops.spark.backtest.backtest_feed import PKT_DTYPE, OfflineFeedHandler, Routes
from ops.spark.backtest.backtest_score import quote_hash
from ops.spark.backtest.backtest_stage import (DENSE_IDS, EXTRA_DTYPE, NO_EXTRA, SERIES_DTYPE, STAGE_DTYPE, BucketWriter,
                                    CountSlots, StagedBucket, StagedPart, quote_hits, underlying_counts)


def _part(n: int, seed: int = 3, line: int = 5) -> StagedPart:
    """n staged records over a random series table of 60 and an appendage table of 4."""
    rng = np.random.default_rng(seed)
    ser = np.zeros(60, SERIES_DTYPE)
    ser["root"] = rng.choice(np.array([b"SPY", b"IBM  ", b"AAPL\0\0", b"Q"], dtype="S6"), 60)
    ser["expiry"] = rng.choice([20080216, 20080322], 60)
    ser["strike_px"] = rng.integers(1, 6, 60) * 10_000_000_000
    ser["put_call"] = rng.choice([ord("C"), ord("P")], 60)
    ser["underlying_id"] = rng.choice([0, 3, 7, 7, 40, NO_UNDERLYING], 60)
    s = np.zeros(n, STAGE_DTYPE)
    s["series"] = rng.integers(0, 60, n)
    s["participant"] = rng.choice([ord("A"), ord("C"), ord("X")], n)
    s["ts_ns"] = rng.integers(-5, 1 << 40, n)
    s["category"] = rng.choice([ord("k"), ord("a"), ord("f")], n)
    s["extra"] = rng.choice([NO_EXTRA, 0, 3], n)
    return StagedPart(line, s, ser, np.zeros(4, EXTRA_DTYPE))


def _hash(p: StagedPart) -> np.ndarray:
    ser = p.series[p.recs["series"]]
    return quote_hash(np.full(len(p), p.line), ser["root"], ser["expiry"], ser["strike_px"], ser["put_call"],
                      p.recs["participant"])


def test_quote_hash_in_c_is_the_numpy_quote_hash() -> None:
    p = _part(500)
    got = [lib.omdp_fh_stage_quote_hash(p.line, ffi.cast("const omdp_fh_stage_series_t *",
                                                         ffi.from_buffer(p.series[p.recs["series"][i:i + 1]])),
                                        int(p.recs["participant"][i])) for i in range(len(p))]
    assert np.array_equal(np.array(got, np.uint64), _hash(p))


def test_quote_hits_match_strike_and_key_filters() -> None:
    p = _part(5000)
    h = _hash(p)
    strike = p.series["strike_px"][p.recs["series"]]
    keys = h[::20]
    strikes = np.unique(strike)[:3]
    want = np.flatnonzero(np.isin(strike, strikes) & np.isin(h, keys))
    assert len(want) > 64                               # past the first output buffer: the retry path
    assert np.array_equal(quote_hits(p, strikes, keys), want)
    assert len(quote_hits(p, np.array([1], np.int64), keys)) == 0
    assert len(quote_hits(StagedPart(1, p.recs[:0], p.series, p.extras), strikes, keys)) == 0


def test_underlying_counts_match_unique_and_bincount() -> None:
    p = _part(3000)
    parts = [StagedPart(p.line, p.recs[a:b], p.series, p.extras) for a, b in ((0, 1000), (1000, 2000), (2000, 3000))]
    c = underlying_counts(parts)                        # parts add into one table
    uid = p.series["underlying_id"][p.recs["series"]]
    ids, inv = np.unique(uid, return_inverse=True)
    assert np.array_equal(c.ids, ids) and c.ids[-1] == NO_UNDERLYING
    assert np.array_equal(c.messages, np.bincount(inv))
    assert np.array_equal(c.quotes, np.bincount(inv, weights=p.recs["category"] == ord("k")).astype(np.int64))
    assert np.array_equal(c.first_ns, [p.recs["ts_ns"][inv == i].min() for i in range(len(ids))])
    assert np.array_equal(c.last_ns, [p.recs["ts_ns"][inv == i].max() for i in range(len(ids))])
    sparse = p.series.copy()
    sparse["underlying_id"][sparse["underlying_id"] == 40] = DENSE_IDS + 9
    cs = underlying_counts([StagedPart(p.line, p.recs, sparse, p.extras)])
    assert list(cs.ids) == [0, 3, 7, DENSE_IDS + 9, NO_UNDERLYING] and np.array_equal(cs.messages, c.messages)
    empty = underlying_counts([StagedPart(1, p.recs[:0], p.series, p.extras)])
    assert len(empty.ids) == 0 and len(empty.messages) == 0


def test_an_index_past_the_line_tables_is_refused() -> None:
    p = _part(50)
    past_series = p.recs.copy()
    past_series["series"][17] = len(p.series)
    past_extra = p.recs.copy()
    past_extra["extra"][23] = len(p.extras)
    for recs, where in ((past_series, 17), (past_extra, 23)):
        bad = StagedPart(p.line, np.sort(recs, order="ts_ns", kind="stable"), p.series, p.extras)
        with pytest.raises(ValueError, match="past their line's tables: x"):
            list(StagedBucket([bad], [Path("x")]).merged(np.empty(8, OPRA_MSG_DTYPE)))
        m = ffi.new("omdp_opra_msg_t *")
        assert lib.omdp_fh_stage_unpack_one(StagedPart(p.line, recs, p.series, p.extras).c(), where, m) == -1
    with pytest.raises(ValueError, match="past the line's table"):
        quote_hits(StagedPart(p.line, past_series, p.series, p.extras), p.series["strike_px"], np.array([1], np.uint64))
    with pytest.raises(ValueError, match="past the line's table"):
        underlying_counts([StagedPart(p.line, past_series, p.series, p.extras)])
    assert lib.omdp_fh_stage_unpack_one(p.c(), len(p), ffi.new("omdp_opra_msg_t *")) == -1


def test_scans_refuse_bad_arguments() -> None:
    p = _part(10)
    c = p.c()
    slots = [np.zeros(2, np.int64) for _ in range(4)]
    ptrs = [ffi.cast("int64_t *", ffi.from_buffer(a)) for a in slots]
    if lib.omdp_fh_stage_max_underlying(c) >= 1:
        assert lib.omdp_fh_stage_underlying_counts(c, 2, *ptrs) == -1   # an id past the table's last slot
    assert lib.omdp_fh_stage_underlying_counts(c, 0, *ptrs) == -1
    assert lib.omdp_fh_stage_underlying_counts(ffi.NULL, 2, *ptrs) == -1
    assert lib.omdp_fh_stage_quote_hits(ffi.NULL, ffi.NULL, 0, ffi.NULL, 0, ffi.NULL, 0) == -1
    assert lib.omdp_fh_stage_quote_hits(c, ffi.NULL, 1, ffi.NULL, 0, ffi.NULL, 0) == -1
    assert lib.omdp_fh_stage_max_underlying(ffi.NULL) == -1
    assert lib.omdp_fh_stage_unpack_one(ffi.NULL, 0, ffi.new("omdp_opra_msg_t *")) == -1
    with pytest.raises(ValueError):
        quote_hits(StagedPart(1, p.recs[::2], p.series, p.extras), np.array([1]), np.array([1], np.uint64))


def _bucket(sizes: list[int]) -> StagedBucket:
    rng = np.random.default_rng(5)
    parts = []
    for line, n in enumerate(sizes, start=1):
        p = _part(n, seed=line, line=line)
        p.recs["ts_ns"] = np.sort(rng.integers(0, 50, n))   # many ties, within and across parts
        p.recs["msg_seq"] = np.arange(n)
        parts.append(p)
    return StagedBucket(parts, [Path(f"line{p.line:02d}.stage") for p in parts])


def test_merge_is_the_stable_sort_of_the_parts_and_resumes() -> None:
    bucket = _bucket([300, 0, 1, 250, 77])
    whole = np.concatenate([p.recs for p in bucket.parts])
    line = np.concatenate([np.full(len(p), p.line) for p in bucket.parts])
    order = np.argsort(whole["ts_ns"], kind="stable")
    for chunk in (1, 7, 1000):
        got = np.concatenate([c.copy() for c in bucket.merged(np.empty(chunk, OPRA_MSG_DTYPE))])
        assert np.array_equal(got["hdr"]["stamps"]["fh_in"], whole["ts_ns"][order])
        assert np.array_equal(got["line"], line[order]) and np.array_equal(got["msg_seq"], whole["msg_seq"][order])
    assert list(StagedBucket([], []).merged(np.empty(4, OPRA_MSG_DTYPE))) == []


def test_counted_merge_gives_the_underlying_counts_of_the_parts() -> None:
    """The engine task's per-underlying table, taken by the merge as it expands (any chunk
    size), equals the separate pass over the parts; an underlying without a slot is refused
    with the parts named, and counts without arrays are a bad argument."""
    bucket = _bucket([300, 0, 1, 250, 77])
    want = underlying_counts(bucket.parts)
    for chunk in (1, 7, 1000):
        slots = CountSlots.for_parts(bucket.parts)
        assert slots is not None
        n = sum(len(c) for c in bucket.merged(np.empty(chunk, OPRA_MSG_DTYPE), slots))
        got = slots.result()
        assert n == len(bucket) and want.ids[-1] == NO_UNDERLYING
        for f in ("ids", "messages", "quotes", "first_ns", "last_ns"):
            assert np.array_equal(getattr(got, f), getattr(want, f)), f
    with pytest.raises(ValueError, match="past the counts' table: one of line01.stage"):
        list(bucket.merged(np.empty(16, OPRA_MSG_DTYPE), CountSlots(5)))   # ids up to 40 for 6 slots
    parts = ffi.new("omdp_fh_stage_part_t[]", 1)
    bad = ffi.new("omdp_fh_stage_counts_t *", {"n_slots": 4})
    assert lib.omdp_fh_stage_merge_counted(parts, 1, ffi.new("uint64_t[]", 1), ffi.new("omdp_opra_msg_t[]", 1), 1,
                                           bad) == -1
    sparse = [StagedPart(p.line, p.recs, p.series.copy(), p.extras) for p in bucket.parts]
    sparse[0].series["underlying_id"][0] = DENSE_IDS + 1
    assert CountSlots.for_parts(sparse) is None                       # too large for a dense table


def test_merge_refuses_a_part_out_of_time_order_and_bad_cursors() -> None:
    bucket = _bucket([40, 40])
    bucket.parts[1].recs["ts_ns"][30] = -1
    with pytest.raises(ValueError, match="out of time order: line02.stage"):
        list(bucket.merged(np.empty(16, OPRA_MSG_DTYPE)))
    out = np.empty(4, OPRA_MSG_DTYPE)
    parts = ffi.new("omdp_fh_stage_part_t[]", 2)
    keep = [p.c() for p in bucket.parts]
    for i, c in enumerate(keep):
        parts[i] = c[0]
    dst = ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out))
    assert lib.omdp_fh_stage_merge(parts, 2, ffi.new("uint64_t[]", [41, 0]), dst, 4) == -1
    assert lib.omdp_fh_stage_merge(ffi.NULL, 2, ffi.new("uint64_t[]", 2), dst, 4) == -1
    assert lib.omdp_fh_stage_merge(parts, 2, ffi.new("uint64_t[]", 2), ffi.NULL, 4) == -1
    assert lib.omdp_fh_stage_merge(parts, 2, ffi.new("uint64_t[]", [40, 40]), dst, 4) == 0


def test_offline_staging_refuses_too_few_regions(tmp_path: Path) -> None:
    fh = OfflineFeedHandler(Routes(3, ("SPY",), (0,), (2,)))
    with BucketWriter(tmp_path, 1, 2) as w:           # 2 buckets for a table of 3 engines
        with pytest.raises(ValueError, match="bad argument"):
            fh.stage([np.zeros(64, np.uint8)], np.zeros(1, PKT_DTYPE), w)
    assert lib.omdp_fh_offline_stage(ffi.NULL, ffi.NULL, 0, ffi.NULL, 0, ffi.NULL) == -1


def _quote_stream(roots: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """n quotes over ``roots`` (an empty root: a message without one) encoded as packets of
    1-4 messages, as one source buffer and its PKT_DTYPE rows for line 1, copy A and B (B
    without every 5th packet), arrival order."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
    from feedhandlers.opra_fast import encode_stream
    from spark_test_data import quote_records

    rec = quote_records(n, roots, 1, np.random.default_rng(11))
    buf, offs, lens, _ = encode_stream(rec, b"", [1, 3, 4, 2])
    k = len(offs)
    b = np.flatnonzero(np.arange(k) % 5 != 4)
    pkts = np.zeros(k + len(b), PKT_DTYPE)
    pkts["off"] = np.concatenate([offs, offs[b]])
    pkts["len"] = np.concatenate([lens, lens[b]])
    pkts["line"] = 1
    pkts["copy"] = np.concatenate([np.zeros(k, np.uint8), np.ones(len(b), np.uint8)])
    pkts["ts_ns"] = np.concatenate([np.arange(k), b]) * 1000
    order = np.lexsort((pkts["copy"], pkts["ts_ns"]))
    return np.frombuffer(buf, np.uint8).copy(), np.ascontiguousarray(pkts[order])


def test_offline_staging_routes_once_per_series_as_the_record_path_routes_each_message(tmp_path: Path) -> None:
    """The staging path looks a message's series up first and routes its root only for a
    series new to the line; the record path routes every message. Each bucket gets the
    records the record path gives that engine - routed roots, unknown roots (hashed) and
    messages without a root (the default engine) - and the counters are the same."""
    src, pkts = _quote_stream(["IBM", "IBQ", "ZZZ", "QQQQQ", ""], 600)
    routes = Routes(3, ("IBM", "IBQ", "MSQ"), (4, 4, 9), (2, 0, 1))
    fh_stage = OfflineFeedHandler(routes, default_engine=1)
    with BucketWriter(tmp_path, 1, 3) as w:
        staged = fh_stage.stage([src], pkts, w)
    total, kept = 0, []
    for bucket in range(3):
        fh_run = OfflineFeedHandler(routes, default_engine=1)
        want = fh_run.run([src], pkts, bucket)
        run_counts, stage_counts = fh_run.counts(1), fh_stage.counts(1)
        kept.append(run_counts.pop("kept"))                 # the record path keeps only its engine's
        assert run_counts == {k: v for k, v in stage_counts.items() if k != "kept"}
        part = StagedPart(1, np.fromfile(tmp_path / "_stage" / f"b{bucket:03d}" / "line01.stage", STAGE_DTYPE),
                          np.fromfile(tmp_path / "_stage" / "line01.series", SERIES_DTYPE),
                          np.fromfile(tmp_path / "_stage" / "line01.extra", EXTRA_DTYPE))
        got = np.concatenate([c.copy() for c in StagedBucket([part], [tmp_path]).merged(np.empty(64, OPRA_MSG_DTYPE))])
        assert len(got) == len(want) > 50
        for f in ("msg_seq", "underlying_id", "root", "root_len", "strike_px", "expiry", "bid_px", "hdr"):
            assert np.array_equal(got[f], want[f]), f
        total += len(got)
    counts = fh_stage.counts(1)
    assert staged == total == sum(kept) == counts["kept"] and counts["unknown_root"] > 0 and counts["no_root"] > 0 and counts["packets_duplicate"] > 0
