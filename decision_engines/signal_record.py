"""The signal record as a numpy dtype: the twin of ``native/include/omdp/signal.h``.

An engine appends one signal record per anomaly to its output, beside the sampled messages;
the latency collector stamps it like a sample and writes it to ``signals.parquet``.
tests/unit/test_engine_layout.py pins every offset against the C struct.
"""
from __future__ import annotations

import numpy as np

from omdp.record import RECORD_HEADER_DTYPE

SIG_CROSSED = 1
SIG_LOCKED = 2
SIG_OFF_SMILE = 3
SIG_PARITY = 4
SIG_CUSTOM = 128
"""Kinds 1..4 are the built-in checks; custom engines use SIG_CUSTOM and above."""

SIGNAL_KIND_NAMES: dict[int, str] = {
    SIG_CROSSED: "crossed",
    SIG_LOCKED: "locked",
    SIG_OFF_SMILE: "off_smile",
    SIG_PARITY: "parity",
}
"""Names as written to the ``kind`` column of signals.parquet."""


def signal_kind_name(kind: int) -> str:
    """Name of a signal kind: a built-in name, or ``custom<N>`` for kind >= SIG_CUSTOM."""
    if kind in SIGNAL_KIND_NAMES:
        return SIGNAL_KIND_NAMES[kind]
    return f"custom{kind - SIG_CUSTOM}" if kind >= SIG_CUSTOM else f"unknown{kind}"


SIGNAL_DTYPE = np.dtype(
    [
        ("hdr", RECORD_HEADER_DTYPE),
        ("block_seq", "<u8"),
        ("msg_seq", "<u8"),
        ("strike_px", "<i8"),
        ("bid_px", "<i8"),
        ("offer_px", "<i8"),
        ("ref_lo", "<i8"),
        ("ref_hi", "<i8"),
        ("value", "<f8"),
        ("time", "<u4"),
        ("expiry", "<u4"),
        ("underlying_id", "<u4"),
        ("line", "<u2"),
        ("engine", "<u2"),
        ("kind", "u1"),
        ("put_call", "u1"),
        ("participant", "u1"),
        ("root_len", "u1"),
        ("root", "S6"),
        ("bid_part", "u1"),
        ("offer_part", "u1"),
        ("reserved", "u1", (4,)),
    ],
    align=True,
)
SIGNAL_SIZE = SIGNAL_DTYPE.itemsize
