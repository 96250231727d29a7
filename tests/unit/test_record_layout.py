"""Pins the C record structs to their numpy dtypes: size, alignment and every offset."""
from __future__ import annotations

import numpy as np
import pytest

from feedhandlers.opra_record import OPRA_MSG_DTYPE, OPRA_Y_ENTRY_DTYPE
from omdp.native import ffi, lib
from omdp.record import RECORD_HEADER_DTYPE, RECORD_HEADER_SIZE, STAMPS_DTYPE

PAIRS = [
    ("omdp_stamps_t", STAMPS_DTYPE),
    ("omdp_record_header_t", RECORD_HEADER_DTYPE),
    ("omdp_opra_msg_t", OPRA_MSG_DTYPE),
    ("omdp_opra_y_entry_t", OPRA_Y_ENTRY_DTYPE),
]


@pytest.mark.parametrize("ctype,dtype", PAIRS, ids=[p[0] for p in PAIRS])
def test_size_and_offsets_match(ctype: str, dtype: np.dtype) -> None:
    assert ffi.sizeof(ctype) == dtype.itemsize
    c_fields = [name for name, _ in ffi.typeof(ctype).fields]
    assert c_fields == list(dtype.names)
    for name in dtype.names:
        assert ffi.offsetof(ctype, name) == dtype.fields[name][1], name
        assert ffi.sizeof(ffi.typeof(ctype).fields[[n for n, _ in ffi.typeof(ctype).fields].index(name)][1].type) == dtype.fields[name][0].itemsize, name


def test_pinned_sizes() -> None:
    assert RECORD_HEADER_SIZE == lib.OMDP_RECORD_HEADER_SIZE == 56
    assert OPRA_MSG_DTYPE.itemsize == lib.OMDP_OPRA_MSG_SIZE == 256
    assert OPRA_MSG_DTYPE.itemsize % 8 == 0
    assert ffi.alignof("omdp_opra_msg_t") == 8
