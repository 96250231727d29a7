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

def copy_records(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[:] = src for structured records of one dtype, as bytes when both are contiguous:
    numpy assigns structured arrays field by field (3-9x slower; a sixth of a replay
    task's CPU and most of a pricing publish went there)."""
    if dst.dtype == src.dtype and dst.flags.c_contiguous and src.flags.c_contiguous:
        dst.view(np.uint8)[:] = src.view(np.uint8)
    else:
        dst[:] = src


def copy_rows(dst: np.ndarray, src: np.ndarray, rows: np.ndarray) -> None:
    """dst[rows] = src[rows] for structured records of one dtype, each row copied as bytes
    (a structured fancy assignment goes field by field)."""
    if dst.dtype != src.dtype:
        raise TypeError(f"copy_rows: {dst.dtype} into {src.dtype}")
    raw = np.dtype((np.void, dst.dtype.itemsize))
    dst.view(raw)[rows] = src.view(raw)[rows]


RF_SAMPLED = 0x1
RF_SIGNAL = 0x2
RF_LAST_IN_PACKET = 0x4
