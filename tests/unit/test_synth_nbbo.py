"""NBBO keys and BBO indicators against a brute-force reading of the rule."""
from __future__ import annotations

import numpy as np

from ops.synth.nbbo import (BID_APPENDAGE, BID_NONE, BID_SAME, BID_THIS, OFFER_APPENDAGE, OFFER_NONE, OFFER_SAME,
                            OFFER_THIS, bbo_letter, bid_keys, bid_of, locked_or_crossed, nbbo_by_step, offer_keys,
                            offer_of)

EXCH = "ABCIPX"


def _best(bids: list[tuple[int, int]], offers: list[tuple[int, int]]) -> tuple:
    bb = max(((p, s, -e) for e, (p, s) in enumerate(bids) if p > 0), default=None)
    bo = min(((p, -s, e) for e, (p, s) in enumerate(offers) if p > 0), default=None)
    return bb, bo


def test_keys_order_price_then_size_then_exchange() -> None:
    bid = np.array([[100], [100], [101], [100], [0], [99]])
    size = np.array([[10], [20], [1], [20], [50], [99]])
    kb = bid_keys(bid, size)
    price, sz, ex = bid_of(kb.max(axis=0))
    assert (int(price[0]), int(sz[0]), int(ex[0])) == (101, 1, 2)
    kb2 = bid_keys(np.array([[100], [100], [100], [0], [0], [0]]), np.array([[10], [20], [20], [0], [0], [0]]))
    assert int(bid_of(kb2.max(axis=0))[2][0]) == 1  # larger size, then the earlier exchange
    ko = offer_keys(np.array([[105], [104], [104], [0], [0], [104]]), np.array([[1], [5], [9], [0], [0], [9]]))
    price, sz, ex = offer_of(ko.min(axis=0))
    assert (int(price[0]), int(sz[0]), int(ex[0])) == (104, 9, 2)


def test_nbbo_by_step_matches_brute_force() -> None:
    rng = np.random.default_rng(2)
    n = 300
    cur_b = rng.integers(0, 6, (6, n)) * 5
    prev_b = rng.integers(0, 6, (6, n)) * 5
    cur_a = cur_b + rng.integers(1, 4, (6, n)) * 5
    prev_a = prev_b + rng.integers(1, 4, (6, n)) * 5
    cs, ps = rng.integers(1, 5, (6, n)), rng.integers(1, 5, (6, n))
    rank = np.argsort(rng.random((6, n)), axis=0).argsort(axis=0)
    step_exch = np.argsort(rank, axis=0)
    bb, bo = nbbo_by_step(bid_keys(cur_b, cs), bid_keys(prev_b, ps), offer_keys(cur_a, cs), offer_keys(prev_a, ps), step_exch)
    for u in range(n):
        for j in range(7):
            done = [rank[e, u] < j for e in range(6)]
            bids = [(cur_b[e, u], cs[e, u]) if done[e] else (prev_b[e, u], ps[e, u]) for e in range(6)]
            offs = [(cur_a[e, u], cs[e, u]) if done[e] else (prev_a[e, u], ps[e, u]) for e in range(6)]
            want_b, want_o = _best(bids, offs)
            p, s, e = (int(x[0]) for x in bid_of(bb[j:j + 1, u]))
            assert (p, s, -e) == want_b if want_b else e == -1
            p, s, e = (int(x[0]) for x in offer_of(bo[j:j + 1, u]))
            assert (p, -s, e) == want_o if want_o else e == -1


def test_indicator_letters_follow_opra_table() -> None:
    letters = {(b, o): chr(int(bbo_letter(np.array([b]), np.array([o]))[0])) for b in range(4) for o in range(4)}
    assert letters[(BID_SAME, OFFER_SAME)] == "A"
    assert letters[(BID_SAME, OFFER_THIS)] == "B"
    assert letters[(BID_SAME, OFFER_APPENDAGE)] == "C"
    assert letters[(BID_SAME, OFFER_NONE)] == "D"
    assert letters[(BID_THIS, OFFER_THIS)] == "F"
    assert letters[(BID_NONE, OFFER_NONE)] == "L"
    assert letters[(BID_APPENDAGE, OFFER_SAME)] == "M"
    assert letters[(BID_APPENDAGE, OFFER_APPENDAGE)] == "O"
    assert letters[(BID_APPENDAGE, OFFER_NONE)] == "P"
    assert letters[(BID_THIS, OFFER_APPENDAGE)] == "G"


def test_locked_and_crossed() -> None:
    kb = bid_keys(np.array([[100, 100, 100, 0]] + [[0, 0, 0, 0]] * 5), np.ones((6, 4), dtype=np.int64))
    ko = offer_keys(np.array([[0, 0, 0, 0], [105, 100, 95, 90]] + [[0, 0, 0, 0]] * 4), np.ones((6, 4), dtype=np.int64))
    locked, crossed = locked_or_crossed(kb.max(axis=0), ko.min(axis=0))
    assert locked.tolist() == [False, True, False, False]
    assert crossed.tolist() == [False, False, True, False]
