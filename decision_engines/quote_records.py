"""Build OPRA quote records ('k') from columns: for tests, benchmarks and custom-engine users
who want to drive an engine without a capture. Vectorized: one numpy assignment per field.

Only what a decision engine reads is filled in beyond the header: category, participant,
series (root, expiry, strike, put/call), normalized and raw bid/offer with sizes, the BBO
indicator with its appendages, sequence numbers, line and underlying id. Raw prices are
written in cents (premium denominator 'B') when the normalized price is a whole cent.
"""
from __future__ import annotations

import numpy as np

from feedhandlers.opra_record import OPRA_MSG_DTYPE, PRICE_SCALE
from omdp.record import RT_OPRA_MSG

CENT = PRICE_SCALE // 100


def build_quotes(
    *,
    root: np.ndarray | bytes,
    expiry: np.ndarray | int,
    strike_px: np.ndarray | int,
    put_call: np.ndarray | bytes,
    participant: np.ndarray | bytes,
    bid_px: np.ndarray | int,
    bid_size: np.ndarray | int,
    offer_px: np.ndarray | int,
    offer_size: np.ndarray | int,
    underlying_id: np.ndarray | int = 0,
    bbo_ind: np.ndarray | bytes = b" ",
    best_bid_part: np.ndarray | bytes = b"\0",
    best_bid_px: np.ndarray | int = 0,
    best_bid_size: np.ndarray | int = 0,
    best_offer_part: np.ndarray | bytes = b"\0",
    best_offer_px: np.ndarray | int = 0,
    best_offer_size: np.ndarray | int = 0,
    msg_seq: np.ndarray | int | None = None,
    line: np.ndarray | int = 1,
    time: np.ndarray | int = 93000000,
    n: int | None = None,
) -> np.ndarray:
    """An OPRA_MSG_DTYPE array of quotes; every argument is a scalar or a length-n column.

    ``root`` is the 6-byte record root (e.g. b"JPM  "); single characters (put_call,
    participant, bbo_ind, *_part) are bytes of length 1 or uint8 columns.
    """
    given = dict(locals())
    lengths = {len(v) for k, v in given.items() if k != "n" and isinstance(v, np.ndarray) and v.ndim > 0}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    size = n if n is not None else (lengths.pop() if lengths else 1)
    rec = np.zeros(size, dtype=OPRA_MSG_DTYPE)
    rec["hdr"]["type"] = RT_OPRA_MSG
    rec["hdr"]["length"] = OPRA_MSG_DTYPE.itemsize
    rec["category"] = ord("k")
    rec["msg_type"] = ord(" ")
    rec["session"] = ord(" ")
    rec["root"] = root
    rec["root_len"] = np.char.str_len(np.char.rstrip(np.asarray(rec["root"]), b"\0")) if size else 0
    rec["expiry"] = expiry
    rec["expiry_year"] = (rec["expiry"] // 10000) % 100
    rec["expiry_day"] = rec["expiry"] % 100
    rec["strike_px"] = strike_px
    rec["put_call"] = _chars(put_call, size)
    month = (rec["expiry"] // 100) % 100
    rec["month_code"] = np.where(rec["put_call"] == ord("P"), ord("M"), ord("A")) + np.maximum(month, 1) - 1
    rec["participant"] = _chars(participant, size)
    rec["bid_px"] = bid_px
    rec["bid_size"] = bid_size
    rec["offer_px"] = offer_px
    rec["offer_size"] = offer_size
    rec["premium_den"] = ord("B")
    whole = (rec["bid_px"] % CENT == 0) & (rec["offer_px"] % CENT == 0) & (rec["bid_px"] >= 0) & (rec["offer_px"] >= 0)
    rec["bid"] = np.where(whole, rec["bid_px"] // CENT, 0)
    rec["offer"] = np.where(whole, rec["offer_px"] // CENT, 0)
    rec["bbo_ind"] = _chars(bbo_ind, size)
    rec["best_bid_part"] = _chars(best_bid_part, size)
    rec["best_bid_px"] = best_bid_px
    rec["best_bid_size"] = best_bid_size
    rec["best_offer_part"] = _chars(best_offer_part, size)
    rec["best_offer_px"] = best_offer_px
    rec["best_offer_size"] = best_offer_size
    rec["underlying_id"] = underlying_id
    rec["line"] = line
    rec["time"] = time
    rec["msg_seq"] = np.arange(1, size + 1) if msg_seq is None else msg_seq
    return rec


def _chars(v: np.ndarray | bytes, size: int) -> np.ndarray:
    """One character per record as uint8, from bytes (b"C", or b"CPC" per record) or codes."""
    if isinstance(v, (bytes, bytearray)):
        arr = np.frombuffer(bytes(v), dtype=np.uint8)
        return np.broadcast_to(arr if len(arr) != 1 else arr[0], (size,)).astype(np.uint8)
    arr = np.asarray(v)
    if arr.dtype.kind == "S":
        return np.frombuffer(arr.astype("S1").tobytes(), dtype=np.uint8).reshape(arr.shape)
    return arr.astype(np.uint8)
