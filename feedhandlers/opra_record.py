"""The OPRA message record as a numpy dtype, read from ``native/include/omdp/opra_msg.h``.

One record per decoded OPRA message, 256 bytes, used from decoder to collector.
The dtype is built from the compiled C struct (omdp.c_layout).
"""
from __future__ import annotations

from omdp.c_layout import c_dtype

PRICE_SCALE = 1_000_000_000
"""Normalized prices (``*_px``) are int64 in units of 1e-9."""

NO_UNDERLYING = 0xFFFFFFFF
"""``underlying_id`` of a message not yet routed."""

OPRA_MSG_DTYPE = c_dtype("omdp_opra_msg_t")

OPRA_Y_ENTRY_DTYPE = c_dtype("omdp_opra_y_entry_t")
