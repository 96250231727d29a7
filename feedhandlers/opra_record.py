"""The OPRA message record as a numpy dtype: the twin of ``native/include/omdp/opra_msg.h``.

One record per decoded OPRA message, 256 bytes, used from decoder to collector.
tests/unit/test_record_layout.py pins every offset against the C struct.
"""
from __future__ import annotations

import numpy as np

from omdp.record import RECORD_HEADER_DTYPE

PRICE_SCALE = 1_000_000_000
"""Normalized prices (``*_px``) are int64 in units of 1e-9."""

NO_UNDERLYING = 0xFFFFFFFF
"""``underlying_id`` of a message not yet routed."""

OPRA_MSG_DTYPE = np.dtype(
    [
        ("hdr", RECORD_HEADER_DTYPE),
        ("block_seq", "<u8"),
        ("msg_seq", "<u8"),
        ("fields", "<u8"),
        ("underlying_raw", "<u8"),
        ("strike_px", "<i8"),
        ("bid_px", "<i8"),
        ("offer_px", "<i8"),
        ("premium_px", "<i8"),
        ("best_bid_px", "<i8"),
        ("best_offer_px", "<i8"),
        ("time", "<u4"),
        ("expiry", "<u4"),
        ("underlying_id", "<u4"),
        ("strike", "<u4"),
        ("volume", "<u4"),
        ("open_interest", "<u4"),
        ("premium", "<u4"),
        ("open", "<u4"),
        ("high", "<u4"),
        ("low", "<u4"),
        ("last", "<u4"),
        ("net_change", "<u4"),
        ("bid", "<u4"),
        ("bid_size", "<u4"),
        ("offer", "<u4"),
        ("offer_size", "<u4"),
        ("best_bid", "<u4"),
        ("best_bid_size", "<u4"),
        ("best_offer", "<u4"),
        ("best_offer_size", "<u4"),
        ("var_off", "<u4"),
        ("var_len", "<u2"),
        ("line", "<u2"),
        ("index", "<u2"),
        ("y_count", "<u2"),
        ("category", "u1"),
        ("msg_type", "u1"),
        ("participant", "u1"),
        ("retrans", "u1"),
        ("month_code", "u1"),
        ("expiry_day", "u1"),
        ("expiry_year", "u1"),
        ("strike_den", "u1"),
        ("strike_code", "u1"),
        ("premium_den", "u1"),
        ("net_change_ind", "u1"),
        ("underlying_den", "u1"),
        ("session", "u1"),
        ("bbo_ind", "u1"),
        ("best_bid_part", "u1"),
        ("best_bid_den", "u1"),
        ("best_offer_part", "u1"),
        ("best_offer_den", "u1"),
        ("put_call", "u1"),
        ("root_len", "u1"),
        ("root", "S6"),
        ("wire", "u1"),
        ("reserved", "u1"),
    ],
    align=True,
)

OPRA_Y_ENTRY_DTYPE = np.dtype(
    [
        ("symbol", "S4"),
        ("value", "S8"),
        ("offer", "S8"),
        ("spot", "<u4"),
        ("symbol_len", "u1"),
        ("value_len", "u1"),
        ("offer_len", "u1"),
        ("decimals", "u1"),
        ("reserved", "u1", (4,)),
    ],
    align=True,
)
