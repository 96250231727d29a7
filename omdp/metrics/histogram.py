"""``LatencyHistogram``: the C log-linear latency histogram (``omdp/histogram.h``) from Python.

A view over the C struct, not a second implementation: recording, merging and quantiles
run in C. Values are int64 nanoseconds; quantiles are within 1/256 of the nearest-rank
order statistic (``RELATIVE_ERROR``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from omdp.native import ffi, lib

RELATIVE_ERROR = 1.0 / 256
"""Bound on |reported quantile - nearest-rank order statistic| / that statistic."""

MAX_VALUE_NS = int(lib.OMDP_HIST_MAX_VALUE)
"""Largest value a bucket resolves (2^36 - 1 ns, 68.7 s); larger ones are clamped and counted."""

BUCKETS = int(lib.OMDP_HIST_BUCKETS)


def _bucket_bounds() -> tuple[np.ndarray, np.ndarray]:
    lower = np.array([lib.omdp_hist_bucket_lower(i) for i in range(BUCKETS)], dtype=np.int64)
    upper = np.array([lib.omdp_hist_bucket_upper(i) for i in range(BUCKETS)], dtype=np.int64)
    return lower, upper


BUCKET_LOWER_NS, BUCKET_UPPER_NS = _bucket_bounds()
"""Inclusive bounds of every bucket, in ns (the same for every histogram)."""


class LatencyHistogram:
    """One histogram of nanosecond latencies, backed by a C ``omdp_hist_t``."""

    __slots__ = ("_h",)

    def __init__(self, c_hist: object | None = None) -> None:
        """An empty histogram, or a copy of the C ``omdp_hist_t *`` given."""
        self._h = ffi.new("omdp_hist_t *")
        if c_hist is None:
            lib.omdp_hist_init(self._h)
        else:
            ffi.memmove(self._h, c_hist, ffi.sizeof("omdp_hist_t"))
            if lib.omdp_hist_check(self._h) != 0:
                raise ValueError("histogram copy is not self-consistent (bucket counts do not sum to count)")

    @property
    def c_pointer(self) -> object:
        """The ``omdp_hist_t *`` for C calls (owned by this object)."""
        return self._h

    @classmethod
    def of(cls, values: Iterable[int] | np.ndarray) -> LatencyHistogram:
        """A histogram holding the given nanosecond values."""
        h = cls()
        h.record(values)
        return h

    def record(self, values: Iterable[int] | np.ndarray) -> None:
        """Record nanosecond values (one C call for the whole array)."""
        arr = np.ascontiguousarray(np.asarray(values, dtype=np.int64))
        if arr.ndim != 1:
            arr = arr.reshape(-1)
        if arr.size:
            lib.omdp_hist_record_array(self._h, ffi.from_buffer("int64_t[]", arr), arr.size)

    def merge(self, other: LatencyHistogram) -> None:
        """Add every count of ``other`` into this histogram."""
        if lib.omdp_hist_merge(self._h, other._h) != 0:
            raise ValueError("cannot merge an inconsistent histogram")

    @property
    def count(self) -> int:
        """Values recorded."""
        return int(self._h.count)

    @property
    def sum_ns(self) -> int:
        """Sum of the recorded (clamped) values."""
        return int(self._h.sum)

    @property
    def min_ns(self) -> int | None:
        """Smallest value, None when empty."""
        return int(self._h.min) if self._h.count else None

    @property
    def max_ns(self) -> int | None:
        """Largest value, None when empty."""
        return int(self._h.max) if self._h.count else None

    @property
    def below_zero(self) -> int:
        """Negative values recorded as 0 (clock skew)."""
        return int(self._h.below_zero)

    @property
    def above_max(self) -> int:
        """Values above ``MAX_VALUE_NS`` recorded as that."""
        return int(self._h.above_max)

    def mean_ns(self) -> float | None:
        """Mean in ns, None when empty."""
        return float(lib.omdp_hist_mean(self._h)) if self._h.count else None

    def quantile_ns(self, q: float) -> int | None:
        """Nearest-rank quantile q in [0, 1] in ns; None when empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be in [0, 1], got {q}")
        v = int(lib.omdp_hist_quantile(self._h, q))
        return None if v < 0 else v

    def quantiles_ns(self, qs: Sequence[float]) -> list[int | None]:
        """Several quantiles in one C call."""
        for q in qs:
            if not 0.0 <= q <= 1.0:
                raise ValueError(f"quantile must be in [0, 1], got {q}")
        qa = np.ascontiguousarray(qs, dtype=np.float64)
        out = np.empty(len(qa), dtype=np.int64)
        lib.omdp_hist_quantiles(self._h, ffi.from_buffer("double[]", qa), len(qa), ffi.from_buffer("int64_t[]", out))
        return [None if v < 0 else int(v) for v in out]

    def bucket_counts(self) -> np.ndarray:
        """A copy of the bucket counts (index i covers ``BUCKET_LOWER_NS[i]..BUCKET_UPPER_NS[i]``)."""
        return np.frombuffer(ffi.buffer(self._h.buckets), dtype=np.uint64).copy()

    def cumulative_counts_le(self, bounds_ns: Sequence[int] | np.ndarray) -> np.ndarray:
        """For each bound, how many values lie in buckets entirely <= bound (Prometheus ``le``).

        A bucket straddling a bound is counted at the next bound, so counts never overstate.
        """
        bounds = np.asarray(bounds_ns, dtype=np.int64)
        cum = np.cumsum(self.bucket_counts(), dtype=np.uint64)
        idx = np.searchsorted(BUCKET_UPPER_NS, bounds, side="right") - 1
        return np.where(idx >= 0, cum[np.clip(idx, 0, BUCKETS - 1)], 0).astype(np.uint64)
