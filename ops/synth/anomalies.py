"""Injected anomalies: quotes a decision engine should flag, put in the feed on purpose and
listed in the ground truth.

Kinds:
- ``locked`` / ``crossed``: one exchange's bid equal to / above the best offer of the other
  exchanges (or its offer equal to / below their best bid), its other side kept valid.
- ``off_smile``: one exchange quotes the series around the Black-Scholes value at a
  volatility 10 to 25 points off the smile, with its usual spread.
- ``parity``: every exchange quoting a call shifts it by at least three ticks and 15% of
  its value at one tick of the underlying, the put untouched: put-call parity breaks, and
  by enough that the synthetic forward (the call less the put, at the pair's best bid and
  offer) trades through its fair value by more than the cost of trading it
  (``PARITY_COST`` of the underlying, at least ``PARITY_COST_MIN_CENTS``) and two ticks: an
  arbitrage beyond the quoted spreads, not a quote that moved inside them (a deep
  in-the-money put's wide spread once absorbed a 15% shift of its call).

Each lasts until the exchange next requotes the series (the next tick of the underlying).
An off-smile or parity quote can lock or cross the market while the other exchanges have
not followed or have already come back; the ground truth records the NBBO state after
every anomalous quote, and the generator checks that no lock or cross appears that an
anomaly does not explain.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ops.synth.quoting import PREMIUM_SPLIT_CENTS, QuoteBook, quote

KINDS = ("locked", "crossed", "off_smile", "parity")
KIND_CODE = {k: i for i, k in enumerate(KINDS)}

DEFAULT_RATES = {"locked": 0.5, "crossed": 0.5, "off_smile": 1.0, "parity": 0.5}
"""Anomaly events per second of session at 1x; scaled with the rate."""

MIN_VALUE = 0.30
"""Anomalies go on series worth at least this much (dollars), where they are visible."""

PARITY_COST = 0.0005
PARITY_COST_MIN_CENTS = 10.0
"""The cost of trading a synthetic forward a parity break must exceed: 0.05% of the
underlying, at least 10 cents (a decision engine's default parity tolerance,
docs/engines.md)."""


@dataclass
class Injected:
    """Anomalous quotes of one chunk: one entry per (unit, exchange) quote."""

    unit: list[np.ndarray] = field(default_factory=list)
    exch: list[np.ndarray] = field(default_factory=list)
    kind: list[np.ndarray] = field(default_factory=list)
    magnitude: list[np.ndarray] = field(default_factory=list)
    fair_bid: list[np.ndarray] = field(default_factory=list)
    fair_offer: list[np.ndarray] = field(default_factory=list)
    event: list[np.ndarray] = field(default_factory=list)

    def add(self, unit: np.ndarray, exch: np.ndarray, kind: str, magnitude: np.ndarray, fair_bid: np.ndarray,
            fair_offer: np.ndarray, event: np.ndarray) -> None:
        """Record quotes of one kind."""
        n = unit.shape[0]
        self.unit.append(unit.astype(np.int64))
        self.exch.append(exch.astype(np.int64))
        self.kind.append(np.full(n, KIND_CODE[kind], dtype=np.int8))
        self.magnitude.append(np.asarray(magnitude, dtype=np.float64))
        self.fair_bid.append(fair_bid.astype(np.int32))
        self.fair_offer.append(fair_offer.astype(np.int32))
        self.event.append(event.astype(np.int64))

    def arrays(self) -> dict[str, np.ndarray]:
        """Everything recorded, as arrays."""
        dtypes = {"unit": np.int64, "exch": np.int64, "kind": np.int8, "magnitude": np.float64,
                  "fair_bid": np.int32, "fair_offer": np.int32, "event": np.int64}
        return {k: (np.concatenate(getattr(self, k)) if getattr(self, k) else np.zeros(0, dtype=t)) for k, t in dtypes.items()}


def tick_at(book: QuoteBook, series: np.ndarray, price: np.ndarray) -> np.ndarray:
    """The tick size (cents) at premium ``price`` (cents) of ``series``."""
    return np.where(price >= PREMIUM_SPLIT_CENTS, book.tick_hi[series], book.tick_lo[series])


def on_grid(book: QuoteBook, s: int, price: np.ndarray, up: bool) -> np.ndarray:
    """Prices (cents) of series ``s`` moved onto its tick grid: from $3 the coarser tick,
    rounding up (offers) or down (bids)."""
    th = int(book.tick_hi[s])
    coarse = (np.ceil(price / th) if up else np.floor(price / th)).astype(np.int64) * th
    return np.where(price >= PREMIUM_SPLIT_CENTS, coarse, price)


def pick(rng: np.random.Generator, candidates: np.ndarray, k: int) -> np.ndarray:
    """Up to ``k`` distinct elements of ``candidates``, in increasing order."""
    if k <= 0 or candidates.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.sort(rng.choice(candidates, size=min(k, candidates.size), replace=False))


def apply_parity(rng: np.random.Generator, units: np.ndarray, put_units: np.ndarray, spot: np.ndarray,
                 series: np.ndarray, theo: np.ndarray, book: QuoteBook, quotes: tuple[np.ndarray, ...], out: Injected,
                 next_event: int) -> int:
    """Shift every listed exchange's quote of the calls at ``units`` (their puts' quotes at
    ``put_units``, each put listed on some exchange; the underlying at ``spot`` dollars);
    returns the next event id."""
    bid, ask, bsz, asz = quotes
    for i, u in enumerate(units.tolist()):
        s, p = series[u], int(put_units[i])
        th = int(book.tick_hi[s])
        delta = max(3 * th, int(round(0.15 * theo[u] * 100 / th)) * th)
        sign = 1 if (theo[u] * 100 < 2 * delta or rng.random() < 0.5) else -1
        cols = np.flatnonzero(book.listed[:, s])
        fair_b, fair_a = bid[cols, u].copy(), ask[cols, u].copy()
        put_b, put_a = bid[:, p], ask[:, p]
        if sign < 0 and not (put_b > 0).any():
            sign = 1  # no put bid: the synthetic forward has no offer to break
        cost = max(PARITY_COST_MIN_CENTS, PARITY_COST * spot[i] * 100) + 2 * th
        c, q = theo[u] * 100, theo[p] * 100
        if sign > 0:   # the synthetic bid (call bid - put offer) above fair
            need = (c - fair_b.max()) + (put_a[put_a > 0].min() - q) + cost
        else:          # the synthetic offer (call offer - put bid) below fair
            need = (fair_a[fair_a > 0].min() - c) + (q - put_b.max()) + cost
        delta = max(delta, int(np.ceil(need / th)) * th)
        new_b = on_grid(book, s, np.maximum(np.where(fair_b > 0, fair_b + sign * delta, 0), 0), up=False)
        bid[cols, u] = new_b
        bsz[cols, u] = np.where(new_b > 0, np.maximum(bsz[cols, u], 1), 0)
        ask[cols, u] = on_grid(book, s, np.maximum(fair_a + sign * delta, book.tick_lo[s]), up=True)
        out.add(np.full(cols.size, u), cols, "parity", np.full(cols.size, sign * delta / 100.0), fair_b, fair_a,
                np.full(cols.size, next_event + i))
    return next_event + units.size


def apply_off_smile(rng: np.random.Generator, units: np.ndarray, exch: np.ndarray, series: np.ndarray, theo_off: np.ndarray,
                    dvol: np.ndarray, book: QuoteBook, quotes: tuple[np.ndarray, ...], out: Injected, next_event: int) -> int:
    """Requote exchange ``exch`` of each unit at the off-smile value ``theo_off``."""
    bid, ask, bsz, asz = quotes
    if units.size == 0:
        return next_event
    ob, oa, obs, oas = quote(book, series[units], theo_off)
    rows = np.arange(units.size)
    fair_b, fair_a = bid[exch, units].copy(), ask[exch, units].copy()
    bid[exch, units] = ob[exch, rows]
    ask[exch, units] = oa[exch, rows]
    bsz[exch, units] = obs[exch, rows]
    asz[exch, units] = oas[exch, rows]
    out.add(units, exch, "off_smile", dvol, fair_b, fair_a, next_event + rows)
    return next_event + units.size


def apply_lock_cross(rng: np.random.Generator, units: np.ndarray, exch: np.ndarray, crossed: np.ndarray,
                     other_bid: np.ndarray, other_offer: np.ndarray, series: np.ndarray, book: QuoteBook,
                     quotes: tuple[np.ndarray, ...], out: Injected, next_event: int) -> int:
    """Move one side of exchange ``exch``'s quote onto (locked) or through (crossed) the other
    exchanges' best opposite price (cents; 0 where they have none) at the moment it quotes."""
    bid, ask, bsz, asz = quotes
    for i in range(units.size):
        u, e, s = int(units[i]), int(exch[i]), int(series[units[i]])
        fb, fa = int(bid[e, u]), int(ask[e, u])
        use_bid_side = other_offer[i] > 0 and (other_bid[i] <= 0 or rng.random() < 0.5)
        if use_bid_side:
            price = int(other_offer[i])
            if crossed[i]:
                price += int(tick_at(book, np.array([s]), np.array([price]))[0])
            bid[e, u] = price
            bsz[e, u] = max(int(bsz[e, u]), int(book.size_base[e, s]))
            if ask[e, u] <= price:
                ask[e, u] = price + int(tick_at(book, np.array([s]), np.array([price]))[0])
                asz[e, u] = max(int(asz[e, u]), 1)
            magnitude = (price - other_offer[i]) / 100.0
        else:
            price = int(other_bid[i])
            if crossed[i]:
                step = int(tick_at(book, np.array([s]), np.array([max(price - 1, 0)]))[0])
                if price - step >= int(book.tick_lo[s]):
                    price -= step
            ask[e, u] = price
            asz[e, u] = max(int(asz[e, u]), int(book.size_base[e, s]))
            if bid[e, u] >= price:
                lower = price - int(tick_at(book, np.array([s]), np.array([price - 1]))[0])
                bid[e, u] = max(lower, 0)
                bsz[e, u] = max(int(bsz[e, u]), 1) if lower > 0 else 0
            magnitude = (other_bid[i] - price) / 100.0
        out.add(np.array([u]), np.array([e]), "crossed" if magnitude > 0 else "locked", np.array([magnitude]),
                np.array([fb]), np.array([fa]), np.array([next_event + i]))
    return next_event + units.size
