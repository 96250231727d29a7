"""Pins the OBI codec's C structs (opra_obi.h) to their numpy twins, and the record's
`wire` byte to the place the FAST V2 record left spare."""
from __future__ import annotations

import numpy as np
import pytest

from feedhandlers.opra_obi_errors import (
    CODES,
    COUNTER_NAMES,
    OBI_BLOCK_DTYPE,
    OBI_ERROR_DTYPE,
    OBI_EXTRA_DTYPE,
)
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib

PAIRS = [("omdp_obi_block_t", OBI_BLOCK_DTYPE), ("omdp_obi_error_t", OBI_ERROR_DTYPE), ("omdp_obi_extra_t", OBI_EXTRA_DTYPE)]


@pytest.mark.parametrize("ctype,dtype", PAIRS, ids=[p[0] for p in PAIRS])
def test_struct_matches_dtype(ctype: str, dtype: np.dtype) -> None:
    assert ffi.sizeof(ctype) == dtype.itemsize
    assert [n for n, _ in ffi.typeof(ctype).fields] == list(dtype.names)
    for name in dtype.names:
        assert ffi.offsetof(ctype, name) == dtype.fields[name][1], name


def test_pinned_sizes_and_counters() -> None:
    assert OBI_BLOCK_DTYPE.itemsize == 32 and OBI_ERROR_DTYPE.itemsize == 24 and OBI_EXTRA_DTYPE.itemsize == 12
    assert [n for n, _ in ffi.typeof("omdp_obi_counters_t").fields] == [*COUNTER_NAMES, "errors"]
    assert ffi.sizeof("omdp_obi_counters_t") == 8 * (len(COUNTER_NAMES) + lib.OMDP_OBI_ERROR_CODES)
    assert ffi.sizeof("omdp_obi_batch_result_t") == 32


def test_record_keeps_its_size_with_the_wire_byte() -> None:
    assert OPRA_MSG_DTYPE.itemsize == 256
    assert OPRA_MSG_DTYPE.fields["wire"][1] == 254 and OPRA_MSG_DTYPE.fields["reserved"][1] == 255


def test_constants_and_error_names() -> None:
    assert (lib.OMDP_OBI_VERSION, lib.OMDP_OBI_HEADER_SIZE, lib.OMDP_OBI_MAX_BLOCK, lib.OMDP_OBI_TEXT_MAX) == (6, 21, 1000, 200)
    assert sorted(CODES) == list(range(-(lib.OMDP_OBI_ERROR_CODES - 1), 0))
    assert len(set(CODES.values())) == len(CODES) and "UNKNOWN" not in CODES.values()
