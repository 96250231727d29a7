"""The market statistics' record (``omdp_market_rec_t``, native/include/omdp/market_stats.h)
as numpy sees it, and its split into the two tables a run writes: per-key aggregates and
per-window ends (complete or not, with the sources missing)."""
from __future__ import annotations

import numpy as np

from omdp.c_layout import c_dtype
from omdp.native import lib

MARKET_DTYPE = c_dtype("omdp_market_rec_t")
RT_MARKET = int(lib.OMDP_RT_MARKET)
AGG, MARK, DONE, END = int(lib.OMDP_MKT_AGG), int(lib.OMDP_MKT_MARK), int(lib.OMDP_MKT_DONE), int(lib.OMDP_MKT_END)
DIMS = ("underlying", "series", "exchange")
VALUES = ("quotes", "trades", "contracts", "notional", "nbbo", "max_trade")
"""The aggregates of a key in a window (notional in 1e-4 currency units)."""


def as_records(data: bytes | np.ndarray) -> np.ndarray:
    """A batch of market records (bytes or uint8) as a structured array."""
    return np.frombuffer(data, dtype=MARKET_DTYPE) if isinstance(data, (bytes, bytearray, memoryview)) \
        else np.asarray(data).view(MARKET_DTYPE)


def window_rows(records: np.ndarray) -> tuple[dict[tuple[int, int, int], tuple[int, ...]], dict[int, dict[str, int]]]:
    """A leader's output split: {(window, dim, key): values} for the AGG records and
    {window: {incomplete, missing, messages, overflow, late}} for the END records (several
    leaders: their key sets are disjoint, their ends are summed per window and OR-ed)."""
    aggs: dict[tuple[int, int, int], tuple[int, ...]] = {}
    ends: dict[int, dict[str, int]] = {}
    for r in records:
        if r["kind"] == AGG:
            k = (int(r["window"]), int(r["dim"]), int(r["key"]))
            if k in aggs:
                raise ValueError(f"window {k[0]}: key {k[1:]} emitted twice")
            aggs[k] = tuple(int(r[v]) for v in VALUES)
        elif r["kind"] == END:
            e = ends.setdefault(int(r["window"]), {"incomplete": 0, "missing": 0, "leaders": 0,
                                                   "messages": 0, "overflow": 0, "late": 0})
            e["incomplete"] |= int(r["dim"])
            e["missing"] |= int(r["key"])
            e["leaders"] += 1
            e["messages"] = max(e["messages"], int(r["quotes"]))  # every leader hears every source's count
            e["overflow"] += int(r["trades"])
            e["late"] += int(r["contracts"])
    return aggs, ends
