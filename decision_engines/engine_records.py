"""numpy twins of the engine's exchange structs with pricing (engine.h): series snapshots,
groups and the per-series limits the hot path reads. Pinned by tests/unit/test_engine_layout.py."""
from __future__ import annotations

import numpy as np

NO_SLOT = 0xFFFFFFFF
"""``twin`` / ``group`` of a series without one."""

EXCHANGES = b"ABCIPX"
"""The six exchanges of February 2008, in the engine's lane order."""

SERIES_INFO_DTYPE = np.dtype(
    [
        ("strike_px", "<i8"),
        ("bid_px", "<i8"),
        ("offer_px", "<i8"),
        ("bid_size", "<u4"),
        ("offer_size", "<u4"),
        ("expiry", "<u4"),
        ("underlying_id", "<u4"),
        ("group", "<u4"),
        ("twin", "<u4"),
        ("put_call", "u1"),
        ("bid_part", "u1"),
        ("offer_part", "u1"),
        ("root_len", "u1"),
        ("root", "S6"),
        ("reserved", "u1", (6,)),
    ],
    align=True,
)

NBBO_CHANGE_DTYPE = np.dtype(
    [
        ("ts_ns", "<i8"),
        ("bid_px", "<i8"),
        ("offer_px", "<i8"),
        ("strike_px", "<i8"),
        ("msg_seq", "<u8"),
        ("bid_size", "<u4"),
        ("offer_size", "<u4"),
        ("expiry", "<u4"),
        ("underlying_id", "<u4"),
        ("slot", "<u4"),
        ("line", "<u2"),
        ("bid_part", "u1"),
        ("offer_part", "u1"),
        ("quote_part", "u1"),
        ("put_call", "u1"),
        ("root_len", "u1"),
        ("root", "S6"),
        ("reserved", "u1", (7,)),
    ],
    align=True,
)
"""``omdp_engine_nbbo_t`` (engine_nbbo.h): a series' NBBO after a quote that changed it."""

GROUP_INFO_DTYPE = np.dtype([("underlying_id", "<u4"), ("expiry", "<u4")], align=True)

SERIES_REF_DTYPE = np.dtype(
    [("band_lo", "<i8"), ("band_hi", "<i8"), ("parity_lo", "<i8"), ("parity_hi", "<i8")], align=True
)
GROUP_REF_DTYPE = np.dtype(
    [("forward", "<f8"), ("discount", "<f8"), ("years", "<f8"), ("smile_a", "<f8"), ("smile_b", "<f8"),
     ("smile_c", "<f8"), ("k_min", "<f8"), ("k_max", "<f8"), ("band_abs", "<f8"), ("band_rel", "<f8"),
     ("band_vol", "<f8"), ("parity_tol", "<f8"), ("has_smile", "<u4"), ("reserved", "<u4")],
    align=True,
)
"""A group's model, with which the hot path prices a series first seen after a refresh."""

REF_DISABLED_LO = np.iinfo(np.int64).min
REF_DISABLED_HI = np.iinfo(np.int64).max
"""A limit at these values disables its check."""
