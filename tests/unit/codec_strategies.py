"""Hypothesis strategies for valid OPRA messages of every category, as records plus their
variable parts, for the codec's round-trip and fuzz tests."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from feedhandlers.opra_fast import build_packet, new_records
from feedhandlers.opra_record import OPRA_Y_ENTRY_DTYPE

ASCII = st.integers(0x20, 0x7E)
ANY7 = st.integers(0, 0x7F)
U8 = st.integers(0, 0xFF)
U32 = st.integers(0, 0xFFFFFFFF)
U35 = st.integers(0, (1 << 35) - 1)
# Small values repeat often, so COPY and INCREMENT get exercised.
SMALL_U32 = st.one_of(st.integers(0, 3), U32)


def ascii_bytes(lo: int, hi: int) -> st.SearchStrategy[bytes]:
    return st.lists(ANY7, min_size=lo, max_size=hi).map(bytes)


HEADER = {
    "msg_type": U8,
    "participant": st.sampled_from(b"ABCIPXO"),
    "retrans": st.sampled_from(b" A"),
    "msg_seq": st.one_of(st.integers(0, 20), U35),
    "time": st.one_of(st.just(93000000), U32),
}
SERIES = {
    "root": st.one_of(st.just(b"IBM  "), ascii_bytes(1, 6)),
    "month_code": st.one_of(st.sampled_from(b"ACLMSX"), U8),
    "expiry_day": st.one_of(st.integers(1, 31), U8),
    "expiry_year": st.one_of(st.integers(0, 99), U8),
    "strike_den": st.one_of(st.sampled_from(b"ABEI"), U8),
    "strike": SMALL_U32,
    "strike_code": U8,
}
BODY = {
    "a": {"volume": SMALL_U32, "premium_den": U8, "premium": SMALL_U32, "session": U8},
    "d": {"open_interest": SMALL_U32},
    "f": {f: SMALL_U32 for f in ("volume", "open_interest", "open", "high", "low", "last", "net_change", "bid", "offer")}
    | {"premium_den": U8, "net_change_ind": U8, "underlying_den": U8, "underlying_raw": U35},
    "k": {f: SMALL_U32 for f in ("bid", "bid_size", "offer", "offer_size")}
    | {"premium_den": st.sampled_from(b"BC"), "session": U8, "bbo_ind": st.sampled_from(b" ABMNPCGKO")},
}
BEST_BID = {"best_bid_part": U8, "best_bid_den": U8, "best_bid": SMALL_U32, "best_bid_size": SMALL_U32}
BEST_OFFER = {"best_offer_part": U8, "best_offer_den": U8, "best_offer": SMALL_U32, "best_offer_size": SMALL_U32}


@st.composite
def message(draw: st.DrawFn, long_text: bool = False) -> dict:
    """One message as a dict: record fields, plus 'text' or 'y' for variable parts."""
    cat = draw(st.sampled_from("kkkkaadfYYCH?"))
    text_max = 450 if long_text else 200
    if cat == "?":
        return {"category": ord("?"), "text": draw(ascii_bytes(1, text_max))}
    m = {"category": ord(cat)} | {k: draw(v) for k, v in HEADER.items()}
    if cat in "CH":
        m["text"] = draw(ascii_bytes(0 if cat == "H" else 1, text_max))
    elif cat == "Y":
        ytype = draw(st.sampled_from(b" IFC"))
        m["msg_type"] = ytype
        n = draw(st.integers(0, 5))
        y = np.zeros(n, dtype=OPRA_Y_ENTRY_DTYPE)
        for e in range(n):
            sym = draw(ascii_bytes(1, 4))
            y[e]["symbol"], y[e]["symbol_len"] = sym, len(sym)
            if ytype in b"FC":
                y[e]["decimals"], y[e]["spot"] = draw(U8), draw(SMALL_U32)
            else:
                val = draw(ascii_bytes(1, 8))
                y[e]["value"], y[e]["value_len"] = val, len(val)
                if ytype == ord("I"):
                    off = draw(ascii_bytes(1, 8))
                    y[e]["offer"], y[e]["offer_len"] = off, len(off)
        m["y"] = y
    else:
        m |= {k: draw(v) for k, v in SERIES.items()}
        m |= {k: draw(v) for k, v in BODY[cat].items()}
        if cat == "k":
            kind = {b"M": 1, b"N": 1, b"P": 1, b"C": 2, b"G": 2, b"K": 2, b"O": 3}.get(bytes([m["bbo_ind"]]), 0)
            if kind & 1:
                m |= {k: draw(v) for k, v in BEST_BID.items()}
            if kind & 2:
                m |= {k: draw(v) for k, v in BEST_OFFER.items()}
    return m


def to_records(msgs: list[dict]):
    """Records + side for a list of message dicts (via build_packet)."""
    rec = new_records(len(msgs))
    texts: dict[int, bytes] = {}
    ys: dict[int, np.ndarray] = {}
    for i, m in enumerate(msgs):
        for k, v in m.items():
            if k == "text":
                texts[i] = v
            elif k == "y":
                ys[i] = v
            elif k == "root":
                rec[i]["root"], rec[i]["root_len"] = v, len(v)
            else:
                rec[i][k] = v
    return build_packet(rec, texts, ys)


@st.composite
def packet_messages(draw: st.DrawFn, max_size: int = 12) -> list[dict]:
    """Messages that one packet can hold: an 'H' without text only before any text in the
    packet (else COPY would repeat the text), and only the last message may be long."""
    msgs = draw(st.lists(message(), min_size=1, max_size=max_size))
    msgs[-1] = draw(message(long_text=True))
    seen_text = False
    for m in msgs:
        if chr(m["category"]) in "CH":
            if not m["text"] and seen_text:
                m["text"] = b"X"
            seen_text |= bool(m["text"])
    return msgs


@st.composite
def stream_messages(draw: st.DrawFn, max_size: int = 60) -> list[dict]:
    """Any run of messages: the stream encoder cuts packets where they must be cut."""
    return draw(st.lists(message(long_text=True), min_size=1, max_size=max_size))
