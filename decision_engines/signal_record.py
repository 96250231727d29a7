"""The signal record as a numpy dtype, read from ``native/include/omdp/signal.h``.

An engine appends one signal record per anomaly to its output, beside the sampled messages;
the latency collector stamps it like a sample and writes it to ``signals.parquet``.
The dtype is built from the compiled C struct (omdp.c_layout).
"""
from __future__ import annotations

from omdp.c_layout import c_dtype

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


SIGNAL_DTYPE = c_dtype("omdp_signal_t")
SIGNAL_SIZE = SIGNAL_DTYPE.itemsize
