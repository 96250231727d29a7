"""Pricing's per-group fits in C (native engine_fit.h): the forward and smile fits, each with
its outlier rounds (residuals cut at a few scaled median absolute deviations per group).

As whole-array numpy (per-group sums by bincount, a batched 3x3 solve, medians by a lexsort
of every value) a refresh's smile and forward fits were about 2.9 ms over a few thousand
points, nearly a third of a replay refresh: a hundred-odd array passes, each allocating.
Each fit here is a few passes over the points and one over the groups (docs/benchmarks.md).
The numpy formulation stays as the tests' oracle (tests/unit/test_engine_fit_sanitize.py)."""
from __future__ import annotations

import numpy as np

from omdp.native import ffi, lib


def _f64(a: np.ndarray):
    return ffi.cast("double *", ffi.from_buffer(a))


def _i64(a: np.ndarray):
    return ffi.cast("int64_t *", ffi.from_buffer(a))


def _check(rc: int, name: str) -> None:
    if rc == -1:
        raise ValueError(f"{name}: a group id is negative or not below the group count")
    if rc == -2:
        raise MemoryError(f"{name}: no memory for its scratch arrays")


def smiles(k: np.ndarray, vol: np.ndarray, group: np.ndarray, n_groups: int, min_points: int,
           outlier_mads: float, floor_vol: float, rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(coef (n_groups, 3), points kept, k_min, k_max) of the robust quadratic smile per group
    (``smile.fit_smiles`` says how)."""
    k = np.ascontiguousarray(k, dtype=np.float64)
    vol = np.ascontiguousarray(vol, dtype=np.float64)
    group = np.ascontiguousarray(group, dtype=np.int64)
    if not len(k) == len(vol) == len(group):
        raise ValueError(f"fit_smiles: {len(k)} k, {len(vol)} vols and {len(group)} group ids")
    coef = np.empty((n_groups, 3))
    points = np.empty(n_groups, np.int64)
    k_min, k_max = np.empty(n_groups), np.empty(n_groups)
    _check(lib.omdp_fit_smiles(_f64(k), _f64(vol), _i64(group), len(k), n_groups, min_points, outlier_mads,
                               floor_vol, rounds, _f64(coef), _i64(points), _f64(k_min), _f64(k_max)),
           "omdp_fit_smiles")
    return coef, points, k_min, k_max


def forwards(strike: np.ndarray, call_minus_put: np.ndarray, weight: np.ndarray, group: np.ndarray, n_groups: int,
             prior_discount: np.ndarray, min_pairs: int, outlier_mads: float, min_cut: float, max_se: float,
             rounds: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(forward, discount, pairs kept, discount fitted?) per group from call/put pairs
    (``forward.implied_forwards`` says how)."""
    strike = np.ascontiguousarray(strike, dtype=np.float64)
    y = np.ascontiguousarray(call_minus_put, dtype=np.float64)
    weight = np.ascontiguousarray(weight, dtype=np.float64)
    group = np.ascontiguousarray(group, dtype=np.int64)
    prior = np.ascontiguousarray(np.broadcast_to(np.asarray(prior_discount, dtype=np.float64), (n_groups,)))
    if not len(strike) == len(y) == len(weight) == len(group):
        raise ValueError(f"implied_forwards: {len(strike)} strikes, {len(y)} C - P, {len(weight)} weights and "
                         f"{len(group)} group ids")
    if rounds < 1:
        raise ValueError(f"implied_forwards: rounds must be at least 1, not {rounds}")
    forward, discount = np.empty(n_groups), np.empty(n_groups)
    kept, fitted = np.empty(n_groups, np.int64), np.empty(n_groups, np.uint8)
    _check(lib.omdp_fit_forwards(_f64(strike), _f64(y), _f64(weight), _i64(group), len(strike), n_groups,
                                 _f64(prior), min_pairs, outlier_mads, min_cut, max_se, rounds, _f64(forward),
                                 _f64(discount), _i64(kept), ffi.cast("uint8_t *", ffi.from_buffer(fitted))),
           "omdp_fit_forwards")
    return forward, discount, kept, fitted.view(bool)
