"""The vectorized implied-volatility solver against py_vollib (Jaeckel's "Let's Be Rational")
on a grid of moneyness, expiry and volatility: |error| <= 1e-6 wherever a volatility exists."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from decision_engines.pricing.black import black_price, black_vega
from decision_engines.pricing.implied_vol import implied_vol

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from py_vollib.black import black as vollib_black
    from py_vollib.black.implied_volatility import implied_volatility as vollib_iv

F = 100.0
RATE = 0.03
MONEYNESS = np.linspace(0.5, 2.0, 31)           # K / F
YEARS = [0.005, 0.02, 0.08, 0.25, 0.5, 1.0, 2.0, 3.0]
VOLS = [0.03, 0.08, 0.15, 0.25, 0.4, 0.6, 1.0, 2.0]


def _grid() -> tuple[np.ndarray, ...]:
    m, t, v, c = np.meshgrid(MONEYNESS, YEARS, VOLS, [True, False], indexing="ij")
    return (F * m).ravel(), t.ravel(), v.ravel(), c.ravel()


def _vollib(price: float, K: float, T: float, call: bool) -> float:
    try:
        return float(vollib_iv(price, F, K, RATE, T, "c" if call else "p"))
    except Exception:  # below intrinsic / above the bound: no volatility
        return float("nan")


def test_matches_py_vollib_on_grid() -> None:
    K, T, vol, call = _grid()
    price = np.array([vollib_black("c" if c else "p", F, k, t, RATE, v) for k, t, v, c in zip(K, T, vol, call)])
    ours = implied_vol(price, F, K, T, np.exp(-RATE * T), call)
    ref = np.array([_vollib(p, k, t, c) for p, k, t, c in zip(price, K, T, call)])
    # A subnormal price (below ~2.2e-308) has too few significant digits to define a volatility.
    solvable = (ref > 0) & (price >= np.finfo(float).tiny)
    assert solvable.sum() > 0.75 * len(ref)
    err = np.abs(ours[solvable] - ref[solvable])
    assert err.max() <= 1e-6, f"worst error {err.max():.3g}"
    # Where vollib finds no volatility (price = intrinsic to double precision), neither do we.
    assert np.isnan(ours[~(ref > 0)]).all()
    # And where the price carries information (vega not negligible), we recover the input vol.
    informative = solvable & (black_vega(F, K, T, vol, np.exp(-RATE * T)) > 1e-4)
    assert np.abs(ours[informative] - vol[informative]).max() <= 1e-6


def test_round_trips_through_black_price() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    Fs = rng.uniform(5, 500, n)
    K = Fs * np.exp(rng.normal(0, 0.3, n))
    T = rng.uniform(0.01, 2.0, n)
    vol = rng.uniform(0.1, 1.2, n)
    D = np.exp(-0.04 * T)
    call = rng.random(n) < 0.5
    price = black_price(Fs, K, T, vol, D, call)
    iv = implied_vol(price, Fs, K, T, D, call)
    ok = black_vega(Fs, K, T, vol, D) > 1e-3
    assert np.abs(iv[ok] - vol[ok]).max() < 1e-9


@pytest.mark.parametrize("price", [-1.0, 0.0, np.nan, np.inf, 150.0])
def test_no_solution_is_nan(price: float) -> None:
    # A call on F=100 is worth less than D*F; at or below zero, or non-finite: no vol.
    assert np.isnan(implied_vol(np.array([price]), 100.0, 100.0, 0.5, 1.0, True))[0]


def test_below_intrinsic_is_nan() -> None:
    assert np.isnan(implied_vol(np.array([9.0]), 110.0, 100.0, 0.5, 1.0, True))[0]
