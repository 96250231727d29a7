"""Message assembly: the generator's events as OPRA message records, exactly as the decoder
will produce them from the packets (raw wire values, the slots each category uses in
``fields``, normalized prices, expiry and put/call; every other field zero).

Quotes are the bulk, so a per-series template holds everything a quote of that series
shares (root, expiry, strike, codes, normalized strike) and a chunk's quotes are one
gather of templates plus a few column writes. Records are moved as opaque 256-byte items
(``gather``, ``RECORD_VOID``): numpy copies a structured dtype field by field, some 25
times slower. Variable parts (text, 'Y' entries) are returned as payload bytes; the line
writer places them in its side buffer.
"""
from __future__ import annotations

import numpy as np

from feedhandlers.opra_fast import new_records
from feedhandlers.opra_record import OPRA_MSG_DTYPE, OPRA_Y_ENTRY_DTYPE
from ops.synth.nbbo import BID_APPENDAGE, OFFER_APPENDAGE, bid_of, offer_of
from ops.synth.series import SeriesTable
from ops.synth.universe import EXCHANGES, Universe


def _slots(*ks: int) -> int:
    return sum(1 << k for k in set(ks))


HDR = _slots(0, 1, 2, 3, 4, 5)
SERIES = _slots(6, 7, 8, 9, 10, 11, 12)
FIELDS_K = HDR | SERIES | _slots(15, 25, 26, 27, 28, 29, 30)
FIELDS_BEST_BID = _slots(31, 32, 33, 34)
FIELDS_BEST_OFFER = _slots(35, 36, 37, 38)
FIELDS_A = HDR | SERIES | _slots(13, 15, 16, 29)
FIELDS_D = HDR | SERIES | _slots(14)
FIELDS_F = HDR | SERIES | _slots(13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27)
FIELDS_Y_SPACE = HDR | _slots(39, 41, 42)
FIELDS_Y_FC = HDR | _slots(40, 45, 46, 47)
FIELDS_TEXT = HDR | _slots(48)
"""Slots of each message layout (spec section 5), the decoder's ``fields`` value."""

CENTS = ord("B")
CENTS_MULT = 10_000_000
"""Denominator code 'B' (two decimals) and its multiplier to 1e-9 units."""
DEN_MULT = {ord("A") + i: 10 ** (8 - i) for i in range(8)} | {ord("I"): 1_000_000_000}
EXCHANGE_CODES = np.frombuffer(EXCHANGES.encode(), dtype=np.uint8)
SPACE = ord(" ")
OPRA = ord("O")


RECORD_VOID = np.dtype((np.void, OPRA_MSG_DTYPE.itemsize))
"""A record as an opaque 256-byte item, for bulk copies."""


def as_void(records: np.ndarray) -> np.ndarray:
    """A view of records as opaque items."""
    return records.view(RECORD_VOID)


def as_records(items: np.ndarray) -> np.ndarray:
    """A view of opaque items as records."""
    return items.view(OPRA_MSG_DTYPE)


def gather(records: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``records[idx]`` as a new array, copied as opaque items."""
    return as_records(np.take(as_void(records), idx))


class SeriesRecords:
    """Per-series record templates and the builders of series messages ('k' 'a' 'd' 'f')."""

    def __init__(self, uni: Universe, table: SeriesTable) -> None:
        n = len(table)
        t = new_records(n)
        roots = np.array([r.symbol.ljust(5).encode() for r in uni.roots], dtype="S6")
        den_mult = np.zeros(256, dtype=np.int64)
        for code, mult in DEN_MULT.items():
            den_mult[code] = mult
        t["category"] = ord("k")
        t["msg_type"] = SPACE
        t["retrans"] = SPACE
        if n:
            t["root"] = roots[table.root]
        t["root_len"] = 5
        t["month_code"] = table.month_code
        t["expiry_day"] = table.expiry_day
        t["expiry_year"] = table.expiry_year
        t["strike_den"] = table.strike_den
        t["strike"] = table.strike_raw
        t["strike_code"] = table.strike_code
        t["strike_px"] = table.strike_raw.astype(np.int64) * den_mult[table.strike_den]
        t["expiry"] = table.expiry
        t["put_call"] = np.where(table.is_put, ord("P"), ord("C"))
        t["premium_den"] = CENTS
        t["session"] = SPACE
        t["fields"] = FIELDS_K
        self.template = t

    def _base(self, series: np.ndarray, category: str, fields: int) -> np.ndarray:
        """Records of ``series`` with the header and series fields a ``category`` message
        has: a gather of the quote templates, adjusted for other layouts."""
        r = gather(self.template, series)
        if category != "k":
            r["category"] = ord(category)
            r["fields"] = fields
            if not fields & (1 << 15):
                r["premium_den"] = 0
            if not fields & (1 << 29):
                r["session"] = 0
        return r

    def quotes(self, series: np.ndarray, exch: np.ndarray, time: np.ndarray, bid: np.ndarray, offer: np.ndarray,
               bid_size: np.ndarray, offer_size: np.ndarray, bbo: np.ndarray, bid_state: np.ndarray,
               offer_state: np.ndarray, best_bid: np.ndarray, best_offer: np.ndarray) -> np.ndarray:
        """'k' records; ``best_bid``/``best_offer`` are the NBBO keys after each quote, put in
        the appendages that the BBO states call for."""
        r = self._base(series, "k", FIELDS_K)
        r["participant"] = EXCHANGE_CODES[exch]
        r["time"] = time
        r["bid"] = bid
        r["bid_size"] = bid_size
        r["offer"] = offer
        r["offer_size"] = offer_size
        r["bid_px"] = bid.astype(np.int64) * CENTS_MULT
        r["offer_px"] = offer.astype(np.int64) * CENTS_MULT
        r["bbo_ind"] = bbo
        app_b = np.flatnonzero(bid_state == BID_APPENDAGE)
        if app_b.size:
            price, size, exch_b = bid_of(best_bid[app_b])
            _set_best(r, app_b, "best_bid", exch_b, price, size)
            r["fields"][app_b] |= FIELDS_BEST_BID
        app_o = np.flatnonzero(offer_state == OFFER_APPENDAGE)
        if app_o.size:
            price, size, exch_o = offer_of(best_offer[app_o])
            _set_best(r, app_o, "best_offer", exch_o, price, size)
            r["fields"][app_o] |= FIELDS_BEST_OFFER
        return r

    def trades(self, series: np.ndarray, exch: np.ndarray, time: np.ndarray, price: np.ndarray, volume: np.ndarray,
               sale: np.ndarray) -> np.ndarray:
        """'a' last sales."""
        r = self._base(series, "a", FIELDS_A)
        r["msg_type"] = sale
        r["participant"] = EXCHANGE_CODES[exch]
        r["time"] = time
        r["volume"] = volume
        r["premium"] = price
        r["premium_px"] = price.astype(np.int64) * CENTS_MULT
        return r

    def open_interest(self, series: np.ndarray, time: np.ndarray, oi: np.ndarray) -> np.ndarray:
        """'d' open interest, sent by OPRA."""
        r = self._base(series, "d", FIELDS_D)
        r["participant"] = OPRA
        r["time"] = time
        r["open_interest"] = oi
        return r

    def summaries(self, series: np.ndarray, time: np.ndarray, volume: np.ndarray, oi: np.ndarray, ohlc: np.ndarray,
                  net_change: np.ndarray, underlying_cents: np.ndarray, bid: np.ndarray, offer: np.ndarray) -> np.ndarray:
        """'f' end-of-day summaries; ``ohlc`` is [n, 4] cents, ``net_change`` signed cents."""
        r = self._base(series, "f", FIELDS_F)
        r["participant"] = OPRA
        r["time"] = time
        r["volume"] = volume
        r["open_interest"] = oi
        for i, name in enumerate(("open", "high", "low", "last")):
            r[name] = ohlc[:, i]
        r["net_change_ind"] = np.where(net_change > 0, ord("+"), np.where(net_change < 0, ord("-"), SPACE))
        r["net_change"] = np.abs(net_change)
        r["underlying_den"] = CENTS
        r["underlying_raw"] = underlying_cents
        r["bid"] = bid
        r["offer"] = offer
        r["bid_px"] = bid.astype(np.int64) * CENTS_MULT
        r["offer_px"] = offer.astype(np.int64) * CENTS_MULT
        return r


def _set_best(r: np.ndarray, idx: np.ndarray, side: str, exch: np.ndarray, price: np.ndarray, size: np.ndarray) -> None:
    r[side + "_part"][idx] = EXCHANGE_CODES[exch]
    r[side + "_den"][idx] = CENTS
    r[side][idx] = price
    r[side + "_size"][idx] = size
    r[side + "_px"][idx] = price.astype(np.int64) * CENTS_MULT


def text_message(category: str, msg_type: str, participant: str, time: int, text: bytes) -> tuple[np.ndarray, bytes]:
    """One 'C' (administrative) or 'H' (control) message and its text."""
    if category not in ("C", "H"):
        raise ValueError(f"text messages are 'C' or 'H', not {category!r}")
    r = new_records(1)
    r["category"] = ord(category)
    r["msg_type"] = ord(msg_type)
    r["participant"] = ord(participant)
    r["retrans"] = SPACE
    r["time"] = time
    r["fields"] = FIELDS_TEXT
    r["var_len"] = len(text)
    return r, text


def index_values_message(time: int, symbols: list[str], values: list[str]) -> tuple[np.ndarray, bytes]:
    """A 'Y' message of type ' ': index values as 8-character strings ("01380.25")."""
    entries = np.zeros(len(symbols), dtype=OPRA_Y_ENTRY_DTYPE)
    entries["symbol"] = [s.encode() for s in symbols]
    entries["symbol_len"] = [len(s) for s in symbols]
    entries["value"] = [v.encode() for v in values]
    entries["value_len"] = [len(v) for v in values]
    return _y_record(time, " ", FIELDS_Y_SPACE, entries)


def currency_spots_message(time: int, symbols: list[str], decimals: list[int], spots: list[int]) -> tuple[np.ndarray, bytes]:
    """A 'Y' message of type 'F': foreign currency spot values (integer and decimal places)."""
    entries = np.zeros(len(symbols), dtype=OPRA_Y_ENTRY_DTYPE)
    entries["symbol"] = [s.encode() for s in symbols]
    entries["symbol_len"] = [len(s) for s in symbols]
    entries["decimals"] = decimals
    entries["spot"] = spots
    return _y_record(time, "F", FIELDS_Y_FC, entries)


def _y_record(time: int, y_type: str, fields: int, entries: np.ndarray) -> tuple[np.ndarray, bytes]:
    r = new_records(1)
    r["category"] = ord("Y")
    r["msg_type"] = ord(y_type)
    r["participant"] = OPRA
    r["retrans"] = SPACE
    r["time"] = time
    r["fields"] = fields
    r["y_count"] = entries.shape[0]
    r["var_len"] = entries.nbytes
    return r, entries.tobytes()


def empty_records() -> np.ndarray:
    """No records."""
    return np.zeros(0, dtype=OPRA_MSG_DTYPE)
