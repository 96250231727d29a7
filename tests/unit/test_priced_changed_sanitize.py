"""``priced_changed`` (C, one pass over two snapshots) marks exactly the series whose fields
pricing reads (``PRICED_FIELDS``) differ, whatever else differs, on snapshots of arbitrary
bytes; the refresher's incremental pricing rests on it (tests/unit/test_pricing_incremental.py).
Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decision_engines.engine import priced_changed
from decision_engines.engine_records import SERIES_INFO_DTYPE
from decision_engines.pricing.refresher import PRICED_FIELDS


@st.composite
def _pairs(draw) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 40))
    size = SERIES_INFO_DTYPE.itemsize * n
    old = np.frombuffer(draw(st.binary(min_size=size, max_size=size)), SERIES_INFO_DTYPE).copy()
    now = old.copy()
    for k in range(n):    # change nothing, one field, or several (priced or not) per series
        for name in draw(st.lists(st.sampled_from(SERIES_INFO_DTYPE.names), max_size=3)):
            raw = now[k:k + 1].view(np.uint8)
            offset, width = SERIES_INFO_DTYPE.fields[name][1], SERIES_INFO_DTYPE[name].itemsize
            raw[offset:offset + width] = np.frombuffer(draw(st.binary(min_size=width, max_size=width)), np.uint8)
    return now, old


@pytest.mark.full
@settings(max_examples=300, deadline=None)
@given(_pairs())
def test_marks_exactly_the_priced_differences(pair) -> None:
    now, old = pair
    want = np.zeros(len(now), bool)
    for f in PRICED_FIELDS:
        want |= now[f] != old[f]
    assert priced_changed(now, old).tolist() == want.tolist()


def test_snapshots_of_other_layouts_or_lengths_are_refused() -> None:
    a = np.zeros(3, SERIES_INFO_DTYPE)
    with pytest.raises(ValueError):
        priced_changed(a, a[:2])
    with pytest.raises(ValueError):
        priced_changed(np.zeros(3, np.int64), np.zeros(3, np.int64))
