"""Golden packets derived by hand from the spec (opra-fast-v2.md), one or more per category,
both BBO appendage kinds and 'O', multi-entry 'Y' groups of each type, default messages and
a 0xFF length. The hex is written out here, field by field, so the decoder and the encoder
are each checked against the spec and cannot share a misreading.

Integers: big-endian 7-bit groups, stop bit 0x80 on the last byte (93000000 = 2c 2c 22 c0).
pmap bit for slot k: byte k // 7, mask 0x40 >> (k % 7); stop bit on the last pmap byte.
"""
from __future__ import annotations

import numpy as np
import pytest

from feedhandlers.opra_fast import (
    UNDEF_PRICE,
    decode_batch,
    decode_packet,
    encode_packet,
    render_ascii,
)
from omdp.record import RF_LAST_IN_PACKET, RT_OPRA_MSG

P = 1_000_000_000  # price scale


def H(s: str) -> bytes:
    return bytes.fromhex(s)


def packet(seq: str, *messages: str) -> bytes:
    """SOH, version 2, block sequence, count, then the messages (each hex starting with its
    length byte), then ETX."""
    return b"\x01\x02" + seq.encode() + b"%03d" % len(messages) + b"".join(H(m) for m in messages) + b"\x03"


def slots(*ks: int) -> int:
    return sum(1 << k for k in ks)


HDR = (0, 1, 2, 3, 4, 5)
SERIES = (6, 7, 8, 9, 10, 11, 12)

# ---- 'a' last sale -----------------------------------------------------------------------
A_SALE = (
    "1f"                                 # length 31
    "7f 7f 30 00 a0"                     # pmap: slots 0-13, 15, 16, 29
    "e1 a0 c3 a0 e4 2c 2c 22 c0"         # 'a' ' ' 'C' ' ' seq=100 time=93000000
    "49 42 4d 20 a0 c1 93 88 c1 08 9a d5"  # "IBM  " 'A' 19 8 'A' 1050 'U'
    "99 c2 02 d9 a0"                     # volume 25, 'B', premium 345, session ' '
)


def test_last_sale_a() -> None:
    pkt = packet("0000000100", A_SALE)
    p = decode_packet(pkt)
    assert p.block_seq == b"0000000100" and p.count == 1
    r = p.records[0]
    assert chr(r["category"]) == "a" and chr(r["msg_type"]) == " " and chr(r["participant"]) == "C"
    assert r["msg_seq"] == 100 and r["time"] == 93000000 and r["block_seq"] == 100
    assert r["root"] == b"IBM  " and r["root_len"] == 5
    assert (chr(r["month_code"]), r["expiry_day"], r["expiry_year"]) == ("A", 19, 8)
    assert r["expiry"] == 20080119 and chr(r["put_call"]) == "C"
    assert (chr(r["strike_den"]), r["strike"], chr(r["strike_code"])) == ("A", 1050, "U")
    assert r["strike_px"] == 105 * P
    assert r["volume"] == 25 and chr(r["premium_den"]) == "B" and r["premium"] == 345
    assert r["premium_px"] == 3_450_000_000 and chr(r["session"]) == " "
    assert r["fields"] == slots(*HDR, *SERIES, 13, 15, 16, 29)
    assert r["hdr"]["type"] == RT_OPRA_MSG and r["hdr"]["length"] == 256
    assert r["hdr"]["flags"] == RF_LAST_IN_PACKET and r["underlying_id"] == 0xFFFFFFFF
    assert r["bid_px"] == 0 and r["bid"] == 0  # no quote fields in a sale
    assert render_ascii(p) == ["C a 0000000100" "093000000" "IBM  " "A1908A001050U" "000025" "B00000345" " "]
    assert encode_packet(p) == pkt


# ---- 'k' quotes with appendages: 'M' best bid, 'C' best offer, 'O' both -------------------
K_BEST_BID = (
    "26"                                 # length 38
    "7f 7e 20 07 ff"                     # pmap: 0-12, 15, 25-34
    "eb a0 c9 a0 27 88 2c 2c 22 c0"      # 'k' ' ' 'I' ' ' seq=5000 time=93000000
    "51 51 51 20 a0 c3 96 88 c1 03 c2 c9"  # "QQQ  " 'C' 22 8 'A' 450 'I'
    "c2 f8 8a fd 94 a0 cd"               # 'B' bid 120 x 10, offer 125 x 20, ' ', BBO 'M'
    "c3 c2 f9 b2"                        # best bid: 'C' 'B' 121 x 50
)
K_BEST_OFFER = (
    "0d"                                 # length 13
    "10 00 00 04 10 f8"                  # pmap: 2, 25, 30, 35-38 (seq 5001 implied)
    "d8"                                 # participant 'X'
    "f7"                                 # bid 119
    "c3"                                 # BBO 'C'
    "c9 c2 fc 9e"                        # best offer: 'I' 'B' 124 x 30
)
K_BOTH = (
    "08"                                 # length 8
    "10 00 00 00 91"                     # pmap: 2, 30, 34
    "d0 cf bc"                           # participant 'P', BBO 'O', best bid size 60
)


def test_quotes_with_every_appendage_kind() -> None:
    pkt = packet("0000005000", K_BEST_BID, K_BEST_OFFER, K_BOTH)
    p = decode_packet(pkt)
    a, b, c = p.records
    k_base = slots(*HDR, *SERIES, 15, 25, 26, 27, 28, 29, 30)
    # first: everything sent, best bid appendage
    assert (chr(a["participant"]), a["msg_seq"], a["root"], chr(a["bbo_ind"])) == ("I", 5000, b"QQQ  ", "M")
    assert (a["bid"], a["bid_size"], a["offer"], a["offer_size"]) == (120, 10, 125, 20)
    assert a["bid_px"] == 1_200_000_000 and a["offer_px"] == 1_250_000_000
    assert (chr(a["best_bid_part"]), chr(a["best_bid_den"]), a["best_bid"], a["best_bid_size"]) == ("C", "B", 121, 50)
    assert a["best_bid_px"] == 1_210_000_000 and a["best_offer_px"] == 0
    assert a["fields"] == k_base | slots(31, 32, 33, 34)
    assert a["expiry"] == 20080322 and chr(a["put_call"]) == "C" and a["strike_px"] == 45 * P
    assert a["hdr"]["flags"] == 0 and a["index"] == 0
    # second: copies all but participant, bid, BBO; best offer appendage; no best bid fields
    assert (chr(b["participant"]), b["msg_seq"], b["time"], b["root"]) == ("X", 5001, 93000000, b"QQQ  ")
    assert (b["bid"], b["bid_size"], b["offer"], b["offer_size"], chr(b["bbo_ind"])) == (119, 10, 125, 20, "C")
    assert (chr(b["best_offer_part"]), chr(b["best_offer_den"]), b["best_offer"], b["best_offer_size"]) == ("I", "B", 124, 30)
    assert b["best_bid"] == 0 and b["best_bid_part"] == 0 and b["best_bid_px"] == 0
    assert b["best_offer_px"] == 1_240_000_000 and b["fields"] == k_base | slots(35, 36, 37, 38)
    # third: 'O' takes both appendages, best bid from the first message's dictionary entries
    assert (chr(c["participant"]), c["msg_seq"], chr(c["bbo_ind"])) == ("P", 5002, "O")
    assert (chr(c["best_bid_part"]), c["best_bid"], c["best_bid_size"]) == ("C", 121, 60)
    assert (chr(c["best_offer_part"]), c["best_offer"], c["best_offer_size"]) == ("I", 124, 30)
    assert c["fields"] == k_base | slots(31, 32, 33, 34, 35, 36, 37, 38)
    assert c["hdr"]["flags"] == RF_LAST_IN_PACKET and c["index"] == 2
    series = "QQQ  " "C2208A000450I" "B"
    assert render_ascii(p) == [
        "I k 0000005000093000000" + series + "00000120" "00010" "00000125" "00020" " M" + "CB" "00000121" "00050",
        "X k 0000005001093000000" + series + "00000119" "00010" "00000125" "00020" " C" + "IB" "00000124" "00030",
        "P k 0000005002093000000" + series + "00000119" "00010" "00000125" "00020" " O" + "CB" "00000121" "00060" + "IB" "00000124" "00030",
    ]
    assert encode_packet(p) == pkt


# ---- 'd' open interest ------------------------------------------------------------------
D_FIRST = (
    "1a"                                 # length 26
    "7f 7e c0"                           # pmap: 0-12, 14
    "e4 a0 c3 a0 87 26 12 68 80"         # 'd' ' ' 'C' ' ' seq=7 time=80000000
    "47 4f 4f 47 a0 ce 90 88 c1 27 88 d4"  # "GOOG " 'N' 16 8 'A' 5000 'T'
    "60 b9"                              # open interest 12345
)
D_SECOND = (
    "08"
    "00 06 c0"                           # pmap: 11, 12, 14
    "28 d0 d6 03 f4"                     # strike 5200, code 'V', open interest 500
)


def test_open_interest_d() -> None:
    pkt = packet("0000000007", D_FIRST, D_SECOND)
    p = decode_packet(pkt)
    a, b = p.records
    assert (chr(a["category"]), a["msg_seq"], a["time"], a["root"], a["open_interest"]) == ("d", 7, 80000000, b"GOOG ", 12345)
    assert a["expiry"] == 20080216 and chr(a["put_call"]) == "P" and a["strike_px"] == 500 * P
    assert (b["msg_seq"], b["strike"], chr(b["strike_code"]), b["open_interest"]) == (8, 5200, "V", 500)
    assert b["root"] == b"GOOG " and b["expiry"] == 20080216 and b["strike_px"] == 520 * P
    assert a["fields"] == b["fields"] == slots(*HDR, *SERIES, 14)
    assert render_ascii(p) == [
        "C d 0000000007080000000GOOG N1608A005000T0012345",
        "C d 0000000008080000000GOOG N1608A005200V0000500",
    ]
    assert encode_packet(p) == pkt


# ---- 'f' end-of-day summary ---------------------------------------------------------------
F_SUMMARY = (
    "32"                                 # length 50
    "7f 7f 6f fd"                        # pmap: 0-15, 17-25, 27
    "e6 a0 c1 a0 05 3f 90 4d 01 16 e0"   # 'f' ' ' 'A' ' ' seq=90000 time=161500000
    "49 42 4d 20 a0 c1 93 88 c1 08 9a d5"  # "IBM  " 'A' 19 8 'A' 1050 'U'
    "09 d2 01 37 a0 c2"                  # volume 1234, open interest 23456, 'B'
    "02 ac 02 fc 02 a2 02 d9"            # open 300 high 380 low 290 last 345
    "ab ad c2 52 90"                     # '+' net change 45, underlying 'B' 10512
    "02 d4 02 de"                        # bid 340 offer 350
)


def test_summary_f() -> None:
    pkt = packet("0000090000", F_SUMMARY)
    p = decode_packet(pkt)
    r = p.records[0]
    assert (r["volume"], r["open_interest"], r["open"], r["high"], r["low"], r["last"]) == (1234, 23456, 300, 380, 290, 345)
    assert (chr(r["net_change_ind"]), r["net_change"], chr(r["underlying_den"]), r["underlying_raw"]) == ("+", 45, "B", 10512)
    assert (r["bid"], r["offer"], r["bid_px"], r["offer_px"]) == (340, 350, 3_400_000_000, 3_500_000_000)
    assert r["fields"] == slots(*HDR, *SERIES, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27)
    assert render_ascii(p) == [
        "A f 0000090000161500000IBM  A1908A001050U" "001234" "0023456" "B"
        "00000300" "00000380" "00000290" "00000345" "+" "00000045" "B" "00000010512" "00000340" "00000350"
    ]
    assert encode_packet(p) == pkt


# ---- 'Y' underlying values: two entries of each type --------------------------------------
Y_INDEX = (
    "27"                                 # length 39
    "7e 00 00 00 00 05 c0"               # pmap: 0-5, 39, 41, 42
    "d9 a0 cf a0 8b 2c 2c 22 c0"         # 'Y' ' ' 'O' ' ' seq=11 time=93000000
    "82"                                 # 2 entries
    "53 50 d8 30 31 33 38 30 2e 32 b5"   # "SPX" "01380.25"
    "44 4a d8 30 30 31 32 33 2e 34 b5"   # "DJX" "00123.45"
)
Y_BID_OFFER = (
    "37"                                 # length 55
    "7e 00 00 00 00 05 b0"               # pmap: 0-5, 39, 41, 43, 44
    "d9 c9 cf a0 8c 2c 2c 22 c0"         # 'Y' 'I' 'O' ' ' seq=12 time=93000000
    "82"
    "4e 44 d8 30 31 38 30 30 2e 35 b0 30 31 38 30 31 2e 35 b0"  # "NDX" "01800.50" "01801.50"
    "52 55 d4 30 30 37 30 30 2e 31 b0 30 30 37 30 30 2e 39 b0"  # "RUT" "00700.10" "00700.90"
)
Y_FOREIGN = (
    "1d"                                 # length 29
    "7e 00 00 00 00 02 8e"               # pmap: 0-5, 40, 45, 46, 47
    "d9 c6 cf a0 8d 2c 2c 22 c0"         # 'Y' 'F' 'O' ' ' seq=13 time=93000000
    "82"
    "45 55 d2 84 73 85"                  # "EUR" 4 decimals, 14725
    "47 42 d0 82 01 c5"                  # "GBP" 2 decimals, 197
)


def _entries(p, i: int) -> list[tuple]:
    return [
        (e["symbol"][: e["symbol_len"]], e["value"][: e["value_len"]], e["offer"][: e["offer_len"]], int(e["decimals"]), int(e["spot"]))
        for e in p.y_entries(i)
    ]


@pytest.mark.parametrize(
    "hexmsg,seq,ytype,entries,ascii_tail",
    [
        (Y_INDEX, 11, " ", [(b"SPX", b"01380.25", b"", 0, 0), (b"DJX", b"00123.45", b"", 0, 0)], "02SPX01380.25DJX00123.45"),
        (Y_BID_OFFER, 12, "I", [(b"NDX", b"01800.50", b"01801.50", 0, 0), (b"RUT", b"00700.10", b"00700.90", 0, 0)],
         "02NDX01800.5001801.50RUT00700.1000700.90"),
        (Y_FOREIGN, 13, "F", [(b"EUR", b"", b"", 4, 14725), (b"GBP", b"", b"", 2, 197)], "02EUR0400014725GBP0200000197"),
    ],
    ids=["index", "bid-offer", "foreign-currency"],
)
def test_underlying_value_groups(hexmsg: str, seq: int, ytype: str, entries: list, ascii_tail: str) -> None:
    pkt = packet("%010d" % seq, hexmsg)
    p = decode_packet(pkt)
    r = p.records[0]
    assert chr(r["category"]) == "Y" and chr(r["msg_type"]) == ytype and r["y_count"] == 2
    assert r["var_len"] == 64 and r["var_off"] % 8 == 0
    assert _entries(p, 0) == entries
    count_slot = 40 if ytype == "F" else 39
    entry_slots = {" ": (41, 42), "I": (41, 43, 44), "F": (45, 46, 47)}[ytype]
    assert r["fields"] == slots(*HDR, count_slot, *entry_slots)
    assert render_ascii(p) == ["O Y%s%010d093000000%s" % (ytype, seq, ascii_tail)]
    assert encode_packet(p) == pkt


def test_y_group_copies_the_last_entry_of_the_previous_group() -> None:
    # Second 'Y' in the packet sends only its count (1) and symbol; the value is the dictionary's,
    # which holds the previous group's LAST entry ("00123.45"). pmap: 39, 41 -> byte 5 = 0x05, stop.
    second = (
        "0a"
        "00 00 00 00 00 85"                  # pmap: 39, 41 (6 bytes)
        "81"                                 # 1 entry (seq 12 and the rest copied)
        "4e 44 d8"                           # "NDX"
    )
    pkt = packet("0000000011", Y_INDEX, second)
    p = decode_packet(pkt)
    assert p.records[1]["msg_seq"] == 12 and p.records[1]["y_count"] == 1
    assert _entries(p, 1) == [(b"NDX", b"00123.45", b"", 0, 0)]
    assert encode_packet(p) == pkt


# ---- 'C' administrative text and 'H' control ----------------------------------------------
C_TEXT = (
    "18"                                 # length 24
    "7e 00 00 00 00 00 81"               # pmap: 0-5, 48
    "c3 a0 d0 a0 83 2c 2c 22 c0"         # 'C' ' ' 'P' ' ' seq=3 time=93000000
    "48 41 4c 54 20 49 42 cd"            # "HALT IBM"
)
H_NO_TEXT = (
    "0a"
    "fe"                                 # pmap: 0-5 (one byte)
    "c8 ca cf a0 e3 4d 01 16 e0"         # 'H' 'J' 'O' ' ' seq=99 time=161500000
)


def test_admin_text_and_control_without_text() -> None:
    p = decode_packet(packet("0000000003", C_TEXT))
    r = p.records[0]
    assert chr(r["category"]) == "C" and chr(r["participant"]) == "P" and p.text(0) == b"HALT IBM"
    assert r["fields"] == slots(*HDR, 48)
    assert render_ascii(p) == ["P C 0000000003093000000HALT IBM"]
    assert encode_packet(p) == packet("0000000003", C_TEXT)
    # After the per-packet reset an 'H' without text has empty text.
    pkt = packet("0000000099", H_NO_TEXT)
    batch = decode_batch(packet("0000000003", C_TEXT) + pkt, np.array([0, 41]), np.array([41, len(pkt)]))
    assert not batch.errors and batch.pkt_count.tolist() == [1, 1]
    h = batch.records[1]
    assert chr(h["category"]) == "H" and chr(h["msg_type"]) == "J" and h["var_len"] == 0
    assert decode_packet(pkt).text(0) == b""
    assert render_ascii(decode_packet(pkt)) == ["O HJ0000000099161500000"]
    assert encode_packet(decode_packet(pkt)) == pkt


def test_control_without_text_copies_text_within_a_packet() -> None:
    # Within one packet an absent text slot is COPY: the 'H' repeats the 'C' text.
    # pmap: slots 0 (0x40), 1 (0x20), 2 (0x10), 4 (0x04), stop -> f4
    h_copy = "05" "f4" "c8 ca cf e3"  # 'H' 'J' 'O' seq=99 (retrans, time, text copied)
    pkt = packet("0000000003", C_TEXT, h_copy)
    p = decode_packet(pkt)
    assert p.text(1) == b"HALT IBM" and p.records[1]["msg_seq"] == 99 and p.records[1]["time"] == 93000000
    assert encode_packet(p) == pkt


# ---- default messages ('?' + the whole ASCII message) ---------------------------------------
DEF_TEXT = "X O 0000000042093000000SAMPLE"
DEF_1 = (
    "26"                                 # length 38
    "40 00 00 00 00 00 00 c0"            # pmap: 0, 49 - always 8 bytes
    "bf"                                 # '?'
    "58 20 4f 20 30 30 30 30 30 30 30 30 34 32 30 39 33 30 30 30 30 30 30 53 41 4d 50 4c c5"
)
DEF_2 = (
    "0f"
    "00 00 00 00 00 00 00 c0"            # pmap: 49 ('?' copied)
    "58 20 4f 20 30 30 b1"               # "X O 001"
)


def test_default_messages() -> None:
    pkt = packet("0000000042", DEF_1, DEF_2)
    p = decode_packet(pkt)
    assert [chr(c) for c in p.records["category"]] == ["?", "?"]
    assert p.text(0) == DEF_TEXT.encode() and p.text(1) == b"X O 001"
    assert p.records[0]["fields"] == slots(0, 49)
    assert p.records[0]["msg_seq"] == 0 and p.records[0]["time"] == 0
    assert render_ascii(p) == [DEF_TEXT, "X O 001"]
    assert encode_packet(p) == pkt  # block sequence = characters 4..13 of the first message


def test_default_message_does_not_touch_the_sequence() -> None:
    # 'd' seq 7, then a default message, then a 'd' that must send seq 9 (7 + 1 != 9).
    # The dictionary's category is now '?', so the 'd' sends its category again.
    d_next = "0a" "44 06 c0" "e4 89 28 d0 d6 03 f4"  # pmap: 0, 4, 11, 12, 14; 'd' seq 9
    d_head = "1a" "7f 7e c0" "e4 a0 c3 a0 87 26 12 68 80" "47 4f 4f 47 a0 ce 90 88 c1 27 88 d4" "60 b9"
    def_mid = "10" "40 00 00 00 00 00 00 c0" "bf" "58 20 4f 20 30 30 b1"
    pkt = packet("0000000007", d_head, def_mid, d_next)
    p = decode_packet(pkt)
    assert p.records["msg_seq"].tolist() == [7, 0, 9]
    assert chr(p.records[2]["category"]) == "d" and p.records[2]["root"] == b"GOOG "
    assert encode_packet(p) == pkt


# ---- the 0xFF length ------------------------------------------------------------------------
LONG_TEXT = "41" * 299 + "c2"  # "AAA...AB": 300 bytes


def test_ff_length_for_a_long_last_message() -> None:
    # After D_FIRST ('d' ' ' 'C' ' ' seq 7 time 80000000) a 'C' sends category, participant,
    # time and text: pmap slots 0 (0x40), 2 (0x10), 5 (0x02), 48 -> 52 00 00 00 00 00 81.
    body = "52 00 00 00 00 00 81" "c3 cf 2c 2c 22 c0" + LONG_TEXT  # 313 bytes: length 0xFF
    pkt = packet("0000000007", D_FIRST, "ff" + body)
    p = decode_packet(pkt)
    assert p.count == 2 and p.text(1) == b"A" * 299 + b"B"
    assert render_ascii(p)[1] == "O C 0000000008093000000" + "A" * 299 + "B"
    assert encode_packet(p) == pkt


def test_explicit_length_for_a_254_byte_last_message() -> None:
    body = "7e 00 00 00 00 00 81" "c3 a0 cf a0 81 2c 2c 22 c0" + "41" * 237 + "c2"  # 254 bytes
    pkt = packet("0000000001", "fe" + body)
    p = decode_packet(pkt)
    assert len(p.text(0)) == 238
    assert encode_packet(p) == pkt


def test_unknown_denominator_gives_undefined_price() -> None:
    # 'd' with strike denominator 'Z': the raw value is kept, the normalized price is undefined.
    msg = "1a" "7f 7e c0" "e4 a0 c3 a0 87 26 12 68 80" "47 4f 4f 47 a0 ce 90 88 da 27 88 d4" "60 b9"
    r = decode_packet(packet("0000000007", msg)).records[0]
    assert chr(r["strike_den"]) == "Z" and r["strike"] == 5000 and r["strike_px"] == UNDEF_PRICE
