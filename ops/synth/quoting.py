"""How each exchange quotes a series around its fair value: spreads, tick sizes and sizes.

Exchange e's quote is the fair value minus/plus a half-spread, rounded outward to the tick
grid: $0.05 under $3 and $0.10 from $3 ($0.01 / $0.05 for Penny Pilot classes). The
half-spread grows with the premium, away from the money and with time, and differs per
exchange (a fixed multiplier per series and exchange). Sizes (tens to hundreds of
contracts) shrink away from the money and for far expirations, and lean with where the
fair value sits inside its tick, so quotes update on moves smaller than a tick.

Everything is a function of the fair value alone: a quote changes exactly when the fair
value crosses a quarter-tick boundary. And every half-spread is at least ``hs_min``, which
the price model keeps above half the underlying's largest move - so two exchanges'
quotes, one possibly a move behind the other, can never lock or cross by themselves.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ops.synth.series import SeriesTable
from ops.synth.universe import Universe

LEAN_LEVELS = 4
"""Sizes change when the fair value crosses a 1/LEAN_LEVELS-tick boundary."""

MAX_SIZE = 50_000
PREMIUM_SPLIT_CENTS = 300
"""Premiums from $3 trade on the coarser tick."""


@dataclass
class QuoteBook:
    """Per-series constants of the exchanges' quoting.

    Per-exchange arrays are exchange-major ([6, n], EXCHANGES order): every per-exchange
    step is then a row-wise operation and the NBBO a reduction over six rows.
    """

    tick_lo: np.ndarray     # int32 cents, premiums under $3
    tick_hi: np.ndarray     # int32 cents, premiums from $3
    hs_min: np.ndarray      # float64 dollars, floor of every half-spread
    widen: np.ndarray       # float64, spread factor for moneyness and time
    slope: np.ndarray       # float64, half-spread per dollar of premium (up to $10)
    mult: np.ndarray        # float32 [6, n], per-exchange half-spread multiplier (>= 1)
    size_base: np.ndarray   # int32 [6, n], quote size before leaning
    listed: np.ndarray      # bool [6, n]


def build_quote_book(uni: Universe, table: SeriesTable, step_cents: np.ndarray, vol: np.ndarray,
                     rng: np.random.Generator) -> QuoteBook:
    """Quoting constants of every series; ``step_cents`` is each underlying's largest move
    per tick, ``vol`` each series' smile volatility."""
    n = len(table)
    und = table.underlying
    penny = np.array([u.penny for u in uni.underlyings], dtype=bool)[und]
    spot = np.array([u.spot for u in uni.underlyings])[und]
    t = np.maximum(table.t_years, 1.0 / 365)
    x = np.abs(np.log(table.strike / spot)) / (vol * np.sqrt(t))
    widen = 1.0 + 0.3 * np.minimum(x, 3.0) + 0.15 * np.minimum(t, 2.0)
    n_und = len(uni.underlyings)
    per_und_exch = rng.random((6, n_und))
    mult = (1.0 + 0.5 * per_und_exch[:, und] + 0.3 * rng.random((6, n))).astype(np.float32)
    weight = np.array([u.weight for u in uni.underlyings])
    base_und = np.clip(20.0 * np.sqrt(weight / np.median(weight)), 10, 400)[und]
    size = base_und * rng.uniform(0.5, 1.5, (6, n)) * (np.exp(-0.5 * np.minimum(x, 4.0)) / (1.0 + 0.5 * t))
    return QuoteBook(
        tick_lo=np.where(penny, 1, 5).astype(np.int32),
        tick_hi=np.where(penny, 5, 10).astype(np.int32),
        hs_min=0.55 * step_cents[und] / 100.0,
        widen=widen,
        slope=np.where(penny, 0.01, 0.02),
        mult=mult,
        size_base=np.clip(np.round(size), 1, MAX_SIZE // 2).astype(np.int32),
        listed=np.ascontiguousarray(table.listed.T),
    )


def quote(book: QuoteBook, series: np.ndarray, theo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every exchange's quote of ``series`` at fair values ``theo`` (dollars).

    Returns bid, offer (cents) and their sizes, each int32 [6, len(series)]; an exchange
    not listing the series shows zeros, a bid below one tick is no bid (price and size 0).
    """
    # The per-exchange work is float32: its rounding (1e-7 of a premium) is far below the
    # margin that keeps exchanges from locking (a tenth of the underlying's step).
    tl = book.tick_lo[series].astype(np.float32)
    th = book.tick_hi[series].astype(np.float32)
    prem = np.minimum(theo, 10.0) * book.slope[series] + 0.005 * np.maximum(theo - 10.0, 0.0)
    hs_c = (np.maximum(book.hs_min[series], 0.005 * tl + prem) * book.widen[series] * 100.0).astype(np.float32)
    theo_c = theo * 100.0
    theo32 = theo_c.astype(np.float32)
    spread = hs_c * book.mult[:, series]
    lo = theo32 - spread
    hi = theo32 + spread
    bid = np.floor(lo / tl) * tl
    bid = np.where(bid >= PREMIUM_SPLIT_CENTS, np.floor(lo / th) * th, bid)
    ask = np.ceil(hi / tl) * tl
    ask = np.where(ask > PREMIUM_SPLIT_CENTS, np.ceil(hi / th) * th, ask)
    ask = np.maximum(ask, tl)
    listed = book.listed[:, series]
    bid = np.where(listed & (bid > 0), bid, 0).astype(np.int32)
    ask = np.where(listed, ask, 0).astype(np.int32)
    level = np.floor(np.mod(theo_c / book.tick_lo[series], 1.0) * LEAN_LEVELS).astype(np.int32)
    base = book.size_base[:, series]
    bsz = np.where(bid > 0, np.maximum(base * (LEAN_LEVELS + level) // LEAN_LEVELS, 1), 0).astype(np.int32)
    asz = np.where(ask > 0, np.maximum(base * (2 * LEAN_LEVELS - 1 - level) // LEAN_LEVELS, 1), 0).astype(np.int32)
    return bid, ask, bsz, asz
