"""The sequential oracle: the market windows computed in one pass over every message with
numpy, by the rules docs/market_stats.md states (event-time windows of the OPRA time, quotes
'k' and trades 'a' only, notional in 1e-4 units, the series key's hash). What the
partitions and leaders emit must equal it exactly."""
from __future__ import annotations

import numpy as np

from ops.market.records import VALUES

_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer over uint64 (omdp_market_mix)."""
    z = z.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def series_keys(msgs: np.ndarray) -> np.ndarray:
    """The series key of each message (series_key in market_stats_op.c)."""
    u = msgs["underlying_id"].astype(np.uint64)
    h = mix((u << np.uint64(32)) ^ msgs["expiry"].astype(np.uint64))
    h = mix(h ^ msgs["strike_px"].astype(np.int64).view(np.uint64))
    return mix(h ^ msgs["put_call"].astype(np.uint64))


def leader_of(dim: int, keys: np.ndarray, leaders: int) -> np.ndarray:
    """The leader owning each key of a dimension (omdp_market_key_hash mod leaders)."""
    with np.errstate(over="ignore"):
        return mix(keys.astype(np.uint64) + np.uint64(dim + 1) * _GOLD) % np.uint64(leaders)


def event_windows(msgs: np.ndarray, window_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """(counted mask, window index) of each message: quotes and trades with a valid time."""
    t = msgs["time"].astype(np.int64)
    hh, mi, ss, ms = t // 10_000_000, t // 100_000 % 100, t // 1000 % 100, t % 1000
    counted = np.isin(msgs["category"], (ord("k"), ord("a"))) & (hh <= 23) & (mi <= 59) & (ss <= 59)
    return counted, (((hh * 60 + mi) * 60 + ss) * 1000 + ms) // window_ms


def message_values(m: np.ndarray, multiplier: int = 100) -> dict[str, np.ndarray]:
    """Each counted message's contribution to its keys' aggregates (VALUES, int64)."""
    quote = m["category"] == ord("k")
    trade = ~quote
    vol = m["volume"].astype(np.int64)
    return {
        "quotes": quote.astype(np.int64),
        "trades": trade.astype(np.int64),
        "contracts": np.where(trade, vol, 0),
        "notional": np.where(trade, (m["premium_px"] // 100_000) * vol * multiplier, 0),
        "nbbo": (quote & (m["bbo_ind"] >= ord("B")) & (m["bbo_ind"] <= ord("P"))).astype(np.int64),
        "max_trade": np.where(trade, vol, 0),
    }


def oracle_windows(msgs: np.ndarray, window_ms: int = 1000, multiplier: int = 100
                   ) -> tuple[dict[tuple[int, int, int], tuple[int, ...]], dict[int, int]]:
    """{(window, dim, key): values} and {window: messages} over every message, in one pass."""
    counted, win = event_windows(msgs, window_ms)
    m, w = msgs[counted], win[counted]
    cols = message_values(m, multiplier)
    keys = (m["underlying_id"].astype(np.uint64), series_keys(m), m["participant"].astype(np.uint64))
    out: dict[tuple[int, int, int], tuple[int, ...]] = {}
    for dim, key in enumerate(keys):
        pairs = np.stack([w.astype(np.uint64), key], axis=1)
        uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        agg = []
        for v in VALUES:
            a = np.zeros(len(uniq), dtype=np.int64)
            (np.maximum if v == "max_trade" else np.add).at(a, inv, cols[v])
            agg.append(a)
        for i, (wi, ki) in enumerate(uniq):
            out[(int(wi), dim, int(ki))] = tuple(int(a[i]) for a in agg)
    counts = np.unique(w, return_counts=True)
    return out, {int(a): int(b) for a, b in zip(*counts)}
