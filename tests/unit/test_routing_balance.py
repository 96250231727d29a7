"""Routing by underlying: the greedy balance, the table built from it, and the dealing of
lines to handlers and senders."""
from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedhandlers.routing import RootCounts, RoutingTable, balance, build_routing
from ops.pipeline.assemble import deal_blocks


def loads_of(assign: dict[int, int], loads: dict[int, int], engines: int) -> list[int]:
    out = [0] * engines
    for k, e in assign.items():
        out[e] += loads[k]
    return out


def best_max_load(loads: list[int], engines: int) -> int:
    best = sum(loads)
    for combo in itertools.product(range(engines), repeat=len(loads)):
        per = [0] * engines
        for load, e in zip(loads, combo):
            per[e] += load
        best = min(best, max(per))
    return best


@settings(max_examples=150, deadline=None)
@given(loads=st.lists(st.integers(0, 1000), min_size=1, max_size=7), engines=st.integers(1, 3))
def test_greedy_is_within_four_thirds_of_the_best(loads: list[int], engines: int) -> None:
    keyed = dict(enumerate(loads))
    assign = balance(keyed, engines)
    assert set(assign) == set(keyed) and all(0 <= e < engines for e in assign.values())
    got = max(loads_of(assign, keyed, engines))
    assert 3 * got <= 4 * best_max_load(loads, engines) + 3  # LPT bound (integer rounding slack)


def test_balance_is_deterministic_and_even_for_many_small_keys() -> None:
    rng = random.Random(1)
    loads = {k: rng.randint(1, 100) for k in range(3000)}
    a, b = balance(loads, 8), balance(dict(reversed(list(loads.items()))), 8)
    assert a == b
    per = loads_of(a, loads, 8)
    assert max(per) / (sum(per) / 8) < 1.01


def test_a_heavy_underlying_gets_an_engine_of_its_own() -> None:
    loads = {0: 1000, 1: 10, 2: 10, 3: 10}
    a = balance(loads, 2)
    assert [k for k, e in a.items() if e == a[0]] == [0]


def test_routing_table_places_every_root_by_its_underlying() -> None:
    roots = {"AAPL": 1, "APV": 1, "QQQ": 2, "QQV": 2, "IBM": 3, "SPX": 4, "SPQ": 4, "ZZZ": 5}
    counts = RootCounts({"AAPL": 500, "APV": 100, "QQQ": 700, "IBM": 50, "SPX": 650, "NOTLISTED": 99}, 2099)
    t = build_routing(roots, counts, 2)
    eng = dict(zip(t.roots, t.root_engines))
    assert set(t.roots) == set(roots)
    assert eng["AAPL"] == eng["APV"] and eng["QQQ"] == eng["QQV"] and eng["SPX"] == eng["SPQ"]
    assert sorted(t.engine_messages) == [750, 1250]  # LPT: 700 | 650 + 600 ... then 50 onto the lighter
    assert sum(t.engine_messages) == 2000  # the unlisted root is not counted
    assert t.imbalance() == max(t.engine_messages) / 1000
    assert dict(zip(t.roots, t.underlying_ids)) == roots
    assert t.engine_of_underlying()[5] in (0, 1)  # quiet underlyings still get an engine


@pytest.mark.parametrize("bad, why", [
    ({"roots": ["A"], "underlying_ids": [1], "root_engines": [2], "engines": 2}, "engine 2"),
    ({"roots": ["A", "A"], "underlying_ids": [1, 1], "root_engines": [0, 0]}, "twice"),
    ({"roots": ["TOOLONG"], "underlying_ids": [1], "root_engines": [0]}, "1 to 6 bytes"),
    ({"roots": ["A"], "underlying_ids": [], "root_engines": [0]}, "one entry per root"),
])
def test_bad_tables_are_refused(bad: dict, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        RoutingTable(**bad)


def test_lines_are_dealt_in_consecutive_blocks() -> None:
    assert deal_blocks(list(range(1, 25)), 1) == {ln: 0 for ln in range(1, 25)}
    d = deal_blocks(list(range(1, 25)), 20)
    per = [sum(1 for v in d.values() if v == k) for k in range(20)]
    assert sorted(set(per)) == [1, 2] and sum(per) == 24
    assert list(d.values()) == sorted(d.values())
    with pytest.raises(ValueError, match="every replica needs a line"):
        deal_blocks([1, 2], 3)


def test_routing_by_bucket_keeps_each_bucket_on_one_engine() -> None:
    """Re-sharding (--reshard-buckets) moves a bucket as a whole, so the table is by bucket:
    every underlying of a bucket on the engine its bucket got, buckets balanced by load."""
    root_underlying = {f"R{u}": u for u in range(40)}
    counts = RootCounts({f"R{u}": 1000 if u % 8 == 3 else 10 for u in range(40)}, 20_000)
    t = build_routing(root_underlying, counts, 2, buckets=8)
    engine_of_bucket: dict[int, int] = {}
    for uid, eng in zip(t.underlying_ids, t.root_engines):
        assert engine_of_bucket.setdefault(uid % 8, eng) == eng
    assert len(set(engine_of_bucket.values())) == 2
    assert t.engine_messages[engine_of_bucket[3]] == max(t.engine_messages)  # the heavy bucket alone
