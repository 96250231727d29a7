"""The engine's memory is fixed by its configuration: stated in bytes at create, the same
after a feed of four times as many series as it has slots (the extra ones refused and
counted as table_full, nothing else lost), and for today's million series within the figure
docs/engines.md states."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig
from decision_engines.quote_records import build_quotes

P = 1_000_000_000
CENT = P // 100
MIB = 1 << 20


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


def _series_quotes(n: int, first: int = 0) -> np.ndarray:
    """One quote for each of n distinct series (strikes of one root and expiry, calls and puts)."""
    k = np.arange(first, first + n, dtype=np.int64)
    q = build_quotes(root=b"JPM  \0", expiry=20080216, strike_px=(k // 2 + 1) * CENT, n=n,
                     put_call=np.where(k % 2 == 0, ord("C"), ord("P")).astype(np.uint8).view("S1"),
                     participant=b"A", bid_px=100 * CENT, bid_size=10, offer_px=110 * CENT, offer_size=10,
                     underlying_id=7)
    q["msg_seq"] = np.arange(1, n + 1)
    return q


def test_more_series_than_slots_are_refused_and_counted_and_memory_stays_put() -> None:
    slots = 1 << 14
    e = DecisionEngine(EngineConfig(max_series=slots, max_groups=64, sample_every=0))
    stated = e.state_bytes()
    first, rest = _series_quotes(slots), _series_quotes(3 * slots, first=slots)
    e.process(first)                                # every slot taken (pages already faulted)
    assert e.counters()["series"] == slots and e.counters()["table_full"] == 0
    before = _rss()
    e.process(rest)
    grown = _rss() - before
    c = e.counters()
    assert (c["series"], c["table_full"], c["processed"]) == (slots, 3 * slots, 4 * slots)
    assert e.state_bytes() == stated
    # 49,152 more series held would take 3 x the table (~18 MiB at its bytes per slot)
    assert grown < 2 * MIB, f"RSS grew {grown / MIB:.1f} MiB"


def test_a_million_series_engine_states_its_memory() -> None:
    e = DecisionEngine(EngineConfig(max_series=1_000_000, max_groups=1 << 16, sample_every=0), prefault=False)
    mib = e.state_bytes() / MIB
    assert 700 < mib < 760, mib                     # docs/engines.md "Memory": 732 MiB
