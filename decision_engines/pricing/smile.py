"""A volatility smile per (underlying, expiry): sigma(k) = a + b k + c k^2 in log-moneyness
k = ln(K / F), fitted to the implied volatilities of out-of-the-money NBBO mids.

Fitted for every group at once (per-group normal equations from bincount, one batched 3x3
solve), then refitted without points beyond a few scaled MADs, so a mispriced quote - the
thing the bands are there to catch - does not bend its own band. Groups with fewer than
``min_points`` points get no smile; groups whose points cannot pin a quadratic (fewer than
three, or strikes too close) get a flat one at their median volatility. The fit is only trusted
between the group's smallest and largest fitted k: beyond, k is clamped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decision_engines.pricing.grouped import group_count, group_median, group_sum

MAD_SCALE = 1.4826
MIN_VOL = 0.01
MAX_VOL = 5.0


@dataclass(frozen=True)
class Smiles:
    """Per group: coefficients (a, b, c), points kept, and the k range they cover."""

    coef: np.ndarray      # (n_groups, 3); NaN rows where there is no smile
    points: np.ndarray    # int, 0 where there is no smile
    k_min: np.ndarray
    k_max: np.ndarray

    def vol(self, group: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Smile volatility at log-moneyness k for members of ``group`` (NaN without a smile)."""
        kk = np.clip(k, self.k_min[group], self.k_max[group])
        a, b, c = self.coef[group, 0], self.coef[group, 1], self.coef[group, 2]
        return np.clip(a + b * kk + c * kk * kk, MIN_VOL, MAX_VOL)


def fit_smiles(k: np.ndarray, vol: np.ndarray, group: np.ndarray, n_groups: int, min_points: int,
               outlier_mads: float, floor_vol: float, rounds: int = 3) -> Smiles:
    """Robust quadratic smile per group from points (k, vol) with finite vol."""
    ok = np.isfinite(vol) & np.isfinite(k)
    k, vol, group = k[ok], vol[ok], group[ok].astype(np.int64)
    w = np.ones_like(vol)
    coef = np.full((n_groups, 3), np.nan)
    for r in range(rounds):
        coef = _weighted_quadratic(k, vol, group, w, n_groups, min_points)
        if r == rounds - 1:
            break
        have = np.isfinite(coef[group, 0])
        resid = np.where(have, vol - (coef[group, 0] + coef[group, 1] * k + coef[group, 2] * k * k), 0.0)
        inl = w > 0
        mad = group_median(np.abs(resid[inl]), group[inl], n_groups)
        cut = np.maximum(outlier_mads * MAD_SCALE * np.nan_to_num(mad, nan=np.inf), floor_vol)
        w = (np.abs(resid) <= cut[group]).astype(float)
    kept = w > 0
    points = group_count(group[kept], n_groups)
    k_min = np.full(n_groups, np.nan)
    k_max = np.full(n_groups, np.nan)
    if kept.any():
        k_min = _group_extreme(k[kept], group[kept], n_groups, np.minimum, np.inf)
        k_max = _group_extreme(k[kept], group[kept], n_groups, np.maximum, -np.inf)
    no_smile = ~np.isfinite(coef[:, 0])
    coef[no_smile | (points == 0)] = np.nan
    points[no_smile] = 0
    return Smiles(coef, points, k_min, k_max)


def _group_extreme(values: np.ndarray, groups: np.ndarray, n_groups: int, ufunc: np.ufunc,
                   start: float) -> np.ndarray:
    out = np.full(n_groups, start)
    ufunc.at(out, groups, values)
    return np.where(np.isfinite(out), out, np.nan)


def _weighted_quadratic(k: np.ndarray, y: np.ndarray, g: np.ndarray, w: np.ndarray, n_groups: int,
                        min_points: int) -> np.ndarray:
    n = group_count(g[w > 0], n_groups)
    powers = [np.ones_like(k), k, k * k, k * k * k, k ** 4]
    s = [group_sum(w * p, g, n_groups) for p in powers]
    t = [group_sum(w * y * p, g, n_groups) for p in powers[:3]]
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
        med = group_median(y[w > 0], g[w > 0], n_groups)
        coef[flat] = np.stack([med[flat], np.zeros(flat.sum()), np.zeros(flat.sum())], axis=-1)
    return coef
