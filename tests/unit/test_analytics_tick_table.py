"""The tick table's Arrow conversion and the capture names the feeds job reads: decoded
records become typed columns with nulls where a message carries no value, vectorized."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from feedhandlers.opra_fast import decode_batch, encode_records, new_records
from ops.spark.common.data_layout import DataLayout, check_date, parse_capture_name
from ops.spark.feeds.tick_table import TICK_FILE_SCHEMA, TICK_SCHEMA, ticks_batch


def _records() -> np.ndarray:
    r = new_records(3)
    r["category"] = [ord("k"), ord("a"), ord("k")]
    r["msg_type"] = ord(" ")
    r["participant"] = ord("C")
    r["retrans"] = ord(" ")
    r["msg_seq"] = [7, 8, 9]
    r["time"] = 93_000_123
    r["root"] = [b"IBM", b"IBQ", b"ZZZ"]
    r["root_len"] = 3
    r["month_code"] = ord("O")  # March put
    r["expiry_day"] = 22
    r["expiry_year"] = 8
    r["strike_den"] = ord("A")
    r["strike"] = 1_200
    r["strike_code"] = ord("D")
    r["premium_den"] = ord("B")
    r["bid"], r["bid_size"], r["offer"], r["offer_size"] = 910, 10, 920, 20
    r["premium"], r["volume"] = 915, 5
    r["session"] = ord(" ")
    r["bbo_ind"] = ord(" ")
    return r


def test_decoded_records_become_typed_columns_with_nulls() -> None:
    wire = encode_records(_records())
    buf = np.frombuffer(wire, np.uint8)
    rec = decode_batch(buf, np.array([0]), np.array([len(wire)])).records
    batch = ticks_batch(
        rec, ts_ns=np.full(3, 1_202_135_400_123_456_789), packet_messages=np.full(3, 3),
        packet_bytes=np.full(3, len(wire)), root_map={"IBM": "IBM", "IBQ": "IBM"},
    )
    assert batch.schema.equals(TICK_FILE_SCHEMA)
    assert [f.name for f in TICK_SCHEMA.fields] == TICK_FILE_SCHEMA.names + ["date", "line"]
    rows = pa.Table.from_batches([batch]).to_pylist()
    quote, sale, unknown = rows
    assert quote["ts_ns"] == 1_202_135_400_123_456_789
    assert quote["msg_index"] == 0 and sale["msg_index"] == 1 and quote["packet_messages"] == 3
    assert quote["root"] == "IBM" and sale["underlying"] == "IBM" and unknown["underlying"] is None
    assert quote["put_call"] == "P" and quote["expiry"] == 20080322 and quote["strike_px"] == 120 * 10**9
    assert quote["bid_px"] == 9_100_000_000 and quote["bid_size"] == 10 and quote["offer_size"] == 20
    assert quote["premium_px"] is None and quote["volume"] is None  # a quote has no last sale
    assert sale["premium_px"] == 9_150_000_000 and sale["volume"] == 5 and sale["bid_px"] is None
    assert quote["category"] == "k" and sale["category"] == "a" and quote["participant"] == "C"
    assert quote["time"] == 93_000_123


@pytest.mark.parametrize(
    "name,parsed",
    [
        ("line01.pcap", (1, "A", 0)),
        ("line12.3.pcap", (12, "A", 3)),
        ("line02-b.pcap", (2, "B", 0)),
        ("line02-b.1.pcap", (2, "B", 1)),
        ("manifest.json", None),
        ("line1x.pcap", None),
    ],
)
def test_capture_names(name: str, parsed: tuple | None) -> None:
    assert parse_capture_name(Path(name)) == parsed


def test_capture_files_are_listed_by_line_copy_and_part(tmp_path: Path) -> None:
    layout = DataLayout(tmp_path)
    folder = layout.captures("2008-02-04")
    folder.mkdir(parents=True)
    for name in ("line02.pcap", "line01.1.pcap", "line01.pcap", "line01-b.pcap", "notes.txt"):
        (folder / name).write_bytes(b"x")
    assert [(f.line, f.copy, f.part) for f in layout.capture_files("2008-02-04")] == [(1, "A", 0), (1, "A", 1), (2, "A", 0)]
    assert [(f.line, f.copy) for f in layout.capture_files("2008-02-04", "AB")] == [(1, "A"), (1, "A"), (1, "B"), (2, "A")]


def test_dates_must_be_calendar_dates() -> None:
    assert check_date("2008-02-04") == "2008-02-04"
    for bad in ("20080204", "2008-02-30", "../etc"):
        with pytest.raises(ValueError):
            check_date(bad)
