"""The engine task's passes over staged records (feed_handler_stage_scan.c,
feed_handler_stage_merge.c): the merge of time-ordered parts gives the stable sort's order
and resumes where a full output stopped; the quote hits and the per-underlying counts agree
with the numpy definitions they replace (quote_hash, unique plus bincount), an id too large
for the dense table takes the sort; a part out of time order and a bad argument are refused,
not read past. Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pytest

from pathlib import Path

from feedhandlers.opra_record import NO_UNDERLYING, OPRA_MSG_DTYPE
from omdp.native import ffi, lib
from ops.spark.replay_score import quote_hash
from ops.spark.replay_stage import DENSE_IDS, STAGE_DTYPE, StagedBucket, quote_hits, underlying_counts


def _staged(n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = np.zeros(n, STAGE_DTYPE)
    s["line"] = rng.integers(1, 25, n)
    s["root"] = rng.choice(np.array([b"SPY", b"IBM  ", b"AAPL\0\0", b"Q"], dtype="S6"), n)
    s["expiry"] = rng.choice([20080216, 20080322], n)
    s["strike_px"] = rng.integers(1, 6, n) * 10_000_000_000
    s["put_call"] = rng.choice([ord("C"), ord("P")], n)
    s["participant"] = rng.choice([ord("A"), ord("C"), ord("X")], n)
    s["ts_ns"] = rng.integers(-5, 1 << 40, n)
    s["category"] = rng.choice([ord("k"), ord("a"), ord("f")], n)
    s["underlying_id"] = rng.choice([0, 3, 7, 7, 40, NO_UNDERLYING], n)
    return s


def _hash(s: np.ndarray) -> np.ndarray:
    return quote_hash(s["line"], s["root"], s["expiry"], s["strike_px"], s["put_call"], s["participant"])


def test_quote_hash_in_c_is_the_numpy_quote_hash() -> None:
    s = _staged(500)
    got = [lib.omdp_fh_stage_quote_hash(ffi.cast("const omdp_fh_staged_t *", ffi.from_buffer(s[i:i + 1])))
           for i in range(len(s))]
    assert np.array_equal(np.array(got, np.uint64), _hash(s))


def test_quote_hits_match_strike_and_key_filters() -> None:
    s = _staged(5000)
    h = _hash(s)
    keys = h[::20]
    strikes = np.unique(s["strike_px"])[:3]
    want = np.flatnonzero(np.isin(s["strike_px"], strikes) & np.isin(h, keys))
    assert len(want) > 64                               # past the first output buffer: the retry path
    assert np.array_equal(quote_hits(s, strikes, keys), want)
    assert len(quote_hits(s, np.array([1], np.int64), keys)) == 0
    assert len(quote_hits(s[:0], strikes, keys)) == 0


def test_underlying_counts_match_unique_and_bincount() -> None:
    s = _staged(3000)
    c = underlying_counts([s[:1000], s[1000:2000], s[2000:]])  # parts add into one table
    ids, inv = np.unique(s["underlying_id"], return_inverse=True)
    assert np.array_equal(c.ids, ids) and c.ids[-1] == NO_UNDERLYING
    assert np.array_equal(c.messages, np.bincount(inv))
    assert np.array_equal(c.quotes, np.bincount(inv, weights=s["category"] == ord("k")).astype(np.int64))
    assert np.array_equal(c.first_ns, [s["ts_ns"][inv == i].min() for i in range(len(ids))])
    assert np.array_equal(c.last_ns, [s["ts_ns"][inv == i].max() for i in range(len(ids))])
    sparse = s.copy()
    sparse["underlying_id"][sparse["underlying_id"] == 40] = DENSE_IDS + 9
    cs = underlying_counts([sparse])
    assert list(cs.ids) == [0, 3, 7, DENSE_IDS + 9, NO_UNDERLYING] and np.array_equal(cs.messages, c.messages)
    empty = underlying_counts([s[:0]])
    assert len(empty.ids) == 0 and len(empty.messages) == 0


def test_scans_refuse_bad_arguments() -> None:
    s = _staged(10)
    p = ffi.cast("const omdp_fh_staged_t *", ffi.from_buffer(s))
    slots = [np.zeros(2, np.int64) for _ in range(4)]
    ptrs = [ffi.cast("int64_t *", ffi.from_buffer(a)) for a in slots]
    assert lib.omdp_fh_stage_underlying_counts(p, len(s), 2, *ptrs) == -1   # id 3 past the table's last slot
    assert lib.omdp_fh_stage_underlying_counts(p, len(s), 0, *ptrs) == -1
    assert lib.omdp_fh_stage_underlying_counts(ffi.NULL, len(s), 2, *ptrs) == -1
    assert lib.omdp_fh_stage_quote_hits(ffi.NULL, 3, ffi.NULL, 0, ffi.NULL, 0, ffi.NULL, 0) == -1
    assert lib.omdp_fh_stage_quote_hits(p, len(s), ffi.NULL, 1, ffi.NULL, 0, ffi.NULL, 0) == -1
    assert lib.omdp_fh_stage_max_underlying(ffi.NULL, 5) == -1
    with pytest.raises(ValueError):
        quote_hits(s[::2], np.array([1]), np.array([1], np.uint64))     # not contiguous


def _parts(tmp_path: Path, sizes: list[int]) -> StagedBucket:
    rng = np.random.default_rng(5)
    paths = []
    for line, n in enumerate(sizes, start=1):
        s = _staged(n, seed=line)
        s["ts_ns"] = np.sort(rng.integers(0, 50, n))      # many ties, within and across parts
        s["line"], s["msg_seq"] = line, np.arange(n)
        paths.append(tmp_path / f"line{line:02d}.stage")
        s.tofile(paths[-1])
    return StagedBucket(paths)


def test_merge_is_the_stable_sort_of_the_parts_and_resumes(tmp_path: Path) -> None:
    bucket = _parts(tmp_path, [300, 0, 1, 250, 77])
    whole = np.concatenate(bucket.parts)
    want = whole[np.argsort(whole["ts_ns"], kind="stable")]
    for chunk in (1, 7, 1000):
        got = np.concatenate([c.copy() for c in bucket.merged(np.empty(chunk, OPRA_MSG_DTYPE))])
        assert np.array_equal(got["hdr"]["stamps"]["fh_in"], want["ts_ns"])
        assert np.array_equal(got["line"], want["line"]) and np.array_equal(got["msg_seq"], want["msg_seq"])
    assert list(StagedBucket([]).merged(np.empty(4, OPRA_MSG_DTYPE))) == []


def test_merge_refuses_a_part_out_of_time_order_and_bad_cursors(tmp_path: Path) -> None:
    bucket = _parts(tmp_path, [40, 40])
    back = bucket.parts[1].copy()
    back["ts_ns"][30] = -1
    back.tofile(bucket.paths[1])
    with pytest.raises(ValueError, match="out of time order: .*line02.stage"):
        list(StagedBucket(bucket.paths).merged(np.empty(16, OPRA_MSG_DTYPE)))
    out = np.empty(4, OPRA_MSG_DTYPE)
    ptrs = ffi.new("const omdp_fh_staged_t *[]", [ffi.cast("const omdp_fh_staged_t *", ffi.from_buffer(p))
                                                  for p in bucket.parts])
    lens = ffi.new("uint64_t[]", [40, 40])
    dst = ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out))
    assert lib.omdp_fh_stage_merge(ptrs, lens, 2, ffi.new("uint64_t[]", [41, 0]), dst, 4) == -1
    assert lib.omdp_fh_stage_merge(ffi.NULL, lens, 2, ffi.new("uint64_t[]", 2), dst, 4) == -1
    assert lib.omdp_fh_stage_merge(ptrs, lens, 2, ffi.new("uint64_t[]", 2), ffi.NULL, 4) == -1
    assert lib.omdp_fh_stage_merge(ptrs, lens, 2, ffi.new("uint64_t[]", [40, 40]), dst, 4) == 0
