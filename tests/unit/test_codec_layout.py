"""Pins the codec's C structs and constants (opra_fast.h) to their Python twins."""
from __future__ import annotations

from feedhandlers import opra_fast
from feedhandlers.opra_errors import CODES, OPRA_ERROR_DTYPE
from omdp.native import ffi, lib


def test_error_struct_matches_dtype() -> None:
    assert ffi.sizeof("omdp_opra_error_t") == OPRA_ERROR_DTYPE.itemsize == 24
    assert [n for n, _ in ffi.typeof("omdp_opra_error_t").fields] == list(OPRA_ERROR_DTYPE.names)
    for name in OPRA_ERROR_DTYPE.names:
        assert ffi.offsetof("omdp_opra_error_t", name) == OPRA_ERROR_DTYPE.fields[name][1], name


def test_result_and_counter_structs() -> None:
    assert ffi.sizeof("omdp_opra_counters_t") == 8 * (4 + lib.OMDP_OPRA_ERROR_CODES)
    assert ffi.offsetof("omdp_opra_counters_t", "errors") == 32
    assert ffi.sizeof("omdp_opra_batch_result_t") == 32
    assert ffi.sizeof("omdp_opra_stream_result_t") == 16


def test_constants() -> None:
    assert opra_fast.MAX_PACKET_BYTES == 1456 and opra_fast.MAX_MESSAGES == 999 and opra_fast.HEADER_SIZE == 15
    assert lib.OMDP_OPRA_TEXT_MAX == 450 and lib.OMDP_OPRA_Y_MAX == 99 and lib.OMDP_OPRA_SLOTS == 50
    assert opra_fast.UNDEF_PRICE == 2**63 - 1
    # every code from -1 to -(ERROR_CODES - 1) has a distinct name
    assert sorted(CODES) == list(range(-(lib.OMDP_OPRA_ERROR_CODES - 1), 0))
    assert len(set(CODES.values())) == len(CODES) and "UNKNOWN" not in CODES.values()
