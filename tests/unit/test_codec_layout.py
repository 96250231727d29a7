"""The codec's constants (opra_fast.h) against Python's, and its error codes' names."""
from __future__ import annotations

from feedhandlers import opra_fast
from feedhandlers.opra_errors import CODES
from omdp.native import lib


def test_constants() -> None:
    assert opra_fast.MAX_PACKET_BYTES == 1456 and opra_fast.MAX_MESSAGES == 999 and opra_fast.HEADER_SIZE == 15
    assert lib.OMDP_OPRA_TEXT_MAX == 450 and lib.OMDP_OPRA_Y_MAX == 99 and lib.OMDP_OPRA_SLOTS == 50
    assert opra_fast.UNDEF_PRICE == 2**63 - 1
    # every code from -1 to -(ERROR_CODES - 1) has a distinct name
    assert sorted(CODES) == list(range(-(lib.OMDP_OPRA_ERROR_CODES - 1), 0))
    assert len(set(CODES.values())) == len(CODES) and "UNKNOWN" not in CODES.values()
