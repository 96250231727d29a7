"""The engine task's scans of staged records (feed_handler_stage_scan.c): the quote hits and
the per-underlying counts agree with the numpy definitions they replace (quote_hash, unique
plus bincount), an id too large for the dense table takes the sort, and a bad argument is
refused, not read past. Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pytest

from feedhandlers.opra_record import NO_UNDERLYING
from omdp.native import ffi, lib
from ops.spark.replay_score import quote_hash
from ops.spark.replay_stage import DENSE_IDS, STAGE_DTYPE, quote_hits, underlying_counts


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
    c = underlying_counts(s)
    ids, inv = np.unique(s["underlying_id"], return_inverse=True)
    assert np.array_equal(c.ids, ids) and c.ids[-1] == NO_UNDERLYING
    assert np.array_equal(c.messages, np.bincount(inv))
    assert np.array_equal(c.quotes, np.bincount(inv, weights=s["category"] == ord("k")).astype(np.int64))
    assert np.array_equal(c.first_ns, [s["ts_ns"][inv == i].min() for i in range(len(ids))])
    assert np.array_equal(c.last_ns, [s["ts_ns"][inv == i].max() for i in range(len(ids))])
    sparse = s.copy()
    sparse["underlying_id"][sparse["underlying_id"] == 40] = DENSE_IDS + 9
    cs = underlying_counts(sparse)
    assert list(cs.ids) == [0, 3, 7, DENSE_IDS + 9, NO_UNDERLYING] and np.array_equal(cs.messages, c.messages)
    empty = underlying_counts(s[:0])
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
