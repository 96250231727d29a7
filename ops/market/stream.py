"""A synthetic stream of OPRA records with skewed keys, for the market statistics' tests and
benchmark: underlyings drawn from a finite Zipf law of exponent ``skew`` (0: uniform), a few
series per underlying, six exchanges, one quote in ``trade_every`` messages a trade, event
time rising by ``step_us`` on average, each message on one of ``lines`` lines."""
from __future__ import annotations

import numpy as np

from feedhandlers.opra_fast import new_records
from omdp.record import RT_OPRA_MSG

EXCHANGES = np.frombuffer(b"ABCIMW", dtype=np.uint8)
START_MS = (9 * 3600 + 30 * 60) * 1000  # 09:30:00.000


def opra_time(ms_of_day: np.ndarray) -> np.ndarray:
    """HHMMSSmmm of a millisecond of the day."""
    ms = ms_of_day.astype(np.int64)
    return ((ms // 3_600_000) * 10_000_000 + (ms // 60_000 % 60) * 100_000 + (ms // 1000 % 60) * 1000
            + ms % 1000).astype(np.uint32)


def zipf_stream(n: int, skew: float, underlyings: int = 2000, lines: int = 8, seed: int = 1,
                step_us: float = 100.0, trade_every: int = 20) -> np.ndarray:
    """``n`` OPRA records (OPRA_MSG_DTYPE) in event-time order."""
    rng = np.random.default_rng(seed)
    rec = new_records(n)
    weights = 1.0 / np.arange(1, underlyings + 1) ** skew
    und = rng.choice(underlyings, size=n, p=weights / weights.sum()).astype(np.uint32)
    ms = START_MS + (np.cumsum(rng.exponential(step_us, size=n)) // 1000).astype(np.int64)
    trade = rng.integers(trade_every, size=n) == 0
    rec["hdr"]["type"] = RT_OPRA_MSG
    rec["hdr"]["length"] = rec.dtype.itemsize
    rec["category"] = np.where(trade, ord("a"), ord("k"))
    rec["time"] = opra_time(ms)
    rec["underlying_id"] = und
    rec["expiry"] = 20080215 + rng.integers(4, size=n).astype(np.uint32) * 100
    rec["strike_px"] = (rng.integers(20, 60, size=n) * 5_000_000_000).astype(np.int64)
    rec["put_call"] = np.where(rng.integers(2, size=n) == 0, ord("C"), ord("P"))
    rec["participant"] = EXCHANGES[rng.integers(len(EXCHANGES), size=n)]
    rec["bbo_ind"] = np.where(trade, ord(" "), ord("A") + rng.integers(16, size=n))
    rec["volume"] = np.where(trade, rng.integers(1, 500, size=n), 0).astype(np.uint32)
    rec["premium_px"] = np.where(trade, rng.integers(5, 20_000, size=n) * 10_000_000, 0)
    rec["line"] = rng.integers(lines, size=n).astype(np.uint16)
    return rec
