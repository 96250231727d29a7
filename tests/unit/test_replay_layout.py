"""The replay's constants of native/include/omdp/replay.h against Python's, and the C helpers
(histogram buckets, drop hash) against their documented formulas."""
from __future__ import annotations

import numpy as np
from replay_support import drop_hash

from omdp.native import ffi, lib
from ops.replay import native_layout as L
from ops.replay.config import MAX_LINE


def test_constants_agree() -> None:
    assert lib.OMDP_REPLAY_HIST_BUCKETS == L.HIST_BUCKETS
    assert lib.OMDP_REPLAY_HIST_SUB_BITS == L.HIST_SUB_BITS
    assert lib.OMDP_REPLAY_COPIES == L.COPIES
    assert lib.OMDP_REPLAY_PKT_CONTROL == L.PKT_CONTROL
    assert lib.OMDP_REPLAY_SENDER_FAILED == L.SENDER_FAILED
    assert lib.OMDP_REPLAY_MAX_LINE == MAX_LINE
    assert ffi.sizeof("omdp_replay_sender_status_t") % 128 == 0


def test_histogram_buckets_hold_their_values() -> None:
    lower, upper = L.hist_bucket_bounds()
    assert lower[0] == 0 and np.all(upper[:-1] == lower[1:])
    rng = np.random.default_rng(1)
    values = np.concatenate([np.arange(0, 5000), rng.integers(0, 1 << 41, 20000), [1 << 40, (1 << 41) - 1]])
    for v in values.tolist():
        k = lib.omdp_replay_hist_index(v)
        assert lower[k] <= v < upper[k], v
        assert (upper[k] - lower[k]) <= max(1, lower[k] / 31), v
    assert lib.omdp_replay_hist_index(-5) == 0
    assert lib.omdp_replay_hist_index(1 << 62) == L.HIST_BUCKETS - 1


def test_drop_hash_matches_its_definition() -> None:
    idx = np.arange(0, 3000, dtype=np.uint64)
    for seed, line, copy, lap in [(0, 1, 0, 0), (7, 24, 1, 3), ((1 << 64) - 1, 64, 1, 1 << 40)]:
        expect = drop_hash(seed, line, copy, lap, idx)
        got = np.array([lib.omdp_replay_drop_hash(seed, line, copy, lap, int(i)) for i in idx], dtype=np.uint64)
        assert np.array_equal(got, expect)
    # a fair coin: p = 0.5 drops about half
    frac = (drop_hash(3, 5, 0, 0, np.arange(100_000, dtype=np.uint64)) < np.uint64(1 << 63)).mean()
    assert 0.49 < frac < 0.51
