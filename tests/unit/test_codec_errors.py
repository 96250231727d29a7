"""Malformed packets: each error code with the packet, byte offset, message and slot it
names; a batch skips the bad packet, counts it and decodes the next one normally."""
from __future__ import annotations

import numpy as np
import pytest

from feedhandlers.opra_errors import CODE_BY_NAME
from feedhandlers.opra_fast import OpraDecodeError, OpraEncodeError, decode_batch, decode_packet, encode_records, new_records

MSG1 = "1d" "7e 00 00 00 00 00 81" "c8 c3 cf a0 81 02 10 16 6f 80" "53 54 41 52 54 20 4f 46 20 44 41 d9"
MSG2 = "25" "73 7e 20 07 f0" "eb c1 d8 01 0f 06 46 80" "4a 50 4d 20 a0 d3 81 82 c5 18 35 80 c8" "c2 07 8e 01 c8 07 ac 01 c8 a0 c1"
TIME = "2c 2c 22 c0"


def pkt(*msgs: str, count: str | None = None) -> bytes:
    c = (count if count is not None else "%03d" % len(msgs)).encode()
    return b"\x01\x020000000001" + c + b"".join(bytes.fromhex(m) for m in msgs) + b"\x03"


GOOD = pkt(MSG1, MSG2)

# name, packet, code, offset, message index, slot
CASES = [
    ("truncated", b"\x01\x020000000", "TRUNCATED", 9, -1, -1),
    ("bad-soh", b"\x02" + GOOD[1:], "BAD_SOH", 0, -1, -1),
    ("bad-version", GOOD[:1] + b"\x01" + GOOD[2:], "BAD_VERSION", 1, -1, -1),
    ("bad-etx", GOOD[:-1] + b"\x04", "BAD_ETX", len(GOOD) - 1, -1, -1),
    ("bad-count", pkt(MSG1, MSG2, count="0a2"), "BAD_COUNT", 13, -1, -1),
    ("count-too-high", pkt(MSG1, MSG2, count="003"), "COUNT_MISMATCH", len(GOOD) - 1, -1, -1),
    ("count-too-low", pkt(MSG1, MSG2, count="001"), "COUNT_MISMATCH", 45, 1, -1),
    ("overlong-int", pkt("0c" "fe" "c8 c3 cf a0 81" "01 01 01 01 01 81"), "OVERLONG_INT", 22, 0, 5),
    ("no-dict-value", pkt("09" "de" "c8 cf a0 81" + TIME), "NO_DICT_VALUE", 18, 0, 1),
    ("no-previous", pkt("09" "fa" "c8 c3 cf a0" + TIME), "NO_PREVIOUS", 18, 0, 4),
    ("pmap-too-long", pkt("0a" + "00" * 9 + "80"), "PMAP_TOO_LONG", 16, 0, -1),
    ("msg-past-packet", pkt("50" "fe" "c8"), "MSG_PAST_PACKET", 15, 0, -1),
    ("field-past-msg", pkt("1c" + MSG1[2:]), "FIELD_PAST_MSG", 33, 0, 48),
    ("empty-message", pkt("00"), "FIELD_PAST_MSG", 16, 0, -1),
    ("string-too-long", pkt("1c" "7f 7e c0" "e4 a0 c3 a0 87 26 12 68 80" "47 4f 4f 47 4c 45 a0" "ce 90 88 c1 27 88 d4" "60 b9"),
     "STRING_TOO_LONG", 28, 0, 6),
    ("value-range", pkt("0b" "fe" "c8 c3 02 ac a0 81" + TIME), "VALUE_RANGE", 19, 0, 2),
    ("y-count-range", pkt("10" "7e 00 00 00 00 84" "d9 a0 cf a0 81" + TIME + "e4"), "VALUE_RANGE", 31, 0, 39),
    ("unused-slot", pkt("0a" "ff" "c8 c3 cf a0 81" + TIME), "UNUSED_SLOT", 18, 0, 6),
    ("trailing-bytes", pkt("1e" + MSG1[2:] + "80"), "TRAILING_BYTES", 45, 0, -1),
    ("unknown-category", pkt("0a" "fe" "da c3 cf a0 81" + TIME), "UNKNOWN_CATEGORY", 17, 0, 0),
    ("y-type", pkt("0a" "fe" "d9 d1 cf a0 81" + TIME), "Y_TYPE", 26, 0, 1),
    ("error-in-second-message", pkt(MSG1, "25" + MSG2[2:-2] + "41"), "FIELD_PAST_MSG", 82, 1, 30),
    # longer than the format's maximum (OMDP_OPRA_MAX_PACKET, 1456): rejected before its contents
    ("packet-too-big", GOOD[:-1] + b"\x00" * (1457 - len(GOOD)) + b"\x03", "PACKET_TOO_BIG", 1456, -1, -1),
]


@pytest.mark.parametrize("name,data,code,offset,msg,slot", CASES, ids=[c[0] for c in CASES])
def test_error_names_code_offset_message_and_slot(name: str, data: bytes, code: str, offset: int, msg: int, slot: int) -> None:
    with pytest.raises(OpraDecodeError) as exc:
        decode_packet(data, packet_index=7)
    e = exc.value
    assert (e.name, e.packet_index, e.offset, e.message_index, e.slot) == (code, 7, offset, msg, slot)
    assert e.code == CODE_BY_NAME[code]
    assert "packet 7" in str(e) and code in str(e)


def test_batch_skips_bad_packets_counts_them_and_decodes_the_rest() -> None:
    packets = []
    for _, data, *_ in CASES:
        packets += [GOOD, data]
    packets.append(GOOD)
    lengths = np.array([len(p) for p in packets])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    b = decode_batch(b"".join(packets), offsets, lengths, first_packet_index=1000)
    n_bad = len(CASES)
    assert b.counters["packets"] == len(packets)
    assert b.counters["packets_bad"] == n_bad and b.counters["packets_ok"] == n_bad + 1
    assert b.counters["messages"] == 2 * (n_bad + 1) == len(b.records)
    assert b.pkt_count.tolist() == [2, 0] * n_bad + [2]
    assert b.pkt_first.tolist()[::2] == [2 * i for i in range(n_bad + 1)]
    assert [e.packet_index for e in b.errors] == [1000 + 2 * i + 1 for i in range(n_bad)]
    assert [(e.name, e.offset, e.message_index, e.slot) for e in b.errors] == [(c[2], c[3], c[4], c[5]) for c in CASES]
    per_code: dict[str, int] = {}
    for c in CASES:
        per_code[c[2]] = per_code.get(c[2], 0) + 1
    assert {k: v for k, v in b.counters.items() if k in CODE_BY_NAME} == per_code
    good = decode_packet(GOOD).records
    for i in range(n_bad + 1):
        got = b.records[2 * i : 2 * i + 2]
        assert np.array_equal(got[["msg_seq", "time", "root", "bid", "offer", "category"]], good[["msg_seq", "time", "root", "bid", "offer", "category"]])
    # variable parts of a skipped packet do not stay in the side buffer
    assert bytes(b.side).count(b"START OF DAY") == n_bad + 1


def test_error_list_is_capped_but_counters_are_not() -> None:
    bad = b"\x02" + GOOD[1:]
    data = bad * 50
    b = decode_batch(data, np.arange(50) * len(bad), np.full(50, len(bad)), max_errors=5)
    assert len(b.errors) == 5 and b.counters["BAD_SOH"] == 50 and b.counters["packets_bad"] == 50


def _quote() -> np.ndarray:
    r = new_records(1)
    r["category"], r["msg_type"], r["participant"], r["retrans"] = ord("k"), ord(" "), ord("C"), ord(" ")
    r["msg_seq"], r["time"], r["root"], r["root_len"] = 1, 93000000, b"IBM", 3
    for f, c in (("month_code", "A"), ("strike_den", "A"), ("strike_code", "A"), ("premium_den", "B"), ("session", " "), ("bbo_ind", " ")):
        r[f] = ord(c)
    return r


@pytest.mark.parametrize(
    "change,code,slot",
    [
        (lambda r: r.__setitem__("msg_seq", 1 << 35), "VALUE_RANGE", 4),
        (lambda r: r.__setitem__("root_len", 7), "STRING_TOO_LONG", 6),
        (lambda r: r.__setitem__("root", b"\xc9BM"), "BAD_STRING_BYTE", 6),
        (lambda r: (r.__setitem__("category", ord("Y")), r.__setitem__("msg_type", ord("Q"))), "Y_TYPE", 1),
        (lambda r: (r.__setitem__("category", ord("C")), r.__setitem__("var_len", 10)), "VAR_OUTSIDE", 48),
    ],
    ids=["seq-over-35-bits", "root-too-long", "root-high-byte", "y-type", "text-outside-side"],
)
def test_encoder_rejects_what_it_cannot_send(change, code: str, slot: int) -> None:
    r = _quote()
    change(r)
    with pytest.raises(OpraEncodeError) as exc:
        encode_records(r)
    assert (exc.value.name, exc.value.message_index, exc.value.slot) == (code, 0, slot)


def test_encoder_rules_on_packet_shape() -> None:
    with pytest.raises(OpraEncodeError, match="MSG_COUNT"):
        encode_records(new_records(0))
    two = np.concatenate([_quote(), _quote()])
    two["category"] = ord("C")
    side = b"X" * 400
    two["var_len"] = 400
    with pytest.raises(OpraEncodeError, match="LONG_NOT_LAST") as exc:
        encode_records(two, side)
    assert exc.value.message_index == 0
    h = np.concatenate([_quote(), _quote()])
    h["category"] = ord("H")
    h["var_len"] = [5, 0]
    with pytest.raises(OpraEncodeError, match="EMPTY_STRING") as exc:
        encode_records(h, b"HELLO")
    assert (exc.value.message_index, exc.value.slot) == (1, 48)


def _texts(n: int, size: int) -> tuple[np.ndarray, bytes]:
    r = np.concatenate([_quote() for _ in range(n)])
    r["category"] = ord("C")
    r["msg_seq"] = np.arange(1, n + 1)
    r["var_off"] = np.arange(n) * size
    r["var_len"] = size
    side = b"".join(bytes([65 + i % 26]) * size for i in range(n))
    return r, side


def test_encoder_rejects_a_packet_over_the_maximum() -> None:
    from feedhandlers.opra_fast import MAX_PACKET_BYTES, decode_packet, encode_stream

    r, side = _texts(5, 230)
    fits = encode_records(r, side)
    assert len(fits) <= MAX_PACKET_BYTES and len(decode_packet(fits).records) == 5
    r, side = _texts(7, 230)
    with pytest.raises(OpraEncodeError, match="PACKET_TOO_BIG") as exc:
        encode_records(r, side)
    assert exc.value.code == CODE_BY_NAME["PACKET_TOO_BIG"] and exc.value.message_index == 6
    with pytest.raises(OpraEncodeError, match="PACKET_TOO_BIG"):
        encode_stream(r, side, [7], max_packet_bytes=MAX_PACKET_BYTES + 1)
    _, _, lengths, _ = encode_stream(r, side, [7])
    assert int(lengths.max()) <= MAX_PACKET_BYTES and len(lengths) == 2
