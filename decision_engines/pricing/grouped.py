"""Per-group reductions over flat arrays (group ids 0..n_groups-1), vectorized: what lets the
pricing fit thousands of (underlying, expiry) groups with a handful of numpy calls."""
from __future__ import annotations

import numpy as np


def group_sum(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum of values per group (0 for an empty group)."""
    return np.bincount(groups, weights=values, minlength=n_groups)[:n_groups]


def group_count(groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Members per group."""
    return np.bincount(groups, minlength=n_groups)[:n_groups]


def group_median(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Median of values per group (NaN for an empty group)."""
    out = np.full(n_groups, np.nan)
    if values.size == 0:
        return out
    order = np.lexsort((values, groups))
    g_sorted = groups[order]
    v_sorted = values[order]
    counts = group_count(groups, n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    have = counts > 0
    lo = starts[have] + (counts[have] - 1) // 2
    hi = starts[have] + counts[have] // 2
    out[have] = 0.5 * (v_sorted[lo] + v_sorted[hi])
    assert np.array_equal(g_sorted[lo], np.nonzero(have)[0])
    return out
