"""The built-in universe: every option root belongs to exactly one underlying."""
from __future__ import annotations

import pytest
from collections import Counter

from ops.synth.universe_builtin import MAIN_ROOTS, builtin_universe


@pytest.mark.full
def test_every_root_symbol_is_unique_across_underlyings() -> None:
    uni = builtin_universe()
    counts = Counter(r.symbol for r in uni.roots)
    shared = {sym: n for sym, n in counts.items() if n > 1}
    assert shared == {}


def test_made_tickers_avoid_the_real_main_roots() -> None:
    uni = builtin_universe()
    tickers = {u.symbol for u in uni.underlyings}
    assert not tickers & set(MAIN_ROOTS.values())
