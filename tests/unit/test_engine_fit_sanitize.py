"""Pricing's per-group fits in C (``omdp_fit_smiles``, ``omdp_fit_forwards``) against the whole-array numpy formulation they replaced, kept here as
the oracle: the same medians exactly, the same smiles and forwards to rounding, the same
points and pairs kept, on random groups with outliers, ties, NaN and degenerate groups (in
the sanitizer tier: the C reads caller-owned arrays)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decision_engines.pricing.forward import MAX_DISCOUNT_SE, MIN_RESIDUAL_CUT, ParityPairs, implied_forwards
from decision_engines.pricing.smile import fit_smiles
from omdp.native import ffi, lib


# ---- the numpy oracle (the formulation before the C fits) ----

MAD_SCALE = 1.4826   # a normal distribution's standard deviation per median absolute deviation

def _ref_group_median(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.full(n_groups, np.nan)
    if values.size == 0:
        return out
    order = np.lexsort((values, groups))
    v_sorted = values[order]
    counts = np.bincount(groups, minlength=n_groups)[:n_groups]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    have = counts > 0
    lo = starts[have] + (counts[have] - 1) // 2
    hi = starts[have] + counts[have] // 2
    out[have] = 0.5 * (v_sorted[lo] + v_sorted[hi])
    return out


def _ref_sum(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    return np.bincount(groups, weights=values, minlength=n_groups)[:n_groups]


def _ref_quadratic(k, y, g, w, n_groups, min_points):
    n = np.bincount(g[w > 0], minlength=n_groups)[:n_groups]
    powers = [np.ones_like(k), k, k * k, k * k * k, k ** 4]
    s = [_ref_sum(w * p, g, n_groups) for p in powers]
    t = [_ref_sum(w * y * p, g, n_groups) for p in powers[:3]]
    ata = np.stack([np.stack([s[i + j] for j in range(3)], axis=-1) for i in range(3)], axis=-2)
    aty = np.stack(t, axis=-1)
    coef = np.full((n_groups, 3), np.nan)
    quad = n >= max(3, min_points)
    det = np.linalg.det(ata[quad]) if quad.any() else np.zeros(0)
    scale = s[0][quad] * np.maximum(s[2][quad], 1e-300) * np.maximum(s[4][quad], 1e-300)
    solvable = np.zeros(n_groups, dtype=bool)
    solvable[np.nonzero(quad)[0]] = np.abs(det) > 1e-12 * scale
    if solvable.any():
        coef[solvable] = np.linalg.solve(ata[solvable], aty[solvable][..., None])[..., 0]
    flat = (n >= max(1, min_points)) & ~solvable
    if flat.any():
        med = _ref_group_median(y[w > 0], g[w > 0], n_groups)
        coef[flat] = np.stack([med[flat], np.zeros(flat.sum()), np.zeros(flat.sum())], axis=-1)
    return coef


def _ref_fit_smiles(k, vol, group, n_groups, min_points, outlier_mads, floor_vol, rounds=3):
    ok = np.isfinite(vol) & np.isfinite(k)
    k, vol, group = k[ok], vol[ok], group[ok].astype(np.int64)
    w = np.ones_like(vol)
    coef = np.full((n_groups, 3), np.nan)
    for r in range(rounds):
        coef = _ref_quadratic(k, vol, group, w, n_groups, min_points)
        if r == rounds - 1:
            break
        have = np.isfinite(coef[group, 0])
        resid = np.where(have, vol - (coef[group, 0] + coef[group, 1] * k + coef[group, 2] * k * k), 0.0)
        inl = w > 0
        mad = _ref_group_median(np.abs(resid[inl]), group[inl], n_groups)
        cut = np.maximum(outlier_mads * MAD_SCALE * np.nan_to_num(mad, nan=np.inf), floor_vol)
        w = (np.abs(resid) <= cut[group]).astype(float)
    kept = w > 0
    points = np.bincount(group[kept], minlength=n_groups)[:n_groups]
    k_min = np.full(n_groups, np.nan)
    k_max = np.full(n_groups, np.nan)
    if kept.any():
        for arr, fn, start in ((k_min, np.minimum, np.inf), (k_max, np.maximum, -np.inf)):
            out = np.full(n_groups, start)
            fn.at(out, group[kept], k[kept])
            arr[:] = np.where(np.isfinite(out), out, np.nan)
    no_smile = ~np.isfinite(coef[:, 0])
    coef[no_smile | (points == 0)] = np.nan
    points[no_smile] = 0
    return coef, points, k_min, k_max


def _ref_line(g, k, y, w, n_groups, prior, min_pairs):
    sw = _ref_sum(w, g, n_groups)
    kept = np.bincount(g[w > 0], minlength=n_groups)[:n_groups]
    safe = np.where(sw > 0, sw, 1.0)
    mk = _ref_sum(w * k, g, n_groups) / safe
    my = _ref_sum(w * y, g, n_groups) / safe
    dk = k - mk[g]
    skk = _ref_sum(w * dk * dk, g, n_groups)
    sky = _ref_sum(w * dk * (y - my[g]), g, n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope_d = -sky / skk
        resid = (y - my[g]) + slope_d[g] * dk
        se = np.sqrt(_ref_sum(w * resid * resid, g, n_groups) / np.maximum(kept - 2, 1) / skk)
    fitted = (kept >= min_pairs) & (skk > 0) & (slope_d > 0.5) & (slope_d < 1.1) & (se < MAX_DISCOUNT_SE)
    discount = np.where(fitted, slope_d, prior)
    forward = np.where(kept > 0, (my + discount * mk) / discount, np.nan)
    return forward, discount, fitted, kept, slope_d, my + slope_d * mk


def _ref_forwards(g, k, y, weight, n_groups, prior, min_pairs, outlier_mads, rounds=3):
    w = weight
    for r in range(rounds):
        forward, discount, fitted, kept, free_slope, free_icpt = _ref_line(g, k, y, w, n_groups, prior, min_pairs)
        if r == rounds - 1:
            break
        free = np.isfinite(free_slope) & (kept >= 3)
        line_slope = np.where(free, free_slope, discount)
        line_icpt = np.where(free, free_icpt, discount * forward)
        with np.errstate(invalid="ignore"):
            resid = y - (line_icpt[g] - line_slope[g] * k)
        inl = w > 0
        mad = _ref_group_median(np.abs(resid[inl]), g[inl], n_groups)
        cut = np.maximum(outlier_mads * MAD_SCALE * np.nan_to_num(mad, nan=np.inf), MIN_RESIDUAL_CUT)
        with np.errstate(invalid="ignore"):
            w = np.where(np.abs(resid) <= cut[g], weight, 0.0)
    return forward, discount, kept, fitted


# ---- market-like points: smiles per group, a few outliers, some degenerate groups ----

def _points(seed: int, n_groups: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    per = rng.integers(0, 30, n_groups)
    per[:3] = [0, 1, 2]                          # none, flat, flat
    g = np.repeat(np.arange(n_groups), per)
    rng.shuffle(g)
    k = rng.normal(0.0, 0.2, len(g))
    a, b, c = rng.uniform(0.2, 0.6, n_groups), rng.uniform(-0.5, 0.1, n_groups), rng.uniform(0.0, 2.0, n_groups)
    vol = a[g] + b[g] * k + c[g] * k * k + rng.normal(0, 0.002, len(g))
    out = rng.random(len(g)) < 0.05
    vol[out] += rng.uniform(0.1, 0.5, out.sum())  # mispriced quotes
    same = g == 3
    k[same] = 0.1                                 # one strike only: not solvable, flat
    vol[rng.random(len(g)) < 0.02] = np.nan       # no implied vol
    return k, vol, g


@pytest.mark.parametrize("seed", range(8))
def test_the_c_smiles_equal_the_numpy_formulation(seed: int) -> None:
    k, vol, g = _points(seed)
    sm = fit_smiles(k, vol, g, 40, 3, 4.0, 0.01)
    coef, points, k_min, k_max = _ref_fit_smiles(k, vol, g, 40, 3, 4.0, 0.01)
    assert np.array_equal(sm.points, points)
    assert np.array_equal(np.isnan(sm.coef), np.isnan(coef))
    assert np.allclose(sm.coef, coef, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert np.array_equal(sm.k_min, k_min, equal_nan=True) and np.array_equal(sm.k_max, k_max, equal_nan=True)
    assert (points[3:] > 0).sum() > 20 and points[0] == 0


@pytest.mark.parametrize("min_points,rounds", [(1, 1), (5, 2), (12, 3), (3, 0)])
def test_the_c_smiles_follow_min_points_and_rounds(min_points: int, rounds: int) -> None:
    k, vol, g = _points(100 + min_points)
    sm = fit_smiles(k, vol, g, 40, min_points, 3.0, 0.02, rounds=rounds)
    coef, points, k_min, k_max = _ref_fit_smiles(k, vol, g, 40, min_points, 3.0, 0.02, rounds=rounds)
    assert np.array_equal(sm.points, points)
    assert np.allclose(sm.coef, coef, rtol=1e-9, atol=1e-12, equal_nan=True)
    assert np.array_equal(sm.k_min, k_min, equal_nan=True)


def _c_median(v: np.ndarray, g: np.ndarray, n_groups: int) -> np.ndarray:
    """The C median per group, seen through the flat smile it sets: every point at one k
    (exact in binary, so the normal equations are exactly singular), one round."""
    return fit_smiles(np.full(len(v), 0.5), v, g, n_groups, 1, 4.0, 0.01, rounds=1).coef[:, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=32),
                                                        st.sampled_from([1.0, 2.0, 2.0]))), max_size=40))
def test_the_c_median_equals_the_lexsort_median(items: list[tuple[int, float]]) -> None:
    g = np.array([i for i, _ in items], np.int64)
    v = np.array([x for _, x in items], float)
    assert np.array_equal(_c_median(v, g, 7), _ref_group_median(v, g, 7), equal_nan=True)


def test_the_c_fits_refuse_group_ids_out_of_range() -> None:
    v = np.ones(3)
    g = np.array([0, 1, 2], np.int64)
    f64, i64 = (lambda a: ffi.cast("double *", ffi.from_buffer(a))), (lambda a: ffi.cast("int64_t *", ffi.from_buffer(a)))
    coef, points, lo, hi = np.empty(9), np.empty(3, np.int64), np.empty(3), np.empty(3)
    assert lib.omdp_fit_smiles(f64(v), f64(v), i64(g), 3, 2, 1, 4.0, 0.01, 3, f64(coef), i64(points), f64(lo),
                               f64(hi)) == -1
    g[2] = -1
    assert lib.omdp_fit_smiles(f64(v), f64(v), i64(g), 3, 3, 1, 4.0, 0.01, 3, f64(coef), i64(points), f64(lo),
                               f64(hi)) == -1
    with pytest.raises(ValueError, match="group"):
        implied_forwards(ParityPairs(g, g, np.array([0, 1, 5]), v, v, v), 2, np.ones(2), 3, 4.0)
    with pytest.raises(ValueError, match="group"):
        fit_smiles(v, v, np.array([0, 1, 5]), 2, 3, 4.0, 0.01)


def _pairs(seed: int, n_groups: int = 30) -> tuple[ParityPairs, np.ndarray]:
    """Parity pairs of groups with known F and D, spread-weighted, a few broken pairs; groups
    with 0, 1, 2 pairs and one whose strikes are all equal."""
    rng = np.random.default_rng(seed)
    per = rng.integers(0, 25, n_groups)
    per[:4] = [0, 1, 2, 6]
    g = np.repeat(np.arange(n_groups), per)
    rng.shuffle(g)
    F, D = rng.uniform(20, 300, n_groups), rng.uniform(0.9, 0.999, n_groups)
    K = F[g] * rng.uniform(0.7, 1.3, len(g))
    K[g == 3] = F[3]
    spread = rng.uniform(0.02, 0.6, len(g))
    y = D[g] * (F[g] - K) + rng.normal(0, 0.2, len(g)) * spread
    broken = rng.random(len(g)) < 0.06
    y[broken] += rng.choice([-1, 1], broken.sum()) * rng.uniform(1, 5, broken.sum())
    pairs = ParityPairs(np.arange(len(g)), np.arange(len(g)), g.astype(np.int64), K, y, 1.0 / spread ** 2)
    return pairs, rng.uniform(0.95, 0.99, n_groups)


@pytest.mark.parametrize("seed,min_pairs", [(s, m) for s in range(6) for m in (3, 8)])
def test_the_c_forwards_equal_the_numpy_formulation(seed: int, min_pairs: int) -> None:
    pairs, prior = _pairs(seed)
    got = implied_forwards(pairs, 30, prior, min_pairs, 4.0)
    forward, discount, kept, fitted = _ref_forwards(pairs.group, pairs.strike, pairs.call_minus_put, pairs.weight,
                                                    30, prior, min_pairs, 4.0)
    assert np.array_equal(got.pairs, kept) and np.array_equal(got.discount_fitted, fitted)
    assert np.allclose(got.forward, forward, rtol=1e-12, equal_nan=True)
    assert np.allclose(got.discount, discount, rtol=1e-12)
    assert got.discount_fitted.sum() > 5 and kept[0] == 0 and np.isnan(got.forward[0])


def test_the_c_forwards_with_no_pairs_take_the_prior() -> None:
    none = ParityPairs(*(np.zeros(0, t) for t in (np.int64, np.int64, np.int64, float, float, float)))
    got = implied_forwards(none, 3, np.array([0.99, 0.98, 0.97]), 3, 4.0)
    assert np.isnan(got.forward).all() and np.array_equal(got.discount, [0.99, 0.98, 0.97])
    assert not got.pairs.any() and not got.discount_fitted.any()
