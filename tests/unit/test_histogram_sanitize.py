"""The C latency histogram: bucket geometry, quantiles within the stated relative error of
exact order statistics (numpy), merging, clamping, and bad input. Runs under ASan/UBSan in CI."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omdp.metrics.histogram import (
    BUCKET_LOWER_NS,
    BUCKET_UPPER_NS,
    BUCKETS,
    MAX_VALUE_NS,
    RELATIVE_ERROR,
    LatencyHistogram,
)
from omdp.native import ffi, lib

QS = [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0]


def nearest_rank(sorted_values: np.ndarray, q: float) -> int:
    """The ceil(q * n)-th smallest value (q = 0: the minimum), as the C code defines it."""
    n = len(sorted_values)
    r = max(1, min(n, math.ceil(q * n)))
    return int(sorted_values[r - 1])


def assert_within_error(h: LatencyHistogram, values: np.ndarray) -> None:
    s = np.sort(values.clip(0, MAX_VALUE_NS))
    for q in QS:
        exact = nearest_rank(s, q)
        got = h.quantile_ns(q)
        assert got is not None
        assert abs(got - exact) <= exact * RELATIVE_ERROR, (q, got, exact)


def test_bucket_geometry_is_contiguous_and_fine() -> None:
    assert BUCKET_LOWER_NS[0] == 0
    assert BUCKET_UPPER_NS[-1] == MAX_VALUE_NS
    assert np.all(BUCKET_LOWER_NS[1:] == BUCKET_UPPER_NS[:-1] + 1)
    width = BUCKET_UPPER_NS - BUCKET_LOWER_NS + 1
    exact = BUCKET_LOWER_NS < 256
    assert np.all(width[exact] == 1)
    assert np.all(width[~exact] * 128 <= BUCKET_LOWER_NS[~exact])
    for i in (0, 127, 128, 255, 256, 1000, BUCKETS - 1):
        assert lib.omdp_hist_index(int(BUCKET_LOWER_NS[i])) == i
        assert lib.omdp_hist_index(int(BUCKET_UPPER_NS[i])) == i
    assert lib.omdp_hist_bucket_lower(BUCKETS) == -1 and lib.omdp_hist_bucket_upper(BUCKETS) == -1


@pytest.mark.parametrize(
    "name,make",
    [
        ("lognormal us", lambda r: r.lognormal(np.log(5_000), 0.8, 200_000)),
        ("exponential", lambda r: r.exponential(20_000, 200_000)),
        ("uniform ns..s", lambda r: r.uniform(0, 5e9, 200_000)),
        ("small exact", lambda r: r.integers(0, 300, 200_000)),
        ("bimodal with a heavy tail", lambda r: np.concatenate(
            [r.normal(2_000, 100, 150_000).clip(1), r.pareto(1.5, 50_000) * 10_000 + 50_000])),
        ("log-uniform 1 ns..60 s", lambda r: np.exp(r.uniform(0, np.log(6e10), 200_000))),
    ],
)
def test_quantiles_match_numpy_within_relative_error(name: str, make) -> None:
    values = make(np.random.default_rng(zlib.crc32(name.encode()))).astype(np.int64)
    h = LatencyHistogram.of(values)
    assert h.count == len(values)
    assert h.sum_ns == int(values.clip(0, MAX_VALUE_NS).sum())
    assert h.mean_ns() == pytest.approx(values.clip(0, MAX_VALUE_NS).mean(), rel=1e-12)
    assert h.min_ns == values.min() and h.max_ns == values.max()
    assert_within_error(h, values)
    # numpy's nearest-rank definition agrees with ours.
    for q in (0.5, 0.99):
        exact = int(np.quantile(values, q, method="inverted_cdf"))
        assert abs(h.quantile_ns(q) - exact) <= exact * RELATIVE_ERROR


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(min_value=0, max_value=MAX_VALUE_NS), min_size=1, max_size=400),
    q=st.floats(min_value=0.0, max_value=1.0),
)
def test_any_quantile_is_within_error_of_its_order_statistic(values: list[int], q: float) -> None:
    arr = np.array(values, dtype=np.int64)
    h = LatencyHistogram.of(arr)
    exact = nearest_rank(np.sort(arr), q)
    assert abs(h.quantile_ns(q) - exact) <= exact * RELATIVE_ERROR


def test_merge_equals_recording_everything_in_one() -> None:
    r = np.random.default_rng(3)
    a, b = r.lognormal(8, 1, 50_000).astype(np.int64), r.lognormal(10, 0.5, 30_000).astype(np.int64)
    ha, hb, hab = LatencyHistogram.of(a), LatencyHistogram.of(b), LatencyHistogram.of(np.concatenate([a, b]))
    ha.merge(hb)
    assert np.array_equal(ha.bucket_counts(), hab.bucket_counts())
    assert (ha.count, ha.sum_ns, ha.min_ns, ha.max_ns) == (hab.count, hab.sum_ns, hab.min_ns, hab.max_ns)
    assert ha.quantiles_ns(QS) == hab.quantiles_ns(QS)
    empty = LatencyHistogram()
    empty.merge(LatencyHistogram())
    assert empty.count == 0 and empty.quantile_ns(0.5) is None
    empty.merge(hb)
    assert empty.quantiles_ns(QS) == hb.quantiles_ns(QS)


def test_out_of_range_values_are_clamped_and_counted() -> None:
    h = LatencyHistogram.of([-5, -1, 10, MAX_VALUE_NS + 1, 2**62])
    assert h.count == 5
    assert h.below_zero == 2 and h.above_max == 2
    assert h.min_ns == 0 and h.max_ns == MAX_VALUE_NS
    assert h.quantile_ns(0.0) == 0 and h.quantile_ns(1.0) == MAX_VALUE_NS
    assert lib.omdp_hist_check(h.c_pointer) == 0


def test_bad_arguments_are_refused() -> None:
    h = LatencyHistogram.of([1, 2, 3])
    for q in (-0.1, 1.5, float("nan")):
        assert lib.omdp_hist_quantile(h.c_pointer, q) == -1
    with pytest.raises(ValueError):
        h.quantile_ns(1.01)
    assert lib.omdp_hist_merge(ffi.NULL, h.c_pointer) == lib.OMDP_METRICS_EINVAL
    assert lib.omdp_hist_record_array(h.c_pointer, ffi.NULL, 3) == lib.OMDP_METRICS_EINVAL
    assert lib.omdp_hist_quantile(ffi.NULL, 0.5) == -1


def test_inconsistent_histograms_are_refused() -> None:
    h = LatencyHistogram.of([100, 200])
    bad = ffi.new("omdp_hist_t *")
    ffi.memmove(bad, h.c_pointer, ffi.sizeof("omdp_hist_t"))
    bad.count = 3  # bucket counts sum to 2
    assert lib.omdp_hist_check(bad) == lib.OMDP_METRICS_EINVAL
    assert lib.omdp_hist_merge(h.c_pointer, bad) == lib.OMDP_METRICS_EINVAL
    with pytest.raises(ValueError, match="self-consistent"):
        LatencyHistogram(bad)
    assert h.count == 2


def test_prometheus_style_cumulative_counts() -> None:
    h = LatencyHistogram.of([50, 150, 996, 10_000, 100_000])
    assert h.cumulative_counts_le([100, 1_000, 1_000_000, 0]).tolist() == [1, 3, 5, 0]
    # 1,000 ns sits in bucket 1000..1003: it counts at the next bound, never early.
    straddle = LatencyHistogram.of([1_000])
    assert straddle.cumulative_counts_le([1_000, 1_003, 2_000]).tolist() == [0, 1, 1]
