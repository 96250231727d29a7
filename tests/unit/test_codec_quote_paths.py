"""The quote fast path (all of a message's fields at once, AVX-512 where the build has it,
else field by field) and the field-by-field path give the same records, side bytes, counters
and errors on runs of quotes shaped like the feed's - most fields copied, a few changed - on
their mutations, and on the values at the edges of what the fast path takes (the widest
fields, the most fields, indicators that need two bytes, messages that end a packet). Named
`codec` so that CI runs it under ASan/UBSan."""
from __future__ import annotations

import numpy as np
import pytest
from codec_strategies import BEST_BID, BEST_OFFER, BODY, HEADER, SERIES, to_records
from codec_support import assert_paths_agree, decode_both_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedhandlers.opra_fast import decode_packet, encode_records

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KIND = {b"M": 1, b"N": 1, b"P": 1, b"C": 2, b"G": 2, b"K": 2, b"O": 3}
WIDE_U8 = st.one_of(st.sampled_from(b"ABCIMNOPGK "), st.integers(0, 0xFF))
WIDE_U32 = st.one_of(st.integers(0, 3), st.sampled_from([0x7F, 0x80, 0x3FFF, 0x4000, 0xFFFFFFFF]),
                     st.integers(0, 0xFFFFFFFF))


def quote(draw: st.DrawFn, wide: bool) -> dict:
    m = {"category": ord("k")} | {k: draw(v) for k, v in HEADER.items()}
    m |= {k: draw(v) for k, v in SERIES.items()}
    m |= {k: draw(v) for k, v in BODY["k"].items()}
    if wide:  # any byte as an indicator or code (two bytes on the wire from 0x80), any size
        m |= {"bbo_ind": draw(WIDE_U8), "premium_den": draw(WIDE_U8), "strike_den": draw(WIDE_U8)}
        m |= {k: draw(WIDE_U32) for k in ("bid", "bid_size", "offer", "offer_size", "strike")}
    kind = KIND.get(bytes([m["bbo_ind"]]), 0)
    if kind & 1:
        m |= {k: draw(v) for k, v in BEST_BID.items()}
    if kind & 2:
        m |= {k: draw(v) for k, v in BEST_OFFER.items()}
    return m


@st.composite
def quote_run(draw: st.DrawFn, max_size: int = 16, wide: bool = False) -> list[dict]:
    """A packet's quotes as the feed sends them: each one changes a few fields of the last
    (prices and sizes nearly always, the series sometimes), so most fields are copied."""
    msgs = [quote(draw, wide)]
    for _ in range(draw(st.integers(0, max_size - 1))):
        fresh = quote(draw, wide)
        changed = draw(st.sets(st.sampled_from(sorted(fresh)), max_size=len(fresh)))
        m = dict(msgs[-1])
        for k in changed | {"bid", "offer"}:
            m[k] = fresh[k]
        m["msg_seq"] = (msgs[-1]["msg_seq"] + 1) % (1 << 35) if draw(st.booleans()) else fresh["msg_seq"]
        for k in list(m):  # appendages only where the (new) indicator has them
            if (k in BEST_BID and not KIND.get(bytes([m["bbo_ind"]]), 0) & 1) or (
                    k in BEST_OFFER and not KIND.get(bytes([m["bbo_ind"]]), 0) & 2):
                del m[k]
        kind = KIND.get(bytes([m["bbo_ind"]]), 0)
        for part, bit in ((BEST_BID, 1), (BEST_OFFER, 2)):
            if kind & bit:
                for k, v in part.items():
                    m.setdefault(k, draw(v))
        msgs.append(m)
    return msgs


def packet(msgs: list[dict]) -> bytes:
    built = to_records(msgs)
    return encode_records(built.records, built.side)


def both_paths(packets: list[bytes]):
    lengths = np.array([len(p) for p in packets], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return decode_both_paths(b"".join(packets), offsets, lengths)


def assert_same(packets: list[bytes]) -> None:
    assert_paths_agree(*both_paths(packets))


def mutate(draw: st.DrawFn, good: bytes) -> bytes:
    data = bytearray(good)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(15, max(15, len(data) - 2)))  # the messages, not the header
        if i >= len(data):
            break
        op = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        if op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = bytes(draw(st.lists(st.integers(0, 255), min_size=1, max_size=6)))
        else:
            del data[i : i + draw(st.integers(1, 6))]
    return bytes(data)


@pytest.mark.full
@SETTINGS
@given(st.lists(quote_run(), min_size=1, max_size=3))
def test_codec_quote_runs_decode_the_same_on_both_paths(runs: list[list[dict]]) -> None:
    packets = [packet(r) for r in runs]
    assert_same(packets)
    fast, _ = both_paths(packets)
    assert fast.counters["packets_bad"] == 0  # valid packets: every quote went through


@pytest.mark.full
@SETTINGS
@given(quote_run(max_size=12, wide=True))
def test_codec_quotes_at_the_edges_decode_the_same_on_both_paths(run: list[dict]) -> None:
    # 5-byte fields, indicators and codes from 0x80 (two bytes), appendages of every kind
    assert_same([packet(run)])


@SETTINGS
@given(st.data())
def test_codec_mutated_quote_runs_fail_or_decode_the_same_on_both_paths(data: st.DataObject) -> None:
    good = packet(data.draw(quote_run(max_size=12)))
    bad = mutate(data.draw, good)
    assert_same([good, bad, good])


def test_codec_first_quote_of_a_packet_uses_more_than_16_fields_and_a_window_at_the_end() -> None:
    # The first quote of a packet sends every field (20 and more with appendages); short
    # quotes at the very end of a packet read the padded copy of its tail.
    first = {"category": ord("k"), "msg_type": ord("A"), "participant": ord("C"), "retrans": ord(" "),
             "msg_seq": 123456789, "time": 93000123, "root": b"IBM  ", "month_code": ord("A"), "expiry_day": 19,
             "expiry_year": 8, "strike_den": ord("A"), "strike": 1250, "strike_code": ord("X"),
             "premium_den": ord("B"), "bid": 0xFFFFFFFF, "bid_size": 34359, "offer": 1 << 31, "offer_size": 7,
             "session": ord(" "), "bbo_ind": ord("O"), "best_bid_part": ord("X"), "best_bid_den": ord("C"),
             "best_bid": 1 << 28, "best_bid_size": 3, "best_offer_part": ord("Y"), "best_offer_den": ord("I"),
             "best_offer": 99, "best_offer_size": 1}
    run = [first] + [dict(first, msg_seq=123456790 + i, bid=i) for i in range(12)]
    pkt = packet(run)
    assert_same([pkt])
    recs = decode_packet(pkt).records
    assert recs["fields"][0] == sum(1 << s for s in [*range(13), 15, *range(25, 39)])
    assert recs["best_offer_px"][0] == 99 * 1_000_000_000 and recs["bid"][12] == 11
    assert recs["expiry"][0] == 20080119 and bytes(recs["root"][0]) == b"IBM  " and recs["root_len"][0] == 5


@pytest.mark.parametrize("seq, want", [(b"0000000001", 1), (b"9999999999", 9999999999), (b"12345678 0", 0),
                                       (b"/000000000", 0), (b"000000000:", 0), (b"\xb0\xb0000000000"[:10], 0),
                                       (b"00000000\xff0", 0), (b"0123456789", 123456789)])
def test_codec_block_sequence_is_its_ten_digits_or_zero(seq: bytes, want: int) -> None:
    pkt = bytearray(packet([quote_fixed()]))
    pkt[2:12] = seq
    assert int(decode_packet(bytes(pkt)).records["block_seq"][0]) == want


def quote_fixed() -> dict:
    return {"category": ord("k"), "msg_type": ord("A"), "participant": ord("C"), "retrans": ord(" "), "msg_seq": 1,
            "time": 93000000, "root": b"A", "month_code": ord("M"), "expiry_day": 1, "expiry_year": 9,
            "strike_den": ord("A"), "strike": 5, "strike_code": ord("A"), "premium_den": ord("B"), "bid": 1,
            "bid_size": 2, "offer": 3, "offer_size": 4, "session": ord(" "), "bbo_ind": ord("A")}
