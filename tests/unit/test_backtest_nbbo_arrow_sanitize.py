"""The C conversion of the engine's NBBO change records into the NBBO table's columns
(``omdp_engine_nbbo_arrow``, ``ops.spark.backtest.backtest_nbbo.nbbo_arrow``) gives, row by row, what
the records say: on records of arbitrary bytes (any code, any size, sides with and without
an exchange), at every length around the bitmaps' byte edges, with the buffers reused for a
shorter call after a longer one. Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decision_engines.engine_records import NBBO_CHANGE_DTYPE
from ops.spark.backtest.backtest_nbbo import BACKTEST_NBBO_SCHEMA, NbboColumns, RootNames, nbbo_arrow


def _expected(c: np.ndarray) -> list[dict]:
    """The rows, field by field from the records (a series named by its first record)."""
    names: dict[int, str] = {}
    rows = []
    for r in c:
        def ch(code: int) -> str | None:
            return chr(int(code)) if code else None
        bid, offer = r["bid_part"] != 0, r["offer_part"] != 0
        slot = int(r["slot"])
        names.setdefault(slot, bytes(r["root"]).rstrip(b" \0").decode("ascii", "replace"))
        rows.append({
            "ts_ns": int(r["ts_ns"]), "line": int(r["line"]), "msg_seq": int(np.int64(np.uint64(r["msg_seq"]).view(np.int64))),
            "quote_participant": ch(r["quote_part"]), "underlying_id": int(r["underlying_id"]), "root": names[slot],
            "expiry": int(r["expiry"]), "strike_px": int(r["strike_px"]), "put_call": ch(r["put_call"]),
            "bid_px": int(r["bid_px"]) if bid else None, "bid_size": int(r["bid_size"]) if bid else None,
            "bid_participant": ch(r["bid_part"]),
            "offer_px": int(r["offer_px"]) if offer else None, "offer_size": int(r["offer_size"]) if offer else None,
            "offer_participant": ch(r["offer_part"]),
        })
    return rows


@st.composite
def _records(draw) -> np.ndarray:
    n = draw(st.integers(0, 70))
    c = np.frombuffer(draw(st.binary(min_size=80 * n, max_size=80 * n)), NBBO_CHANGE_DTYPE).copy()
    c["slot"] %= 50                       # series recur, as in an engine's log
    for side in ("bid_part", "offer_part", "quote_part", "put_call"):
        c[side] = np.where(np.frombuffer(draw(st.binary(min_size=n, max_size=n)), np.uint8) < 64, 0, c[side])
    return c


@pytest.mark.full
@settings(max_examples=300, deadline=None)
@given(_records(), _records())
def test_columns_equal_the_records(first, second) -> None:
    columns, roots, got = NbboColumns(), RootNames(), []
    for c in (first, second):     # the second call reuses (and may shrink into) the first's buffers
        table = nbbo_arrow(c, roots, columns)
        table.validate(full=True)
        got += table.cast(BACKTEST_NBBO_SCHEMA).to_pylist()   # read before the next fill
    assert got == _expected(np.concatenate([first, second]))


def test_records_of_another_layout_are_refused() -> None:
    with pytest.raises(ValueError, match="NBBO_CHANGE_DTYPE"):
        NbboColumns().fill(np.zeros(3, np.int64))
