"""Today's messages as OPRA message records with the OBI wire bits set, so the codec's
encoder writes them as OBI messages: quotes go as short quotes ('q') where spec 7.5 allows
(symbol of at most 4 characters, strike a multiple of 0.1 up to 6,553.5, prices and sizes
in 16 bits), else as long quotes ('k'); last sales 'a', underlying values 'Y', 'C' and 'H'.
"""
from __future__ import annotations

import numpy as np

from feedhandlers.opra_fast import new_records
from feedhandlers.opra_obi import WIRE_OBI, WIRE_SHORT
from ops.synth.today.book import AppliedQuotes
from ops.synth.today.universe import EXCHANGE_CODES, TodayUniverse

CENTS = ord("B")
THOUSANDTHS = ord("C")
TENTHS = ord("A")
SPACE = ord(" ")
OPRA = ord("O")
EXCH_BYTES = np.frombuffer(EXCHANGE_CODES.encode() + b" ", dtype=np.uint8)
"""Exchange index -> participant code; the last entry (index NO_EXCH clipped) unused."""


class TodayRecords:
    """Builds records from per-series columns (no per-series templates: a million series
    of 256-byte records would be 256 MB)."""

    def __init__(self, uni: TodayUniverse) -> None:
        self.uni = uni
        roots = np.array([s.encode() for s in uni.root_symbol], dtype="S6")
        self.ser_root_bytes = roots[uni.ser_root]
        self.ser_root_len = np.array([len(s) for s in uni.root_symbol], dtype=np.uint8)[uni.ser_root]
        k = uni.ser_strike_milli
        self.ser_short_ok = (self.ser_root_len <= 4) & (k % 100 == 0) & (k // 100 <= 0xFFFF)

    def _series(self, rec: np.ndarray, s: np.ndarray) -> None:
        u = self.uni
        rec["root"] = self.ser_root_bytes[s]
        rec["root_len"] = self.ser_root_len[s]
        rec["month_code"] = u.ser_month_code[s]
        rec["expiry_day"] = u.ser_day[s]
        rec["expiry_year"] = u.ser_year[s]
        rec["expiry"] = u.ser_expiry[s]
        rec["put_call"] = np.where(u.ser_put[s], ord("P"), ord("C"))
        rec["strike_px"] = u.ser_strike_milli[s] * 1_000_000

    def quotes(self, s: np.ndarray, exch: np.ndarray, q: AppliedQuotes, time: np.ndarray) -> np.ndarray:
        """Quote records ('k', short where it fits)."""
        rec = new_records(s.shape[0])
        self._series(rec, s)
        short = (self.ser_short_ok[s] & (q.bid <= 0xFFFF) & (q.offer <= 0xFFFF) & (q.bid_size <= 0xFFFF)
                 & (q.offer_size <= 0xFFFF))
        k = self.uni.ser_strike_milli[s]
        rec["category"] = ord("k")
        rec["msg_type"] = SPACE
        rec["participant"] = EXCH_BYTES[exch]
        rec["bbo_ind"] = q.bbo_ind
        rec["wire"] = np.where(short, WIRE_OBI | WIRE_SHORT, WIRE_OBI)
        rec["strike_den"] = np.where(short, TENTHS, THOUSANDTHS)
        rec["strike"] = np.where(short, k // 100, k)
        rec["premium_den"] = CENTS
        rec["bid"], rec["bid_size"], rec["offer"], rec["offer_size"] = q.bid, q.bid_size, q.offer, q.offer_size
        rec["bid_px"] = q.bid.astype(np.int64) * 10_000_000
        rec["offer_px"] = q.offer.astype(np.int64) * 10_000_000
        bst = (q.bbo_ind.astype(np.int64) - ord("A")) >> 2
        ost = (q.bbo_ind.astype(np.int64) - ord("A")) & 3
        bapp, oapp = bst == 3, ost == 2
        rec["best_bid_part"] = np.where(bapp, EXCH_BYTES[np.minimum(q.bb_exch, len(EXCH_BYTES) - 1)], 0)
        rec["best_bid_den"] = np.where(bapp, CENTS, 0)
        rec["best_bid"] = np.where(bapp, q.bb_price, 0)
        rec["best_bid_size"] = np.where(bapp, q.bb_size, 0)
        rec["best_offer_part"] = np.where(oapp, EXCH_BYTES[np.minimum(q.bo_exch, len(EXCH_BYTES) - 1)], 0)
        rec["best_offer_den"] = np.where(oapp, CENTS, 0)
        rec["best_offer"] = np.where(oapp, q.bo_price, 0)
        rec["best_offer_size"] = np.where(oapp, q.bo_size, 0)
        rec["time"] = time
        return rec

    def trades(self, s: np.ndarray, exch: np.ndarray, price: np.ndarray, volume: np.ndarray, time: np.ndarray) -> np.ndarray:
        """Last sale records ('a', type 'I' as in the spec's example 5)."""
        rec = new_records(s.shape[0])
        self._series(rec, s)
        rec["category"] = ord("a")
        rec["msg_type"] = ord("I")
        rec["participant"] = EXCH_BYTES[exch]
        rec["bbo_ind"] = SPACE
        rec["wire"] = WIRE_OBI
        rec["strike_den"] = THOUSANDTHS
        rec["strike"] = self.uni.ser_strike_milli[s]
        rec["premium_den"] = CENTS
        rec["premium"] = price
        rec["premium_px"] = price.astype(np.int64) * 10_000_000
        rec["volume"] = volume
        rec["time"] = time
        return rec


def underlying_values(symbols: list[bytes], cents: np.ndarray, time: np.ndarray) -> np.ndarray:
    """'Y' records of type ' ' (index value from last sales), denominator 'B'."""
    rec = new_records(len(symbols))
    rec["root"] = np.array(symbols, dtype="S6")
    rec["root_len"] = [len(s) for s in symbols]
    rec["category"] = ord("Y")
    rec["msg_type"] = SPACE
    rec["participant"] = OPRA
    rec["bbo_ind"] = SPACE
    rec["wire"] = WIRE_OBI
    rec["underlying_den"] = CENTS
    rec["underlying_raw"] = cents.astype(np.int64).astype(np.uint64)
    rec["time"] = time
    return rec


def control(msg_type: str, time: int) -> np.ndarray:
    """One 'H' record from OPRA (participant 'O')."""
    rec = new_records(1)
    rec["category"] = ord("H")
    rec["msg_type"] = ord(msg_type)
    rec["participant"] = OPRA
    rec["bbo_ind"] = SPACE
    rec["wire"] = WIRE_OBI
    rec["time"] = time
    return rec


def admin(var_off: int, var_len: int, time: int) -> np.ndarray:
    """One 'C' record from OPRA whose text sits at [var_off, var_off + var_len) of the side buffer."""
    rec = new_records(1)
    rec["category"] = ord("C")
    rec["msg_type"] = SPACE
    rec["participant"] = OPRA
    rec["bbo_ind"] = SPACE
    rec["wire"] = WIRE_OBI
    rec["var_off"] = var_off
    rec["var_len"] = var_len
    rec["time"] = time
    return rec
