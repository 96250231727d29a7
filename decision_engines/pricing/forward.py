"""Implied forward and discount factor per (underlying, expiry) from put-call parity.

For every strike with both legs quoted, C - P = D (F - K): a line in K with slope -D and
intercept D F. Each group's line is fitted by weighted least squares, weights 1 / (call
spread + put spread)^2 so the tight, near-the-money pairs lead, then refitted twice without
the pairs beyond a few scaled MADs - a parity break or a stale quote does not move it.
Groups with too few pairs, a fitted D that is not a discount factor, or one whose standard
error is too large, take D from the prior rate and fit only F.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decision_engines.pricing.grouped import group_count, group_median, group_sum

MAD_SCALE = 1.4826
MIN_RESIDUAL_CUT = 0.02
"""Pairs within this many dollars of the line are never outliers (quotes are in cents)."""
MIN_SPREAD = 0.01
MAX_DISCOUNT_SE = 0.002
"""A fitted discount factor is used only when its standard error is below this: a narrow
strike range cannot pin the slope, and the prior rate is then the better guess."""


@dataclass(frozen=True)
class ParityPairs:
    """Call/put pairs with two-sided NBBOs: call and put slots, group, strike, C - P and weight."""

    call: np.ndarray
    put: np.ndarray
    group: np.ndarray
    strike: np.ndarray
    call_minus_put: np.ndarray
    weight: np.ndarray


@dataclass(frozen=True)
class Forwards:
    """Per group: forward F, discount factor D, pairs kept in the fit (0: no forward, F NaN)."""

    forward: np.ndarray
    discount: np.ndarray
    pairs: np.ndarray
    discount_fitted: np.ndarray


def parity_pairs(strike: np.ndarray, bid: np.ndarray, offer: np.ndarray, is_call: np.ndarray,
                 twin: np.ndarray, group: np.ndarray, usable: np.ndarray) -> ParityPairs:
    """Pairs (call slot, put slot) where both legs are usable (two-sided, uncrossed)."""
    n = len(strike)
    calls = np.nonzero(is_call & usable & (twin < n))[0]
    puts = twin[calls].astype(np.int64)
    keep = usable[puts] & (group[calls] == group[puts])
    calls, puts = calls[keep], puts[keep]
    mid = 0.5 * (bid + offer)
    spread = np.maximum(offer - bid, MIN_SPREAD)
    return ParityPairs(
        call=calls,
        put=puts,
        group=group[calls].astype(np.int64),
        strike=strike[calls],
        call_minus_put=mid[calls] - mid[puts],
        weight=1.0 / (spread[calls] + spread[puts]) ** 2,
    )


def implied_forwards(pairs: ParityPairs, n_groups: int, prior_discount: np.ndarray, min_pairs: int,
                     outlier_mads: float, rounds: int = 3) -> Forwards:
    """Robust per-group fit of C - P = D F - D K; see the module docstring."""
    g, k, y = pairs.group, pairs.strike, pairs.call_minus_put
    prior = np.asarray(prior_discount, dtype=float)
    if g.size == 0:
        return Forwards(np.full(n_groups, np.nan), prior.copy(), np.zeros(n_groups, np.int64),
                        np.zeros(n_groups, dtype=bool))
    w = pairs.weight
    for r in range(rounds):
        forward, discount, fitted, kept, free_slope, free_icpt = _weighted_fit(g, k, y, w, n_groups, prior, min_pairs)
        if r == rounds - 1:
            break
        # Outliers are judged against the free line (its own slope) where three pairs or more
        # give one, so a discount factor not yet trusted does not make good pairs look bad.
        free = np.isfinite(free_slope) & (kept >= 3)
        line_slope = np.where(free, free_slope, discount)
        line_icpt = np.where(free, free_icpt, discount * forward)
        resid = y - (line_icpt[g] - line_slope[g] * k)
        inl = w > 0
        mad = group_median(np.abs(resid[inl]), g[inl], n_groups)
        cut = np.maximum(outlier_mads * MAD_SCALE * np.nan_to_num(mad, nan=np.inf), MIN_RESIDUAL_CUT)
        w = np.where(np.abs(resid) <= cut[g], pairs.weight, 0.0)
    return Forwards(forward, discount, kept, fitted)


def _weighted_fit(g: np.ndarray, k: np.ndarray, y: np.ndarray, w: np.ndarray, n_groups: int, prior: np.ndarray,
                  min_pairs: int) -> tuple[np.ndarray, ...]:
    """(forward, discount, discount fitted?, pairs kept, free slope, free intercept) per group."""
    sw = group_sum(w, g, n_groups)
    kept = group_count(g[w > 0], n_groups)
    safe = np.where(sw > 0, sw, 1.0)
    mk = group_sum(w * k, g, n_groups) / safe
    my = group_sum(w * y, g, n_groups) / safe
    dk = k - mk[g]
    skk = group_sum(w * dk * dk, g, n_groups)
    sky = group_sum(w * dk * (y - my[g]), g, n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope_d = -sky / skk
        resid = (y - my[g]) + slope_d[g] * dk
        se = np.sqrt(group_sum(w * resid * resid, g, n_groups) / np.maximum(kept - 2, 1) / skk)
    fitted = (kept >= min_pairs) & (skk > 0) & (slope_d > 0.5) & (slope_d < 1.1) & (se < MAX_DISCOUNT_SE)
    discount = np.where(fitted, slope_d, prior)
    forward = np.where(kept > 0, (my + discount * mk) / discount, np.nan)  # D F = mean(y) + D mean(K)
    return forward, discount, fitted, kept, slope_d, my + slope_d * mk
