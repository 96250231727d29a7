"""Exchange quotes: on the tick grid of their class, never crossed within a quote, and never
locking or crossing another exchange's quote one underlying step behind."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from ops.synth.price_walk import step_cents
from ops.synth.pricing import SeriesPricer, smile_vol
from ops.synth.quoting import build_quote_book, quote
from ops.synth.series import build_series, twin_series
from ops.synth.universe import RISK_FREE_RATE
from ops.synth.universe_builtin import builtin_universe


@pytest.fixture(scope="module")
def model() -> tuple:
    uni = builtin_universe(120)
    table = build_series(uni, dt.date(2008, 2, 4))
    spot = np.array([u.spot for u in uni.underlyings])
    und = table.underlying
    vol = smile_vol(np.array([u.vol for u in uni.underlyings])[und], np.array([u.skew for u in uni.underlyings])[und],
                    np.log(table.strike / spot[und]), table.t_years)
    pricer = SeriesPricer(table.strike, table.t_years, vol, table.is_put, RISK_FREE_RATE)
    steps = step_cents(spot)
    book = build_quote_book(uni, table, steps, vol, np.random.default_rng(3))
    return uni, table, pricer, book, spot, steps


def test_quotes_sit_on_their_tick_grid(model: tuple) -> None:
    uni, table, pricer, book, spot, _ = model
    s = np.arange(len(table))
    bid, ask, bsz, asz = quote(book, s, pricer.value(s, spot[table.underlying]))
    listed = book.listed
    for price in (bid, ask):
        fine = price < 300
        tick = np.where(fine, book.tick_lo[s], book.tick_hi[s])
        assert np.all(price[listed] % np.broadcast_to(tick, price.shape)[listed] == 0)
    assert np.all((bid < ask)[listed])
    assert np.all(ask[listed] > 0) and np.all(ask[~listed] == 0) and np.all(bid[~listed] == 0)
    assert np.all((bsz > 0) == (bid > 0)) and np.all((asz > 0) == (ask > 0))
    penny = np.array([u.penny for u in uni.underlyings])[table.underlying]
    assert penny.any() and np.all(book.tick_lo[penny] == 1) and np.all(book.tick_lo[~penny] == 5)


def test_exchanges_one_step_apart_never_lock(model: tuple) -> None:
    _, table, pricer, book, spot, steps = model
    s = np.arange(len(table))
    und = table.underlying
    rng = np.random.default_rng(11)
    for _ in range(20):
        base = spot[und] * rng.uniform(0.9, 1.1, und.shape[0])
        base = np.round(base * 100) / 100
        moved = base + rng.choice([-1, 1], und.shape[0]) * steps[und] / 100.0
        b0, a0, _, _ = quote(book, s, pricer.value(s, base))
        b1, a1, _, _ = quote(book, s, pricer.value(s, moved))
        # every exchange's new bid against every other exchange's old offer, and vice versa
        for e in range(6):
            for f in range(6):
                both = book.listed[e] & book.listed[f] & (b1[e] > 0)
                assert not np.any(b1[e][both] >= a0[f][both])
                both = book.listed[e] & book.listed[f] & (b0[f] > 0)
                assert not np.any(a1[e][both] <= b0[f][both])


def test_every_series_has_its_other_leg(model: tuple) -> None:
    """twin_series pairs each call with the put of its root, expiry and strike (what a parity
    anomaly shifts against), both ways."""
    _, table, *_ = model
    twin = twin_series(table)
    assert (twin >= 0).all()
    assert (twin[twin] == np.arange(len(table))).all()
    assert (table.is_put[twin] != table.is_put).all()
    for f in (table.root, table.expiry, table.strike_milli, table.underlying):
        assert (f[twin] == f).all()
