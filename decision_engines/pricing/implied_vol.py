"""Implied volatility of Black-76 prices: vectorized, accurate to about 1e-12 in volatility.

The price is first reduced to the time value of the out-of-the-money option in normalized
coordinates (Jaeckel's): x = -|ln(F/K)|, beta = (undiscounted price - intrinsic) / sqrt(FK),
solve c(s) = beta for s = sigma sqrt(T), where c(s) = e^{x/2} N(x/s + s/2) - e^{-x/2} N(x/s - s/2)
is the normalized out-of-the-money call. ln c(s) is increasing and concave in s, so Newton's
method on ln c(s) - ln(beta), kept inside a bracket that every step narrows (bisecting when a
step would leave it), cannot diverge. Below the inflection point s_c = sqrt(2|x|), where
ln c(s) falls like -x^2 / (2 s^2), Newton on it creeps (a root there took 20 rounds and
more); there the objective is 1/ln(beta) - 1/ln c(s), nearly quadratic in s, in the
bracket (0, s_c): half the rounds in all on the replay's refreshes (docs/benchmarks.md).
Everything is computed in logs (scipy's log_ndtr), so deep out-of-the-money prices keep
their precision.

A price with no solution (below intrinsic, at or above the no-arbitrage bound, not finite,
non-positive T) gives NaN.
"""
from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr

_LOG_INV_SQRT_2PI = -0.5 * np.log(2.0 * np.pi)
MAX_ITERATIONS = 100
S_MAX = 1e3
"""Upper limit of sigma*sqrt(T) searched (a volatility of 1000 over one year)."""


def _log_c(x: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ln c(s) and d ln c / ds for x <= 0, s > 0."""
    d1 = x / s + 0.5 * s
    d2 = d1 - s
    l1 = log_ndtr(d1)
    l2 = log_ndtr(d2)
    # c = e^{x/2} N(d1) (1 - e^{-x} N(d2)/N(d1)); the ratio term is < 1 for s > 0.
    ratio = np.exp(np.minimum(-x + l2 - l1, 0.0))
    log_c = 0.5 * x + l1 + np.log1p(-ratio)
    log_dc = 0.5 * x + _LOG_INV_SQRT_2PI - 0.5 * d1 * d1
    return log_c, np.exp(log_dc - log_c)


def implied_vol(price: np.ndarray, F: np.ndarray, K: np.ndarray, T: np.ndarray, D: np.ndarray,
                is_call: np.ndarray, tol: float = 1e-14) -> np.ndarray:
    """Black-76 implied volatility of discounted option prices, NaN where none exists."""
    price, F, K, T, D, is_call = (np.asarray(a, dtype=float) if i < 5 else np.asarray(a, dtype=bool)
                                  for i, a in enumerate(np.broadcast_arrays(price, F, K, T, D, is_call)))
    out = np.full(price.shape, np.nan)
    with np.errstate(all="ignore"):
        undiscounted = price / D
        theta = np.where(is_call, 1.0, -1.0)
        intrinsic = np.maximum(theta * (F - K), 0.0)
        time_value = undiscounted - intrinsic
        x = -np.abs(np.log(F / K))
        beta = time_value / np.sqrt(F * K)
        upper = np.exp(0.5 * x)  # c(s) -> e^{x/2} as s -> infinity
        ok = (np.isfinite(beta) & (beta > 0) & (beta < upper) & (T > 0) & (F > 0) & (K > 0) & (D > 0))
        if not ok.any():
            return out
        xs, log_beta = x[ok], np.log(beta[ok])
        s_c = np.sqrt(2.0 * np.abs(xs))  # the inflection point of c(s)
        s = np.where(s_c > 0, s_c, 2.5066282746310002 * beta[ok] / upper[ok])  # ATM: c ~ s / sqrt(2 pi)
        idx = np.arange(xs.size)
        si = s[idx]
        lc, dlc = _log_c(xs, si)  # the first round's; at s_c it also tells which side the root is on
        low = (s_c > 0) & (log_beta < lc)  # the root lies below the inflection point
        lo = np.where(low | (s_c == 0), 0.0, s_c)
        hi = np.where(low, s_c, S_MAX)
        for _ in range(MAX_ITERATIONS):
            lw, lb = low[idx], log_beta[idx]
            # both objectives increase with s: ln c - ln beta; 1/ln beta - 1/ln c (ln c < 0 there)
            g = np.where(lw, 1.0 / lb - 1.0 / lc, lc - lb)
            dg = np.where(lw, dlc / (lc * lc), dlc)
            below = g < 0
            lo[idx] = np.where(below, si, lo[idx])
            hi[idx] = np.where(below, hi[idx], si)
            step = g / dg
            nxt = si - step
            outside = ~np.isfinite(nxt) | (nxt <= lo[idx]) | (nxt >= hi[idx])
            nxt = np.where(outside, 0.5 * (lo[idx] + hi[idx]), nxt)
            nxt = np.where(g == 0, si, nxt)
            done = np.abs(nxt - si) <= tol * np.maximum(si, 1e-3)
            s[idx] = nxt
            idx = idx[~done]
            if idx.size == 0:
                break
            si = s[idx]
            lc, dlc = _log_c(xs[idx], si)
        out[ok] = s / np.sqrt(T[ok])
    return out
