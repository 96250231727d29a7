"""The engine's book holds every participant exchange of OPRA's table (spec 8.1), not only
FAST V2's six: a quote from each updates its lane, the NBBO and the feed's BBO check, ties go
in the table's order, and only codes outside the table count as bad_participant.

Named "sanitize": CI also runs this file against the ASan/UBSan build of the C core.
"""
from __future__ import annotations

import numpy as np

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig
from decision_engines.engine_records import EXCHANGES
from decision_engines.quote_records import build_quotes
from omdp._native import lib

P = 1_000_000_000
CENT = P // 100
ROOT = b"SPY  \0"
EXPIRY = 20260320
SPEC_TABLE = b"ABCDEGHIJMNPQSTUVWXZ"  # spec 8.1 without O (OPRA itself)
BOTH_CONTAIN = b"F"  # BBO indicator: the new best bid and best offer are this quote's


def _engine() -> DecisionEngine:
    return DecisionEngine(EngineConfig(max_series=256, max_groups=8, sample_every=0))


def _quote(ex: int, strike: int, bid_cents: int, ask_cents: int, size: int = 10, ind: bytes = b" ") -> np.ndarray:
    return build_quotes(root=ROOT, expiry=EXPIRY, strike_px=strike * P, put_call=b"C", participant=bytes([ex]),
                        bid_px=bid_cents * CENT, bid_size=size, offer_px=ask_cents * CENT, offer_size=size,
                        underlying_id=3, bbo_ind=ind)


def _stream(quotes: list[np.ndarray]) -> np.ndarray:
    out = np.concatenate(quotes)
    out["msg_seq"] = np.arange(1, len(out) + 1)
    return out


def _series(e: DecisionEngine, strike: int) -> np.void:
    slot = e.find_series(ROOT, EXPIRY, strike * P, b"C")
    assert slot is not None
    return e.snapshot()[slot]


def test_the_table_is_the_specs_participants() -> None:
    assert EXCHANGES == SPEC_TABLE and lib.OMDP_ENGINE_EXCHANGES == len(SPEC_TABLE)
    assert [lib.omdp_engine_exchange_index(ex) for ex in SPEC_TABLE] == list(range(len(SPEC_TABLE)))
    assert {lib.omdp_engine_exchange_index(b) for b in range(256) if b not in SPEC_TABLE} == {-1}


def test_a_quote_from_each_participant_sets_the_nbbo_and_passes_the_bbo_check() -> None:
    """One series per exchange, its only quote from that exchange: the NBBO is that quote on
    both sides, named by the exchange's code, and the feed's 'contains' indicator agrees."""
    e = _engine()
    e.process(_stream([_quote(ex, 10 + k, 100 + k, 110 + k, size=5 + k, ind=BOTH_CONTAIN)
                       for k, ex in enumerate(SPEC_TABLE)]))
    c = e.counters()
    assert (c["quotes"], c["bad_participant"], c["bbo_checked"]) == (len(SPEC_TABLE), 0, len(SPEC_TABLE))
    assert c["bbo_bid_mismatch"] == c["bbo_offer_mismatch"] == c["bbo_bad_indicator"] == 0
    for k, ex in enumerate(SPEC_TABLE):
        s = _series(e, 10 + k)
        assert (int(s["bid_px"]), int(s["bid_size"]), int(s["bid_part"])) == ((100 + k) * CENT, 5 + k, ex)
        assert (int(s["offer_px"]), int(s["offer_size"]), int(s["offer_part"])) == ((110 + k) * CENT, 5 + k, ex)


def test_every_participant_can_hold_the_best_quote_of_one_series() -> None:
    """All twenty quote one series; each in turn improves both sides, becomes the NBBO and
    agrees with the feed's 'contains' indicator."""
    e = _engine()
    quotes = [_quote(ex, 50, 90, 400) for ex in SPEC_TABLE]
    quotes += [_quote(ex, 50, 100 + k, 300 - k, ind=BOTH_CONTAIN) for k, ex in enumerate(SPEC_TABLE)]
    e.process(_stream(quotes))
    c = e.counters()
    assert c["bbo_checked"] == len(SPEC_TABLE) and c["bad_participant"] == 0
    assert c["bbo_bid_mismatch"] == c["bbo_offer_mismatch"] == 0
    s = _series(e, 50)
    last = len(SPEC_TABLE) - 1
    assert (int(s["bid_px"]), int(s["bid_part"])) == ((100 + last) * CENT, SPEC_TABLE[-1])
    assert (int(s["offer_px"]), int(s["offer_part"])) == ((300 - last) * CENT, SPEC_TABLE[-1])


def test_ties_go_in_table_order_and_other_codes_are_bad_participants() -> None:
    e = _engine()
    e.process(_stream([_quote(ord(x), 60, 100, 110) for x in "ZQDA"] + [_quote(ord(x), 60, 200, 90) for x in "OK "]))
    s = _series(e, 60)
    assert (int(s["bid_part"]), int(s["offer_part"])) == (ord("A"), ord("A"))
    assert e.counters()["bad_participant"] == 3 and e.counters()["quotes"] == 4


def _best(e: DecisionEngine, strike: int) -> tuple[int, int, int, int, int, int]:
    s = _series(e, strike)
    return (int(s["bid_px"]), int(s["bid_size"]), int(s["bid_part"]), int(s["offer_px"]), int(s["offer_size"]),
            int(s["offer_part"]))


def test_a_retreating_holder_hands_the_nbbo_to_the_next_best_of_any_exchange() -> None:
    """A quote moves the NBBO by itself unless it comes from the side's holder and is worse:
    then the next best is found among every exchange. Twenty quote, each better than the one
    before; the holders withdraw from the last to the first, and each time the exchange
    before takes both sides, until none is left."""
    e = _engine()
    e.process(_stream([_quote(ex, 70, 100 + k, 300 - k, size=5 + k) for k, ex in enumerate(SPEC_TABLE)]))
    for k in range(len(SPEC_TABLE) - 1, 0, -1):
        e.process(_stream([_quote(SPEC_TABLE[k], 70, 0, 0)]))
        assert _best(e, 70) == ((100 + k - 1) * CENT, 5 + k - 1, SPEC_TABLE[k - 1],
                                (300 - k + 1) * CENT, 5 + k - 1, SPEC_TABLE[k - 1])
    e.process(_stream([_quote(SPEC_TABLE[0], 70, 0, 0)]))
    assert _best(e, 70) == (0, 0, 0, 0, 0, 0)


def test_a_holder_cutting_its_size_at_the_price_gives_way_to_a_larger_size_or_the_first_exchange() -> None:
    """At one price the larger size holds, then the first exchange in the table's order: Z
    takes both sides from A with a larger size, and gives them back when it cuts its size to
    Q's (A still has the larger); Z at A's size again loses the tie to A."""
    e = _engine()
    e.process(_stream([_quote(ord("A"), 80, 100, 110, size=10), _quote(ord("Q"), 80, 100, 110, size=5),
                       _quote(ord("Z"), 80, 100, 110, size=20)]))
    assert _best(e, 80) == (100 * CENT, 20, ord("Z"), 110 * CENT, 20, ord("Z"))
    e.process(_stream([_quote(ord("Z"), 80, 100, 110, size=5)]))
    assert _best(e, 80) == (100 * CENT, 10, ord("A"), 110 * CENT, 10, ord("A"))
    e.process(_stream([_quote(ord("Z"), 80, 100, 110, size=10)]))
    assert _best(e, 80) == (100 * CENT, 10, ord("A"), 110 * CENT, 10, ord("A"))
    e.process(_stream([_quote(ord("A"), 80, 99, 111, size=10)]))
    assert _best(e, 80) == (100 * CENT, 10, ord("Z"), 110 * CENT, 10, ord("Z"))
