"""A model-consistent option market at the record level, for the engine's benchmark and tests.

Every series has a Black-76 value from its underlying's forward and a skewed quadratic smile;
each of the six exchanges quotes it around that value, on the February 2008 tick grid, with
its own jitter, never crossing its own quote. The stream starts with every series quoted on
every exchange, then re-quotes series drawn with a skew toward a few busy underlyings - the
shape of OPRA traffic, without the packets (``omdp synth`` makes those).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from decision_engines.pricing.black import black_price
from decision_engines.pricing.refresher import years_to_expiry
from decision_engines.quote_records import build_quotes
from feedhandlers.opra_record import PRICE_SCALE

EXCHANGES = np.frombuffer(b"ABCIPX", dtype=np.uint8)
RATE = 0.03


@dataclass(frozen=True)
class ModelMarket:
    """One row per series: what it is and what the model says it is worth."""

    root: np.ndarray          # S6
    underlying_id: np.ndarray
    expiry: np.ndarray        # YYYYMMDD
    strike: np.ndarray        # dollars
    is_call: np.ndarray
    forward: np.ndarray
    discount: np.ndarray
    years: np.ndarray
    vol: np.ndarray
    value: np.ndarray         # Black-76 value, dollars
    weight: np.ndarray        # how often it is re-quoted, relative


def tick_of(price: np.ndarray) -> np.ndarray:
    """February 2008 minimum variation: $0.05 under $3, $0.10 from $3."""
    return np.where(price < 3.0, 0.05, 0.10)


def model_market(n_underlyings: int, expiries: list[int], strikes_each_side: int, as_of: dt.date,
                 seed: int = 1) -> ModelMarket:
    """Series for ``n_underlyings`` underlyings x ``expiries`` x (2 strikes_each_side + 1) x call/put."""
    rng = np.random.default_rng(seed)
    spot = np.exp(rng.uniform(np.log(10.0), np.log(300.0), n_underlyings))
    atm = rng.uniform(0.25, 0.6, n_underlyings)
    skew = rng.uniform(-0.4, -0.1, n_underlyings)
    curv = rng.uniform(0.1, 0.5, n_underlyings)
    busy = rng.zipf(1.6, n_underlyings).astype(float)
    exp_arr = np.asarray(expiries, dtype=np.int64)
    years = years_to_expiry(exp_arr, as_of, 4.0)
    u, e, j, c = np.meshgrid(np.arange(n_underlyings), np.arange(len(exp_arr)),
                             np.arange(-strikes_each_side, strikes_each_side + 1), [True, False], indexing="ij")
    u, e, j, c = u.ravel(), e.ravel(), j.ravel(), c.ravel()
    T = years[e]
    F = spot[u] * np.exp(RATE * T)
    step = np.where(spot[u] < 25, 2.5, np.where(spot[u] < 200, 5.0, 10.0))
    K = np.round(F / step) * step + j * step
    keep = K > 0
    u, e, j, c, T, F, K = (a[keep] for a in (u, e, j, c, T, F, K))
    k = np.log(K / F)
    vol = np.clip(atm[u] + skew[u] * k + curv[u] * k * k, 0.05, 3.0)
    D = np.exp(-RATE * T)
    value = black_price(F, K, T, vol, D, c)
    roots = np.array([f"R{i:03d}".encode().ljust(5) for i in range(n_underlyings)], dtype="S6")
    return ModelMarket(roots[u], u.astype(np.uint32), exp_arr[e], K, c, F, D, T, vol, value, busy[u])


def model_quotes(m: ModelMarket, series: np.ndarray, exchange: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One quote per (series, exchange): around the model value, spread ~4% (at least a
    tick), jitter of up to two ticks per side; a bid that would be <= 0 is no bid."""
    v = m.value[series]
    tick = tick_of(v)
    half = np.maximum(np.ceil(0.04 * v / tick), 1) * tick
    bid = np.floor((v - half) / tick - rng.integers(0, 3, len(series))) * tick
    ask = np.ceil((v + half) / tick + rng.integers(0, 3, len(series))) * tick
    has_bid = bid > 0
    return build_quotes(
        root=m.root[series], expiry=m.expiry[series],
        strike_px=np.round(m.strike[series] * PRICE_SCALE).astype(np.int64),
        put_call=np.where(m.is_call[series], ord("C"), ord("P")).astype(np.uint8),
        participant=EXCHANGES[exchange],
        bid_px=np.where(has_bid, np.round(bid * 100), 0).astype(np.int64) * (PRICE_SCALE // 100),
        bid_size=np.where(has_bid, rng.integers(1, 50, len(series)) * 10, 0),
        offer_px=np.round(ask * 100).astype(np.int64) * (PRICE_SCALE // 100),
        offer_size=rng.integers(1, 50, len(series)) * 10,
        underlying_id=m.underlying_id[series],
    )


def quote_stream(m: ModelMarket, n_messages: int, seed: int = 2) -> np.ndarray:
    """Every series on every exchange once, then ``n_messages`` re-quotes."""
    rng = np.random.default_rng(seed)
    n = len(m.value)
    warm_series = np.repeat(np.arange(n), len(EXCHANGES))
    warm_exchange = np.tile(np.arange(len(EXCHANGES)), n)
    p = m.weight / m.weight.sum()
    series = np.concatenate([warm_series, rng.choice(n, n_messages, p=p)])
    exchange = np.concatenate([warm_exchange, rng.integers(0, len(EXCHANGES), n_messages)])
    out = model_quotes(m, series, exchange, rng)
    out["msg_seq"] = np.arange(1, len(out) + 1)
    return out
