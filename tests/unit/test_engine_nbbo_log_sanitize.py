"""The engine's NBBO-change log (engine_nbbo.h): one entry per quote that moves a series'
NBBO, the NBBO after it; a full log counts what it drops and writes nothing past its end;
take starts it again; no log, no entries. Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig
from decision_engines.engine_records import NBBO_CHANGE_DTYPE
from decision_engines.quote_records import build_quotes
from omdp.native import ffi, lib

P = 1_000_000_000
CENT = P // 100


def _quote(ex: bytes, bid: int, ask: int, bsz: int = 10, asz: int = 10) -> np.ndarray:
    return build_quotes(root=b"JPM  \0", expiry=20080216, strike_px=40 * P, put_call=b"C", participant=ex,
                        bid_px=bid * CENT, bid_size=bsz, offer_px=ask * CENT, offer_size=asz, underlying_id=7)


def _engine() -> DecisionEngine:
    return DecisionEngine(EngineConfig(max_series=16, max_groups=4, sample_every=0))


def test_changes_are_logged_with_the_nbbo_after_the_quote() -> None:
    e = _engine()
    e.log_nbbo(16)
    msgs = np.concatenate([_quote(b"A", 100, 110), _quote(b"B", 101, 112), _quote(b"C", 99, 115),  # C: no change
                           _quote(b"A", 0, 109, bsz=0)])                                          # A's bid gone
    e.process(msgs)
    got, dropped = e.take_nbbo()
    assert dropped == 0 and len(got) == 3
    assert [(int(r["bid_px"]) // CENT, chr(r["bid_part"]), int(r["offer_px"]) // CENT, chr(r["offer_part"]))
            for r in got] == [(100, "A", 110, "A"), (101, "B", 110, "A"), (101, "B", 109, "A")]
    assert (got["strike_px"] == 40 * P).all() and (got["put_call"] == ord("C")).all()
    assert bytes(got["root"][0]).rstrip(b" \0") == b"JPM" and list(got["quote_part"]) == [ord("A"), ord("B"), ord("A")]
    assert len(e.take_nbbo()[0]) == 0                       # taken: the log starts again


def test_a_full_log_drops_and_counts() -> None:
    e = _engine()
    e.log_nbbo(2)
    e.process(np.concatenate([_quote(b"A", 100 + i, 200) for i in range(5)]))
    got, dropped = e.take_nbbo()
    assert len(got) == 2 and dropped == 3 and [int(r["bid_px"]) // CENT for r in got] == [100, 101]


def test_no_log_no_entries_and_bad_arguments() -> None:
    e = _engine()
    e.process(_quote(b"A", 100, 110))
    got, dropped = e.take_nbbo()
    assert len(got) == 0 and dropped == 0
    buf = np.zeros(1, NBBO_CHANGE_DTYPE)
    assert lib.omdp_engine_nbbo_log(ffi.NULL, ffi.NULL, 0) == lib.OMDP_ENGINE_EINVAL
    assert lib.omdp_engine_nbbo_log(e.handle, ffi.cast("omdp_engine_nbbo_t *", ffi.from_buffer(buf)), 0) == \
        lib.OMDP_ENGINE_EINVAL
    assert lib.omdp_engine_nbbo_take(ffi.NULL, ffi.NULL) == 0
    e.log_nbbo(0)                                           # off again
    e.process(_quote(b"B", 105, 108))
    assert len(e.take_nbbo()[0]) == 0
