"""Underlying prices: when each underlying ticks, and where it ticks to.

Ticks arrive per underlying as a Poisson process whose rate follows its activity; a share
of them cluster just after market-wide "shocks", so many underlyings - and all their
series on every exchange - requote within a few milliseconds (the feed's 10 ms bursts).
Ticks of one underlying are at least ``MIN_GAP_NS`` apart, longer than any exchange takes
to requote, so every exchange's quote of a series is at most one tick behind.

Each tick moves the price by a fixed step of whole cents, up or down. Steps mostly
reverse the previous one (bid/ask bounce), with a reversal probability chosen so the
day's realized volatility matches the underlying's implied level; the step size bounds
every fair value's move per tick (0 <= |delta| <= 1), which is what keeps the exchanges'
quotes from locking or crossing on their own (quoting.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_GAP_NS = 2_000_000
SHOCKS_PER_SECOND = 2.0
SHOCK_SHARE = 0.1
"""Share of ticks that join a market-wide shock (when the chunk has one)."""
SHOCK_SPREAD_NS = 3_000_000
"""Mean delay of a tick after the shock it joins (exponential)."""
SESSION_SECONDS = 23_400.0
MAX_TICKS_PER_SECOND = 200.0


def step_cents(spot: np.ndarray) -> np.ndarray:
    """Price step per tick: one cent, more for high-priced names (3 bp of the price)."""
    return np.maximum(1, np.round(np.asarray(spot) * 100 * 0.0003)).astype(np.int64)


def reversal_probability(spot: np.ndarray, vol: np.ndarray, ticks_per_second: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Probability that a step reverses the previous one, so that a day of ticks has about
    the variance of an annual volatility ``vol``: for steps with lag-one correlation rho,
    the variance of n steps is n m^2 (1 + rho) / (1 - rho)."""
    day_var = (np.asarray(vol) * np.asarray(spot) * 100.0) ** 2 / 252.0
    n = np.maximum(ticks_per_second * SESSION_SECONDS, 1.0)
    r = day_var / (n * step.astype(np.float64) ** 2)
    rho = np.clip((r - 1.0) / (r + 1.0), -0.995, 0.9)
    return (1.0 - rho) / 2.0


@dataclass
class WalkState:
    """Carried from chunk to chunk, per underlying."""

    price: np.ndarray      # int64 cents
    sign: np.ndarray       # int64 +1/-1, direction of the last step
    last_tick: np.ndarray  # int64 ns (capture-relative) of the last tick


@dataclass
class Ticks:
    """The ticks of one chunk, sorted by (underlying, time)."""

    underlying: np.ndarray  # int64
    time: np.ndarray        # int64 ns, capture-relative
    price: np.ndarray       # int64 cents after the tick
    first_of_und: np.ndarray  # bool: no earlier tick of the same underlying in this chunk


class PriceWalk:
    """Draws the ticks of consecutive chunks for every underlying."""

    def __init__(self, spot: np.ndarray, vol: np.ndarray, rate: np.ndarray, rng: np.random.Generator) -> None:
        self.rate = np.minimum(np.asarray(rate, dtype=np.float64), MAX_TICKS_PER_SECOND)
        self.step = step_cents(spot)
        self.p_rev = reversal_probability(spot, vol, self.rate, self.step)
        n = self.rate.shape[0]
        self.state = WalkState(
            price=np.round(np.asarray(spot) * 100).astype(np.int64),
            sign=np.where(rng.random(n) < 0.5, -1, 1).astype(np.int64),
            last_tick=np.full(n, -MIN_GAP_NS, dtype=np.int64),
        )
        self.rng = rng

    def ticks(self, t0: int, t1: int, scale: float) -> Ticks:
        """Ticks with times drawn in [t0, t1) (ns), rates multiplied by ``scale``. Spacing
        may push a tick past t1; the next chunk then starts after it."""
        rng = self.rng
        dt = (t1 - t0) / 1e9
        counts = rng.poisson(np.minimum(self.rate * scale, MAX_TICKS_PER_SECOND) * dt)
        und = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
        n = und.shape[0]
        times = rng.integers(t0, t1, n) if n else np.zeros(0, dtype=np.int64)
        n_shocks = rng.poisson(SHOCKS_PER_SECOND * dt)
        if n_shocks and n:
            shock_at = rng.integers(t0, t1, n_shocks)
            joins = rng.random(n) < SHOCK_SHARE
            which = rng.integers(0, n_shocks, n)
            lag = rng.exponential(SHOCK_SPREAD_NS, n).astype(np.int64)
            times = np.where(joins, np.minimum(shock_at[which] + lag, t1 - 1), times)
        order = np.lexsort((times, und))
        und, times = und[order], times[order]
        first = np.ones(n, dtype=bool)
        first[1:] = und[1:] != und[:-1]
        times = self._space(und, times, first)
        price = self._walk(und, first)
        if n:
            last = np.append(und[1:] != und[:-1], True)
            self.state.last_tick[und[last]] = times[last]
        return Ticks(und, times, price, first)

    def _space(self, und: np.ndarray, times: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Push ticks apart so consecutive ticks of an underlying are >= MIN_GAP_NS apart:
        t'_j = max(t_j, t'_{j-1} + gap), i.e. j*gap + running max of (t_i - i*gap)."""
        n = und.shape[0]
        if n == 0:
            return times
        start = np.flatnonzero(first)
        group_start = np.repeat(start, np.diff(np.append(start, n)))
        j = np.arange(n, dtype=np.int64) - group_start
        g = times - j * MIN_GAP_NS
        g[start] = np.maximum(g[start], self.state.last_tick[und[start]] + MIN_GAP_NS)
        # Offsetting each group above every earlier one makes one running max act per group.
        group_no = np.cumsum(first) - 1
        span = np.int64(1) << 50
        g = np.maximum.accumulate(g + group_no * span) - group_no * span
        return g + j * MIN_GAP_NS

    def _walk(self, und: np.ndarray, first: np.ndarray) -> np.ndarray:
        """Prices after each tick: a step of ``step`` cents whose sign flips with ``p_rev``."""
        n = und.shape[0]
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        flips = (self.rng.random(n) < self.p_rev[und]).astype(np.int64)
        start = np.flatnonzero(first)
        sizes = np.diff(np.append(start, n))
        c = np.cumsum(flips)
        base = np.repeat(c[start] - flips[start], sizes)
        parity = (c - base) & 1
        sign = np.repeat(self.state.sign[und[start]], sizes) * (1 - 2 * parity)
        steps = sign * self.step[und]
        cs = np.cumsum(steps)
        price = np.repeat(self.state.price[und[start]] - (cs[start] - steps[start]), sizes) + cs
        # A floor of one cent keeps the model defined; at daily volatilities of a few percent
        # from spots of $3 and more it is never reached.
        price = np.maximum(price, 1)
        last = np.append(start[1:] - 1, n - 1)
        self.state.price[und[start]] = price[last]
        self.state.sign[und[start]] = sign[last]
        return price
