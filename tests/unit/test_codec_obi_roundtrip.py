"""OBI round trip: random valid blocks of every category encode, decode to the same wire
values and re-encode to the same bytes; the spec's conformance cases (every BBO indicator on
'k' and 'q', 'C' text lengths 0, odd, even and 200, extreme values); and the encoder's typed
refusals of records it cannot write."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from obi_strategies import INDICATORS, RAW_COLUMNS, Msg, block, to_records

from feedhandlers.opra_fast import new_records
from feedhandlers.opra_obi import (
    BLK_PAD,
    WIRE_OBI,
    WIRE_SHORT,
    ObiEncodeError,
    checksum,
    decode_block,
    encode_block,
    encode_records,
    new_header,
)

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
P = 1_000_000_000


def roundtrip(built) -> bytes:  # type: ignore[no-untyped-def]
    data = encode_records(built.header, built.records, built.side)
    assert len(data) % 2 == 0 and len(data) <= 1000 and int.from_bytes(data[19:21], "big") == checksum(data)
    b = decode_block(data)
    for col in RAW_COLUMNS:
        assert np.array_equal(b.records[col], built.records[col]), col
    assert [b.extra(i) for i in range(len(b))] == built.extras
    for i in range(len(b)):
        if b.records[i]["category"] == ord("C"):
            assert b.text(i) == built.side[int(built.records[i]["var_off"]):][: int(built.records[i]["var_len"])]
    for k in ("block_seq", "ts_sec", "ts_nsec", "session", "retrans", "feed"):
        assert b.header[k] == built.header[k], k
    assert b.records["msg_seq"].tolist() == [int(built.header["block_seq"]) + i for i in range(len(b))]
    assert encode_block(b) == data
    return data


@pytest.mark.full
@SETTINGS
@given(block())
def test_random_valid_blocks_round_trip(built) -> None:  # type: ignore[no-untyped-def]
    roundtrip(built)


def quote(ind: int, short: bool) -> Msg:
    f = {"participant": ord("C"), "category": ord("k"), "msg_type": ord(" "), "bbo_ind": ind,
         "wire": WIRE_OBI | (WIRE_SHORT if short else 0), "root": b"SPY  ", "month_code": ord("F"), "expiry_day": 18,
         "expiry_year": 26, "strike_den": ord("A"), "strike": 5000, "premium_den": ord("B"), "bid": 120, "bid_size": 7,
         "offer": 125, "offer_size": 9}
    if ind in b"MNOP":
        f.update(best_bid_part=ord("X"), best_bid_den=ord("B"), best_bid=121, best_bid_size=30)
    if ind in b"CGKO":
        f.update(best_offer_part=ord("Z"), best_offer_den=ord("C"), best_offer=1240, best_offer_size=50)
    return Msg(f, b"", (0, 0, 0))


@pytest.mark.parametrize("short", [False, True], ids=["k", "q"])
def test_every_indicator_on_long_and_short_quotes(short: bool) -> None:
    msgs = [quote(i, short) for i in INDICATORS] + [quote(ord("Z"), short)]  # and an unlisted letter: no appendage
    data = roundtrip(to_records(new_header(block_seq=5), msgs))
    b = decode_block(data)
    apps = {ord("O"): 20, **{ord(x): 10 for x in "CGKMNP"}}
    assert len(data) - 21 - (len(data) % 2) <= sum(43 - 14 * short + apps.get(i, 0) for i in [*INDICATORS, ord("Z")]) + 1
    for r in b.records:
        ind = int(r["bbo_ind"])
        has_bid, has_offer = ind in b"MNOP", ind in b"CGKO"
        assert (r["best_bid_px"] == 121 * P // 100) == has_bid and (r["best_offer_px"] == 124 * P // 100) == has_offer
        assert (int(r["fields"]) >> 31 & 1) == has_bid and (int(r["fields"]) >> 35 & 1) == has_offer
        assert r["strike_px"] == 500 * P and r["bid_px"] == 12 * P // 10 and r["put_call"] == ord("C")


@pytest.mark.parametrize("n", [0, 1, 30, 41, 200])
def test_admin_text_lengths(n: int) -> None:
    text = bytes((0x20 + i % 95) for i in range(n))
    m = Msg({"participant": ord("O"), "category": ord("C"), "msg_type": ord(" "), "bbo_ind": ord(" "), "wire": WIRE_OBI},
            text, (0, 0, 0))
    data = roundtrip(to_records(new_header(block_seq=9), [m]))
    b = decode_block(data)
    assert b.text(0) == text and len(data) == 35 + n + (n % 2 == 0)
    assert bool(int(b.header["status"]) & BLK_PAD) == (n % 2 == 0)


def test_extreme_values() -> None:
    f = {"participant": ord("N"), "category": ord("f"), "msg_type": ord(" "), "bbo_ind": ord(" "), "wire": WIRE_OBI,
         "root": b"XYZ  ", "month_code": ord("X"), "expiry_day": 31, "expiry_year": 99, "strike_den": ord("I"),
         "strike": 2**31 - 1, "volume": 2**32 - 1, "open_interest": 2**32 - 1, "premium_den": ord("B"),
         "net_change": 2**31, "net_change_ind": ord("-"), "underlying_den": ord("H"), "underlying_raw": 2**53 + 1,
         "bid": 0, "offer": 1}
    y0 = dict(f, expiry_year=0, month_code=ord("A"), expiry_day=1, net_change=0, net_change_ind=ord(" "),
              underlying_raw=2**63 - 1)
    built = to_records(new_header(block_seq=2**32 - 1, ts_sec=2**32 - 1, ts_nsec=999_999_999),
                       [Msg(f, b"", (2**32 - 1, 1, 0)), Msg(y0, b"", (0, 0, 0))])
    b = decode_block(roundtrip(built))
    r0, r1 = b.records
    assert r0["expiry"] == 20991231 and r0["put_call"] == ord("P") and r0["strike_px"] == (2**31 - 1) * P
    assert int(r0["underlying_raw"]) == 2**53 + 1 and r0["volume"] == 2**32 - 1
    assert r1["expiry"] == 20000101 and int(r1["underlying_raw"]) == 2**63 - 1 and r1["net_change_ind"] == ord(" ")
    assert r1["msg_seq"] == 2**32  # block_seq + index, not wrapped: the wrap is a Reset's business (9.1)


def test_invalid_month_or_day_keeps_raw_bytes_and_leaves_the_date_unknown() -> None:
    for month, day in ((ord("Y"), 15), (ord("C"), 0), (ord("C"), 32)):
        m = quote(ord("A"), False)
        m.fields.update(month_code=month, expiry_day=day)
        r = decode_block(roundtrip(to_records(new_header(), [m]))).records[0]
        assert (r["month_code"], r["expiry_day"], r["expiry"], r["put_call"]) == (month, day, 0, 0)


def _rec(**kw: object) -> np.ndarray:
    r = new_records(1)
    r["wire"] = WIRE_OBI
    r["root"] = b"AB   "
    r["root_len"] = 5
    for k, v in kw.items():
        r[k] = v
    return r


ENCODE_REFUSALS = [
    ("too-many-records", np.concatenate([_rec(category=ord("H"))] * 256), "MSG_COUNT"),
    ("admin-not-alone", np.concatenate([_rec(category=ord("C")), _rec(category=ord("a"))]), "NOT_ALONE"),
    ("control-not-alone", np.concatenate([_rec(category=ord("a")), _rec(category=ord("H"))]), "NOT_ALONE"),
    ("default-message", _rec(category=ord("?")), "CATEGORY"),
    ("short-strike", _rec(category=ord("k"), wire=WIRE_OBI | WIRE_SHORT, strike_den=ord("A"), premium_den=ord("B"),
                          strike=70000), "SHORT_RANGE"),
    ("short-denominator", _rec(category=ord("k"), wire=WIRE_OBI | WIRE_SHORT, strike_den=ord("C"), premium_den=ord("B")),
     "SHORT_RANGE"),
    ("short-symbol", _rec(category=ord("k"), wire=WIRE_OBI | WIRE_SHORT, strike_den=ord("A"), premium_den=ord("B"),
                          root=b"ABCDE"), "SHORT_RANGE"),
    ("six-byte-root", _rec(category=ord("k"), root=b"ABCDEF", root_len=6), "VALUE_RANGE"),
    ("net-change", _rec(category=ord("f"), net_change=2**31, net_change_ind=ord("+")), "VALUE_RANGE"),
    ("index-value", _rec(category=ord("Y"), msg_type=ord(" "), underlying_raw=2**31), "VALUE_RANGE"),
    ("mapped-line", _rec(category=ord("R"), volume=70000), "VALUE_RANGE"),
    ("text-outside-side", _rec(category=ord("C"), var_off=0, var_len=10), "VAR_OUTSIDE"),
    ("text-too-long", _rec(category=ord("C"), var_off=0, var_len=201), "TEXT_TOO_LONG"),
    ("too-big", np.concatenate([_rec(category=ord("R"))] * 7), "BLOCK_TOO_BIG"),
]


@pytest.mark.parametrize("name,records,code", ENCODE_REFUSALS, ids=[c[0] for c in ENCODE_REFUSALS])
def test_encoder_refuses_with_a_typed_error(name: str, records: np.ndarray, code: str) -> None:
    with pytest.raises(ObiEncodeError) as exc:
        encode_records(new_header(), records, b"")
    assert exc.value.name == code and code in str(exc.value)


def test_stream_encoder_cuts_blocks_as_opra_packs_a_line() -> None:
    from feedhandlers.opra_obi import decode_blocks
    from feedhandlers.opra_obi_stream import as_obi, encode_stream
    from ops.bench.random_capture import random_records

    recs = as_obi(random_records(3000, 9))
    recs["msg_seq"][1500:] += 10  # a gap: the block before it ends there
    ctl = new_records(1)
    ctl["category"], ctl["participant"], ctl["msg_type"], ctl["wire"] = ord("H"), ord("O"), ord("N"), WIRE_OBI
    ctl["msg_seq"] = recs["msg_seq"][-1] + 1
    recs = np.concatenate([recs, ctl])
    ts = 1_771_857_000 * 10**9 + np.arange(len(recs), dtype=np.int64) * 1000
    buf, off, ln, first = encode_stream(recs, b"", [40], ts_ns=ts)
    d = decode_blocks(buf, off, ln)
    assert not d.errors and d.counters["messages"] == len(recs) and int(ln.max()) <= 1000
    assert 1500 in first.tolist() and first[-1] == len(recs) - 1 and ln[-1] == 34  # the H alone
    assert d.records["msg_seq"].tolist() == recs["msg_seq"].tolist()
    last = np.append(first[1:], len(recs)) - 1
    assert (d.blocks["ts_sec"].astype(np.int64) * 10**9 + d.blocks["ts_nsec"] == ts[last]).all()
    assert (np.diff(first) <= 40).all()
