"""Fair values: the normal CDF, Black-Scholes parity and the bounded move per tick, and the
downside skew of the smile."""
from __future__ import annotations

import math

import numpy as np

from ops.synth.pricing import SeriesPricer, norm_cdf, smile_vol


def test_norm_cdf_matches_erf() -> None:
    x = np.linspace(-8, 8, 2001)
    want = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    assert np.max(np.abs(norm_cdf(x) - want)) < 2e-7


def _pricer() -> SeriesPricer:
    k = np.array([30.0, 40.0, 50.0, 30.0, 40.0, 50.0])
    put = np.array([False, False, False, True, True, True])
    t = np.full(6, 0.25)
    return SeriesPricer(k, t, np.full(6, 0.35), put, 0.03)


def test_put_call_parity_holds_in_fair_values() -> None:
    p = _pricer()
    s = np.full(6, 41.3)
    v = p.value(np.arange(6), s)
    calls, puts = v[:3], v[3:]
    assert np.allclose(calls - puts, 41.3 - p.disc_strike[:3], atol=1e-6)


def test_value_moves_at_most_the_underlying_move() -> None:
    p = _pricer()
    s = np.linspace(20, 70, 5001)
    for i in range(6):
        v = p.value(np.full(s.size, i), s)
        assert np.all(np.abs(np.diff(v)) <= np.diff(s) + 1e-9)


def test_off_smile_value_at_the_same_vol_is_the_fair_value() -> None:
    p = _pricer()
    idx = np.arange(6)
    s = np.full(6, 38.0)
    assert np.allclose(p.value_at_vol(idx, s, np.full(6, 0.35)), p.value(idx, s))


def test_smile_has_a_downside_skew() -> None:
    lm = np.log(np.array([0.7, 0.9, 1.0, 1.1, 1.3]))
    vol = smile_vol(np.full(5, 0.3), np.full(5, 0.15), lm, np.full(5, 0.2))
    assert vol[0] > vol[1] > vol[2] and vol[2] == 0.3
    assert np.all((vol >= 0.18) & (vol <= 0.9))
