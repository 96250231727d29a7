"""The worked bytes of spec section 8 (first packet of SIAC's sample) and the rendering
example of section 7.

Only messages 1, 2 and 5 of that packet are given, so the packets here are built from
those: messages 1 and 2 as a two-message packet (exactly the spec's bytes), and message 5
decoded right after message 2, where everything it does not send comes from message 2.
"""
from __future__ import annotations

from feedhandlers.opra_fast import decode_packet, encode_packet, render_ascii
from omdp.record import RF_LAST_IN_PACKET

MSG1 = bytes.fromhex(
    "1d"
    "7e 00 00 00 00 00 81"
    "c8 c3 cf a0 81 02 10 16 6f 80"
    "53 54 41 52 54 20 4f 46 20 44 41 d9"
)
MSG2 = bytes.fromhex(
    "25"
    "73 7e 20 07 f0"
    "eb c1 d8 01 0f 06 46 80"
    "4a 50 4d 20 a0 d3 81 82 c5 18 35 80 c8"
    "c2 07 8e 01 c8 07 ac 01 c8 a0 c1"
)
MSG5 = bytes.fromhex("0f" "20 06 00 05 90 d2 0c 1a c0 c4 08 cc 08 ea c2")
SECTION7 = "X kA0000000002300000000JPM  S0102E400000HB00000910002000000094000200 A"


def _packet(count: bytes, *msgs: bytes) -> bytes:
    return b"\x01\x02" + b"0000000001" + count + b"".join(msgs) + b"\x03"


def test_first_two_messages_decode_field_by_field() -> None:
    pkt = _packet(b"002", MSG1, MSG2)
    p = decode_packet(pkt)
    assert p.block_seq == b"0000000001" and p.count == 2 and len(p) == 2
    h, k = p.records
    # message 1: 'H' 'C' 'O' ' ' seq=1 time=570800000 "START OF DAY"
    assert (chr(h["category"]), chr(h["msg_type"]), chr(h["participant"]), chr(h["retrans"])) == ("H", "C", "O", " ")
    assert h["msg_seq"] == 1 and h["time"] == 570800000
    assert p.text(0) == b"START OF DAY"
    assert h["fields"] == 0b111111 | (1 << 48)
    # message 2: 'k' 'A' 'X', retrans copied ' ', seq 2 implied, time 300000000
    assert (chr(k["category"]), chr(k["msg_type"]), chr(k["participant"]), chr(k["retrans"])) == ("k", "A", "X", " ")
    assert k["msg_seq"] == 2 and k["time"] == 300000000
    assert k["root"] == b"JPM  " and k["root_len"] == 5
    assert (chr(k["month_code"]), k["expiry_day"], k["expiry_year"]) == ("S", 1, 2)
    assert k["expiry"] == 20020701 and chr(k["put_call"]) == "P"  # 'S' = July put
    assert (chr(k["strike_den"]), k["strike"], chr(k["strike_code"])) == ("E", 400000, "H")
    # Section 6: 'E' = 5 decimal places, so 400000 is 4.00000 (section 7's "(= 40.0000)"
    # reads 'E' as 4 places; section 6's rule is the normative one).
    assert k["strike_px"] == 4_000_000_000
    assert chr(k["premium_den"]) == "B"
    assert (k["bid"], k["bid_size"], k["offer"], k["offer_size"]) == (910, 200, 940, 200)
    assert k["bid_px"] == 9_100_000_000 and k["offer_px"] == 9_400_000_000
    assert (chr(k["session"]), chr(k["bbo_ind"])) == (" ", "A")
    assert k["best_bid"] == 0 and k["best_offer"] == 0  # 'A': no appendage
    assert k["hdr"]["flags"] == RF_LAST_IN_PACKET and h["hdr"]["flags"] == 0


def test_first_two_messages_encode_back_to_the_spec_bytes() -> None:
    pkt = _packet(b"002", MSG1, MSG2)
    assert encode_packet(decode_packet(pkt)) == pkt


def test_section7_rendering_of_message_2() -> None:
    p = decode_packet(_packet(b"002", MSG1, MSG2))
    assert render_ascii(p) == ["O HC0000000001570800000START OF DAY", SECTION7]


def test_fifth_message_copies_everything_it_does_not_send() -> None:
    pkt = _packet(b"003", MSG1, MSG2, MSG5)
    p = decode_packet(pkt)
    k2, k5 = p.records[1], p.records[2]
    # sent: type 'R', strike 200000, strike code 'D', bid 1100, offer 1130, BBO 'B'
    assert chr(k5["msg_type"]) == "R" and k5["strike"] == 200000 and chr(k5["strike_code"]) == "D"
    assert (k5["bid"], k5["offer"], chr(k5["bbo_ind"])) == (1100, 1130, "B")
    # copied from message 2 (and seq incremented)
    assert k5["msg_seq"] == 3
    for f in ("category", "participant", "retrans", "time", "root", "root_len", "month_code", "expiry_day",
              "expiry_year", "strike_den", "premium_den", "bid_size", "offer_size", "session"):
        assert k5[f] == k2[f], f
    assert render_ascii(p)[2] == "X kR0000000003300000000JPM  S0102E200000DB00001100002000000113000200 B"
    assert encode_packet(p) == pkt
