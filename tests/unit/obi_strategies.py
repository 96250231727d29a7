"""Hypothesis strategies for OBI blocks: valid messages of every category as records (raw
wire values only; the decoder derives the rest), a block header, and the side buffer their
text and extras live in. Shared by the round-trip and fuzz tests."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from feedhandlers.opra_fast import new_records
from feedhandlers.opra_obi import EXTRA_SIZE, WIRE_EXTRA, WIRE_FEED, WIRE_OBI, WIRE_SHORT, new_header
from feedhandlers.opra_obi_errors import OBI_EXTRA_DTYPE

INDICATORS = b" ABCDEFGHIJKLMNOP"
"""The 17 BBO indicator values of spec 7.6."""
BASE = {"a": 43, "d": 30, "f": 72, "k": 43, "q": 29, "C": 14, "H": 12, "R": 155, "Y": 27}
APPENDAGE = {ord("O"): 20, **{ord(x): 10 for x in "CGKMNP"}}

RAW_COLUMNS = (
    "participant", "category", "msg_type", "bbo_ind", "root", "month_code", "expiry_day", "expiry_year", "strike_den",
    "strike", "volume", "open_interest", "premium_den", "premium", "open", "high", "low", "last", "net_change",
    "net_change_ind", "underlying_den", "underlying_raw", "bid", "bid_size", "offer", "offer_size", "best_bid_part",
    "best_bid_den", "best_bid", "best_bid_size", "best_offer_part", "best_offer_den", "best_offer", "best_offer_size",
    "wire", "var_len",
)
"""Record columns that carry wire values: a decoded record must give them back exactly."""

u8 = st.integers(0, 255)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 0xFFFFFFFF)
# ids are mostly 0 on the real feed; sometimes not, to carry the extras
maybe_u32 = st.one_of(st.just(0), u32)


@dataclass
class Msg:
    """One message: its record fields and, for 'C', its text; extras (txn_id, prn, trade_id)."""

    fields: dict[str, object]
    text: bytes
    extra: tuple[int, int, int]

    @property
    def wire_len(self) -> int:
        cat = "q" if self.fields["category"] == ord("k") and int(self.fields["wire"]) & WIRE_SHORT else chr(int(self.fields["category"]))  # type: ignore[arg-type]
        n = BASE[cat] + len(self.text)
        return n + APPENDAGE.get(int(self.fields["bbo_ind"]), 0) if cat in "kq" else n  # type: ignore[arg-type]


@st.composite
def message(draw: st.DrawFn, categories: str = "adfkqCHRY") -> Msg:
    cat = draw(st.sampled_from(categories))
    f: dict[str, object] = {"participant": draw(u8), "msg_type": draw(u8), "bbo_ind": draw(u8), "wire": WIRE_OBI}
    short = cat == "q"
    f["category"] = ord("k") if short else ord(cat)
    if short:
        f["wire"] = WIRE_OBI | WIRE_SHORT
    if cat in "kq":
        f["bbo_ind"] = draw(st.one_of(st.sampled_from(list(INDICATORS)), u8))
    if cat == "Y":
        f["msg_type"] = draw(st.one_of(st.sampled_from([ord(" "), ord("I")]), u8))
    if cat in "adfkqR":
        width = 4 if short else 5
        sym = bytes(draw(st.lists(u8, min_size=width, max_size=width)))
        f["root"] = sym + b" " * (5 - width)
        f.update(month_code=draw(u8), expiry_day=draw(u8), expiry_year=draw(u8))
        f["strike_den"] = ord("A") if short else draw(u8)
        f["strike"] = draw(u16 if short else u32)
    if cat == "Y":
        f["root"] = bytes(draw(st.lists(u8, min_size=5, max_size=5)))
        f["underlying_den"] = draw(u8)
        if f["msg_type"] == ord("I"):
            f.update(bid=draw(u32), offer=draw(u32))
        else:
            f["underlying_raw"] = draw(st.integers(-(2**31), 2**31 - 1)) % 2**64
    if cat in "kq":
        size = u16 if short else u32
        f["premium_den"] = ord("B") if short else draw(u8)
        f.update(bid=draw(size), bid_size=draw(size), offer=draw(size), offer_size=draw(size))
        ind = int(f["bbo_ind"])  # type: ignore[arg-type]
        if APPENDAGE.get(ind) == 20 or ind in b"MNP":
            f.update(best_bid_part=draw(u8), best_bid_den=draw(u8), best_bid=draw(u32), best_bid_size=draw(u32))
        if APPENDAGE.get(ind) == 20 or ind in b"CGK":
            f.update(best_offer_part=draw(u8), best_offer_den=draw(u8), best_offer=draw(u32), best_offer_size=draw(u32))
    if cat == "a":
        f.update(volume=draw(u32), premium_den=draw(u8), premium=draw(u32))
    if cat == "d":
        f["open_interest"] = draw(u32)
    if cat == "f":
        f.update(volume=draw(u32), open_interest=draw(u32), premium_den=draw(u8), open=draw(u32), high=draw(u32),
                 low=draw(u32), last=draw(u32), underlying_den=draw(u8), underlying_raw=draw(st.integers(0, 2**64 - 1)),
                 bid=draw(u32), offer=draw(u32))
        nc = draw(st.integers(-(2**31), 2**31 - 1))
        f["net_change"] = abs(nc)
        f["net_change_ind"] = ord("-") if nc < 0 else ord("+") if nc > 0 else ord(" ")
    if cat == "R":
        f["volume"] = draw(u16)  # the mapped line
    text = b""
    if cat == "C":
        text = bytes(draw(st.lists(st.integers(0x20, 0x7E), max_size=200)))
    extra = (draw(maybe_u32), draw(maybe_u32), draw(maybe_u32) if cat == "a" else 0)
    return Msg(f, text, extra)


@dataclass
class Built:
    """A block's header row, records and side buffer, and the extras of each record."""

    header: np.void
    records: np.ndarray
    side: bytes
    extras: list[tuple[int, int, int]]


def to_records(header: np.void, msgs: list[Msg]) -> Built:
    recs = new_records(len(msgs))
    side = bytearray()
    for i, m in enumerate(msgs):
        for k, v in m.fields.items():
            recs[i][k] = v
        if "root" in m.fields:
            recs[i]["root_len"] = 5
        if header["feed"] != ord("O"):
            recs[i]["wire"] |= WIRE_FEED  # the decoder flags every message of such a block (spec Q13)
        if m.text or any(m.extra):
            recs[i]["var_off"] = len(side)
        if m.fields["category"] == ord("C"):
            recs[i]["var_len"] = len(m.text)
            side += m.text
        if any(m.extra):
            recs[i]["wire"] |= WIRE_EXTRA
            side += np.array([m.extra], dtype=OBI_EXTRA_DTYPE).tobytes()
            assert OBI_EXTRA_DTYPE.itemsize == EXTRA_SIZE
    return Built(header, recs, bytes(side), [m.extra for m in msgs])


@st.composite
def header(draw: st.DrawFn) -> np.void:
    return new_header(block_seq=draw(st.one_of(u32, st.integers(2**32 - 300, 2**32 - 1))), ts_sec=draw(u32),
                      ts_nsec=draw(st.integers(0, 999_999_999)), session=draw(st.sampled_from([0, 1, 2, 3, 4, 5, 0x58])),
                      retrans=draw(st.sampled_from([b" ", b"V"])), feed=draw(st.sampled_from([b"O", b"O", b"X"])))


@st.composite
def block(draw: st.DrawFn, max_messages: int = 12) -> Built:
    """A valid block: 'C' and 'H' alone, at most 1,000 bytes with the pad byte."""
    first = draw(message())
    msgs = [first]
    if chr(int(first.fields["category"])) not in "CH":  # type: ignore[arg-type]
        size = 21 + first.wire_len
        for _ in range(draw(st.integers(0, max_messages - 1))):
            m = draw(message("adfkqRY"))
            if size + m.wire_len + 1 > 1000:
                break
            msgs.append(m)
            size += m.wire_len
    return to_records(draw(header()), msgs)
