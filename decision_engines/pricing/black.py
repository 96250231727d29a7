"""Black-76 on forwards, vectorized: the model that turns a smile into prices.

An option on an underlying with forward F to expiry T, discount factor D = exp(-rT):
call = D [F N(d1) - K N(d2)], put = D [K N(-d2) - F N(-d1)], d1,2 = ln(F/K)/(s) +- s/2,
s = sigma sqrt(T). Using the forward makes dividends and carry disappear into F, which the
engine implies from put-call parity.
"""
from __future__ import annotations

import numpy as np
from scipy.special import ndtr

_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def black_price(F: np.ndarray, K: np.ndarray, T: np.ndarray, sigma: np.ndarray, D: np.ndarray,
                is_call: np.ndarray) -> np.ndarray:
    """Discounted Black-76 value (same units as F and K); intrinsic value where sigma*sqrt(T) is 0."""
    F, K, T, sigma, D, is_call = np.broadcast_arrays(*map(np.asarray, (F, K, T, sigma, D, is_call)))
    s = sigma * np.sqrt(T)
    with np.errstate(divide="ignore", invalid="ignore"):
        d1 = np.log(F / K) / s + 0.5 * s
    d2 = d1 - s
    theta = np.where(is_call, 1.0, -1.0)
    value = theta * (F * ndtr(theta * d1) - K * ndtr(theta * d2))
    intrinsic = np.maximum(theta * (F - K), 0.0)
    return D * np.where(s > 0, value, intrinsic)


def black_vega(F: np.ndarray, K: np.ndarray, T: np.ndarray, sigma: np.ndarray, D: np.ndarray) -> np.ndarray:
    """d(value)/d(sigma), the same for calls and puts: D F sqrt(T) phi(d1)."""
    F, K, T, sigma, D = np.broadcast_arrays(*map(np.asarray, (F, K, T, sigma, D)))
    s = sigma * np.sqrt(T)
    with np.errstate(divide="ignore", invalid="ignore"):
        d1 = np.log(F / K) / s + 0.5 * s
        vega = D * F * np.sqrt(T) * _INV_SQRT_2PI * np.exp(-0.5 * d1 * d1)
    return np.where(s > 0, vega, 0.0)
