"""The OBI spec's 18 worked examples (tests/unit/obi_examples.py), decoded to the values the
spec gives for each and re-encoded to the same bytes, checksum and pad byte included."""
from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from obi_examples import EXAMPLES

from feedhandlers.opra_fast import UNDEF_PRICE
from feedhandlers.opra_obi import (
    BLK_PAD,
    WIRE_EXTRA,
    WIRE_OBI,
    WIRE_SHORT,
    checksum,
    decode_block,
    decode_blocks,
    encode_block,
)
from omdp.native import lib
from omdp.record import RF_LAST_IN_PACKET, RT_OPRA_MSG

P = 1_000_000_000  # price scale


def c(ch: str) -> int:
    return ord(ch)


# example -> (block_seq, ts_sec, ts_nsec, checksum, session, retrans, pad)
HEADERS: dict[int, tuple[int, int, int, int, int, str, bool]] = {
    1: (0, 1771828200, 123456789, 0x05B5, 0, " ", True),
    2: (1, 1771857000, 500, 0x13E6, 0, " ", False),
    3: (77, 1771857001, 999999999, 0x1175, 0, " ", False),
    4: (78, 1771857002, 1, 0x0783, 0, " ", False),
    5: (4242, 1771857003, 250000000, 0x109C, 0, " ", True),
    6: (10, 1771846200, 0, 0x06BC, 0, " ", True),
    7: (999000, 1771882500, 42, 0x0F50, 0, " ", True),
    8: (500, 1771857004, 7, 0x0C30, 0, " ", True),
    9: (502, 1771857005, 0, 0x0D1A, 0, " ", False),
    10: (503, 1771857006, 0, 0x043B, 0, " ", True),
    11: (504, 1771857007, 0, 0x0C8A, 0, " ", True),
    12: (7001, 1771857008, 0, 0x0CC2, 0, " ", True),
    13: (1, 1771832000, 0, 0x06E8, 0, " ", False),
    14: (3, 1771857010, 0, 0x037B, 0, " ", True),
    15: (1, 1771857011, 0, 0x0377, 0, " ", True),
    16: (2, 1771857000, 500, 0x08F7, 0, "V", False),
    17: (31, 1771817000, 5, 0x0989, 0x01, " ", False),
    18: (90, 1771818000, 0, 0x0816, 0x58, " ", False),
}

# example -> one dict per message: record field -> expected value (chars as str)
MESSAGES: dict[int, list[dict[str, Any]]] = {
    1: [dict(participant="O", category="H", msg_type="C", time=13000123)],  # 01:30:00.123 EST
    2: [
        dict(participant="C", category="k", msg_type=" ", bbo_ind="A", root=b"AAPL ", month_code="C", expiry=20260320,
             put_call="C", strike_den="C", strike=230000, strike_px=230 * P, premium_den="B", bid=1250, bid_size=10,
             offer=1275, offer_size=25, bid_px=1250 * P // 100, offer_px=1275 * P // 100, time=93000000),
        dict(participant="X", category="k", short=True, bbo_ind="F", root=b"AAPL ", expiry=20260320, put_call="P",
             strike_den="A", strike=2300, strike_px=230 * P, premium_den="B", bid=415, bid_size=12, offer=430, offer_size=40,
             bid_px=415 * P // 100, offer_px=430 * P // 100),
        dict(participant="I", category="k", short=True, bbo_ind="C", expiry=20260320, put_call="C", strike=2350,
             strike_px=235 * P, bid=1010, bid_size=5, offer=1030, offer_size=7, best_offer_part="Z", best_offer_den="B",
             best_offer=1025, best_offer_size=3, best_offer_px=1025 * P // 100, best_bid_part=0),
    ],
    3: [dict(participant="W", category="k", msg_type="A", bbo_ind="O", root=b"SPXW ", month_code="R", expiry=20260618,
             put_call="P", strike_px=5500 * P, bid=1005, bid_size=100, offer=1015, offer_size=250,
             best_bid_part="C", best_bid_den="B", best_bid=1010, best_bid_size=40, best_bid_px=1010 * P // 100,
             best_offer_part="C", best_offer_den="B", best_offer=1012, best_offer_size=35, best_offer_px=1012 * P // 100,
             time=93001999)],
    4: [dict(participant="Q", category="k", short=True, bbo_ind="M", root=b"F    ", expiry=20270115, put_call="C",
             strike=125, strike_px=125 * P // 10, bid=5, bid_size=120, offer=10, offer_size=80, best_bid_part="B",
             best_bid_den="B", best_bid=6, best_bid_size=400, best_bid_px=6 * P // 100, best_offer_part=0)],
    5: [
        dict(participant="C", category="a", msg_type="I", root=b"BRKB ", expiry=20261218, put_call="C", strike_den="A",
             strike=5000, strike_px=500 * P, volume=3, premium_den="B", premium=2575, premium_px=2575 * P // 100),
        dict(participant="V", category="a", msg_type="S", root=b"TSLA ", expiry=20270702, put_call="P", strike_den="C",
             strike=187500, strike_px=1875 * P // 10, volume=150000, premium_den="D", premium=123456,
             premium_px=123456 * P // 10000),
    ],
    6: [dict(participant="G", category="d", root=b"IWM  ", expiry=20260930, put_call="P", strike_px=210 * P,
             open_interest=1234567)],
    7: [dict(participant="N", category="f", root=b"XYZ  ", expiry=20260417, put_call="C", strike_den="B", strike=4250,
             strike_px=4250 * P // 100, volume=812, open_interest=40210, premium_den="B", open=310, high=355, low=290,
             last=298, net_change=27, net_change_ind="-", underlying_den="D", underlying_raw=443125, bid=295, offer=301,
             bid_px=295 * P // 100, offer_px=301 * P // 100)],
    8: [
        dict(participant="C", category="Y", msg_type=" ", root=b"SPX  ", underlying_den="B", underlying_raw=587512),
        dict(participant="C", category="Y", msg_type="I", root=b"VIX  ", underlying_den="B", bid=1502, offer=1511,
             bid_px=1502 * P // 100, offer_px=1511 * P // 100),
    ],
    9: [dict(participant="C", category="C", text=b"FLEX I   SPX   LST 2     250 @ 23.75 5NSX")],
    10: [dict(participant="O", category="C", text=b"")],
    11: [dict(participant="X", category="C", text=b"TRADING HALTED IN ABCD OPTIONS")],
    12: [
        dict(participant="M", category="k", short=True, msg_type="Z", bbo_ind="A", root=b"GE   ", expiry=20260515,
             put_call="C", strike_px=150 * P, bid=210, bid_size=20, offer=225, offer_size=30),
        dict(participant="M", category="k", short=True, msg_type="R", bbo_ind="B", expiry=20260515, put_call="P",
             bid=95, bid_size=10, offer=105, offer_size=10, msg_seq=7002),
    ],
    13: [dict(participant="O", category="R", msg_type="A", root=b"AAPL ", expiry=20260320, put_call="C",
              strike_den="C", strike=230000, strike_px=230 * P, volume=17)],  # volume holds the mapped line
    14: [dict(participant="O", category="H", msg_type="N")],
    15: [dict(participant="O", category="H", msg_type="K")],
    16: [dict(participant="X", category="k", short=True, bbo_ind="F", retrans="V", expiry=20260320, put_call="P",
              bid=415, offer=430)],
    17: [dict(participant="C", category="k", bbo_ind="G", session=0x01, root=b"SPX  ", strike_den="I", strike=6000,
              strike_px=6000 * P, bid=4210, bid_size=11, offer=4290, offer_size=9, best_offer_part="W",
              best_offer_den="B", best_offer=4280, best_offer_size=20, best_offer_px=4280 * P // 100, time=222320000)],
    18: [dict(participant="C", category="k", bbo_ind="L", session=0x58, root=b"SPXW ", put_call="P",
              strike_px=5900 * P, bid=0, bid_size=0, offer=0, offer_size=0, bid_px=0, offer_px=0)],
}


@pytest.mark.parametrize("n", sorted(EXAMPLES))
def test_example_decodes_to_the_spec_values(n: int) -> None:
    data = EXAMPLES[n]
    b = decode_block(data)
    seq, sec, nsec, csum, session, retrans, pad = HEADERS[n]
    h = b.header
    assert (int(h["block_seq"]), int(h["ts_sec"]), int(h["ts_nsec"]), int(h["checksum"])) == (seq, sec, nsec, csum)
    assert int(h["checksum_calc"]) == csum == checksum(data) and b.checksum_ok
    assert (int(h["session"]), chr(h["retrans"]), chr(h["feed"]), int(h["size"])) == (session, retrans, "O", len(data))
    assert bool(int(h["status"]) & BLK_PAD) == pad
    assert len(b) == int(h["count"]) == int(h["msg_count"]) == len(MESSAGES[n])
    for i, want in enumerate(MESSAGES[n]):
        r = b.records[i]
        assert r["hdr"]["type"] == RT_OPRA_MSG and r["hdr"]["length"] == 256
        assert bool(r["hdr"]["flags"] & RF_LAST_IN_PACKET) == (i == len(b) - 1)
        assert (int(r["block_seq"]), int(r["msg_seq"]), int(r["index"])) == (seq, seq + i, i)
        assert int(r["wire"]) & ~WIRE_SHORT == WIRE_OBI  # no extras: every id in the examples is 0
        assert b.extra(i) == (0, 0, 0)
        assert int(r["session"]) == session and chr(r["retrans"]) == retrans
        for field, value in want.items():
            if field == "short":
                assert bool(int(r["wire"]) & WIRE_SHORT) == value
            elif field == "text":
                assert b.text(i) == value
            elif isinstance(value, str):
                assert chr(r[field]) == value, field
            else:
                assert r[field] == value, field
        if chr(r["category"]) == "k" and int(r["wire"]) & WIRE_SHORT:
            assert (chr(r["strike_den"]), chr(r["premium_den"])) == ("A", "B")  # implied, filled in (7.5)


@pytest.mark.parametrize("n", sorted(EXAMPLES))
def test_example_reencodes_byte_for_byte(n: int) -> None:
    assert encode_block(decode_block(EXAMPLES[n])) == EXAMPLES[n]


def test_the_three_quote_forms_of_one_series_agree() -> None:
    """The same AAPL March 230 put as 'k' (230000, 'C') and as 'q' (2300, implied 'A'): one
    strike value, one root (spec 8.3), so downstream keys them alike."""
    k = decode_block(EXAMPLES[2]).records
    assert k[0]["strike_px"] == k[1]["strike_px"] and k[0]["root"] == k[1]["root"] == b"AAPL "
    assert k[0]["root_len"] == k[1]["root_len"] == 5


def test_time_field_is_eastern_hhmmssmmm_across_daylight_saving() -> None:
    # 2026-03-08 06:59:59 UTC is 01:59:59 EST; 07:00:00 UTC is 03:00:00 EDT
    assert lib.omdp_obi_eastern_hhmmss(1772953199) == 15959
    assert lib.omdp_obi_eastern_hhmmss(1772953200) == 30000
    # 2026-11-01 05:59:59 UTC is 01:59:59 EDT; 06:00:00 UTC is 01:00:00 EST again
    assert lib.omdp_obi_eastern_hhmmss(1793512799) == 15959
    assert lib.omdp_obi_eastern_hhmmss(1793512800) == 10000


def test_fields_bits_say_which_columns_hold_values() -> None:
    """Consumers mask columns with FAST V2's slot bits; an OBI record sets the same ones."""
    q = decode_block(EXAMPLES[2]).records
    for r in q:
        f = int(r["fields"])
        assert all(f >> s & 1 for s in (5, 11, 15, 25, 26, 27, 28, 30)) and not f >> 13 & 1
    assert int(q[2]["fields"]) >> 35 & 1 and not int(q[2]["fields"]) >> 31 & 1
    a = decode_block(EXAMPLES[5]).records[0]
    assert all(int(a["fields"]) >> s & 1 for s in (13, 16)) and not int(a["fields"]) >> 25 & 1


def test_batch_decodes_every_example_as_the_one_block_path() -> None:
    blocks = [EXAMPLES[n] for n in sorted(EXAMPLES)]
    lengths = np.array([len(x) for x in blocks])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    d = decode_blocks(b"".join(blocks), offsets, lengths)
    assert d.counters["packets"] == d.counters["packets_ok"] == 18 and not d.errors
    for i, data in enumerate(blocks):
        one = decode_block(data)
        first, count = int(d.blocks[i]["first"]), int(d.blocks[i]["count"])
        got = d.records[first : first + count]
        cols = [x for x in got.dtype.names if x != "var_off"]
        assert np.array_equal(got[cols], one.records[cols])
        assert all(bytes(d.side[int(r["var_off"]):int(r["var_off"]) + int(r["var_len"])]) == one.text(j)
                   for j, r in enumerate(got))
    assert d.counters["messages"] == sum(len(m) for m in MESSAGES.values())


def test_unknown_denominator_flags_the_field_and_keeps_the_message() -> None:
    data = bytearray(EXAMPLES[5])
    data[21 + 30] = ord("Z")  # first message's premium denominator
    data[19:21] = checksum(data).to_bytes(2, "big")
    r = decode_block(bytes(data)).records[0]
    assert r["premium_px"] == UNDEF_PRICE and r["premium"] == 2575 and r["strike_px"] == 500 * P
    assert not int(r["wire"]) & WIRE_EXTRA


def test_time_field_matches_the_eastern_zone_database() -> None:
    eastern = ZoneInfo("America/New_York")
    rng = np.random.default_rng(38)
    # 2007 (today's daylight-saving rules) to 2099, and every hour around each 2026 switch
    secs = rng.integers(1167609600, 4102444800, 2000).tolist() + list(range(1772946000, 1772960400, 1800)) + \
        list(range(1793505600, 1793520000, 1800))
    for s in secs:
        t = dt.datetime.fromtimestamp(s, eastern)
        assert lib.omdp_obi_eastern_hhmmss(s) == t.hour * 10000 + t.minute * 100 + t.second, s


def test_checksum_is_the_byte_sum_of_spec_4_2_at_every_length() -> None:
    """The C sum (16 or 64 bytes at a time) against the definition, for every block length."""
    data = np.random.default_rng(42).integers(0, 256, 1000, dtype=np.uint8).tobytes()
    for n in range(0, 1001):
        want = sum(b for i, b in enumerate(data[:n]) if i not in (19, 20)) & 0xFFFF
        assert checksum(data[:n]) == want, n
