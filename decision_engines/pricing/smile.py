"""A volatility smile per (underlying, expiry): sigma(k) = a + b k + c k^2 in log-moneyness
k = ln(K / F), fitted to the implied volatilities of out-of-the-money NBBO mids.

Fitted for every group at once (per-group normal equations and a 3x3 solve each, in C:
native engine_fit.h), then refitted without points beyond a few scaled MADs, so a mispriced quote - the
thing the bands are there to catch - does not bend its own band. Groups with fewer than
``min_points`` points get no smile; groups whose points cannot pin a quadratic (fewer than
three, or strikes too close) get a flat one at their median volatility. The fit is only trusted
between the group's smallest and largest fitted k: beyond, k is clamped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decision_engines.pricing import fits_native

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
    """Robust quadratic smile per group from points (k, vol) with finite vol: ``rounds`` fits,
    each after the last one's outliers were dropped, in one C call (``fits_native.smiles``)."""
    return Smiles(*fits_native.smiles(k, vol, group, n_groups, min_points, outlier_mads, floor_vol, rounds))
