"""Underlying ticks: spaced by the minimum gap, steps of exactly one size, carried across
chunks, deterministic for a seed."""
from __future__ import annotations

import numpy as np

from ops.synth.price_walk import MIN_GAP_NS, PriceWalk, reversal_probability, step_cents


def _walk(seed: int) -> PriceWalk:
    spot = np.array([44.0, 138.0, 20.0, 505.0])
    return PriceWalk(spot, np.array([0.3, 0.3, 0.5, 0.4]), np.array([150.0, 60.0, 0.5, 40.0]), np.random.default_rng(seed))


def test_ticks_are_spaced_and_step_by_one_size() -> None:
    w = _walk(1)
    prices = {u: [int(w.state.price[u])] for u in range(4)}
    last = {u: -10**18 for u in range(4)}
    for c in range(20):
        t = w.ticks(c * 250_000_000, (c + 1) * 250_000_000, 1.0)
        assert np.all(np.diff(t.underlying) >= 0)
        for u in range(4):
            m = t.underlying == u
            times = t.time[m]
            if times.size:
                assert times[0] - last[u] >= MIN_GAP_NS
                assert np.all(np.diff(times) >= MIN_GAP_NS)
                last[u] = int(times[-1])
            prices[u] += t.price[m].tolist()
    for u in range(4):
        steps = np.abs(np.diff(prices[u]))
        assert set(steps.tolist()) <= {int(w.step[u])}


def test_same_seed_same_ticks() -> None:
    a, b = _walk(9), _walk(9)
    for c in range(5):
        ta, tb = a.ticks(c * 10**8, (c + 1) * 10**8, 1.3), b.ticks(c * 10**8, (c + 1) * 10**8, 1.3)
        assert np.array_equal(ta.time, tb.time) and np.array_equal(ta.price, tb.price)


def test_steps_and_reversals() -> None:
    assert step_cents(np.array([3.0, 44.0, 138.0, 1380.0])).tolist() == [1, 1, 4, 41]
    busy = reversal_probability(np.array([44.0]), np.array([0.3]), np.array([100.0]), np.array([1]))
    idle = reversal_probability(np.array([20.0]), np.array([0.5]), np.array([0.01]), np.array([1]))
    assert busy[0] > 0.95 and idle[0] < 0.5
