"""The record header every omdp record starts with, as a numpy dtype.

Twin of ``native/include/omdp/record.h``; tests/unit/test_record_layout.py pins the two.
"""
from __future__ import annotations

import numpy as np

HOPS: tuple[str, ...] = ("intended", "fh_in", "fh_out", "de_in", "de_out", "mc_in")
"""The six stamps, in the order of the stamp block."""

STAMPS_DTYPE = np.dtype([(h, "<i8") for h in HOPS])

RECORD_HEADER_DTYPE = np.dtype(
    [("type", "<u2"), ("length", "<u2"), ("flags", "<u4"), ("stamps", STAMPS_DTYPE)], align=True
)
RECORD_HEADER_SIZE = RECORD_HEADER_DTYPE.itemsize

RT_OPRA_MSG = 1
RT_SIGNAL = 2
RT_BENCH = 3
RT_SEQ = 4
RT_RESHARD = 5  # a re-sharding marker (omdp.runtime.reshard)

RF_SAMPLED = 0x1
RF_SIGNAL = 0x2
RF_LAST_IN_PACKET = 0x4
