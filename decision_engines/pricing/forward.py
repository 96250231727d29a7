"""Implied forward and discount factor per (underlying, expiry) from put-call parity.

For every strike with both legs quoted, C - P = D (F - K): a line in K with slope -D and
intercept D F. Each group's line is fitted by weighted least squares, weights 1 / (call
spread + put spread)^2 so the tight, near-the-money pairs lead, then refitted twice without
the pairs beyond a few scaled MADs - a parity break or a stale quote does not move it (in C:
native engine_fit.h).
Groups with too few pairs, a fitted D that is not a discount factor, or one whose standard
error is too large, take D from the prior rate and fit only F.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from decision_engines.pricing import fits_native

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
    """Robust per-group fit of C - P = D F - D K (see the module docstring), in one C call
    (``fits_native.forwards``)."""
    return Forwards(*fits_native.forwards(pairs.strike, pairs.call_minus_put, pairs.weight, pairs.group, n_groups,
                                          prior_discount, min_pairs, outlier_mads, MIN_RESIDUAL_CUT,
                                          MAX_DISCOUNT_SE, rounds))
