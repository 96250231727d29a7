"""The record header every omdp record starts with, as a numpy dtype.

Read from ``native/include/omdp/record.h`` through the compiled module (omdp.c_layout).
"""
from __future__ import annotations

import numpy as np

from omdp.c_layout import c_dtype
from omdp.native import lib

STAMPS_DTYPE = c_dtype("omdp_stamps_t")

HOPS: tuple[str, ...] = STAMPS_DTYPE.names
"""The six stamps, in the order of the stamp block."""

RECORD_HEADER_DTYPE = c_dtype("omdp_record_header_t")
RECORD_HEADER_SIZE = RECORD_HEADER_DTYPE.itemsize

RT_OPRA_MSG = int(lib.OMDP_RT_OPRA_MSG)
RT_SIGNAL = int(lib.OMDP_RT_SIGNAL)
RT_BENCH = int(lib.OMDP_RT_BENCH)
RT_SEQ = int(lib.OMDP_RT_SEQ)
RT_RESHARD = int(lib.OMDP_RT_RESHARD)  # a re-sharding marker (omdp.runtime.reshard)

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


RF_SAMPLED = int(lib.OMDP_RF_SAMPLED)
RF_SIGNAL = int(lib.OMDP_RF_SIGNAL)
RF_LAST_IN_PACKET = int(lib.OMDP_RF_LAST_IN_PACKET)
