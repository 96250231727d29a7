"""``omdp capture stats`` numbers on a capture whose timing and contents are known: packets
1 ms apart with a burst of larger packets on one line, a slower second line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from feedhandlers.captures import write_pcap
from feedhandlers.opra_fast import encode_records, new_records
from ops.capture.locate import CaptureNotFound, capture_lines
from ops.capture.stats import capture_stats, format_stats
from ops.synth.records import FIELDS_K, FIELDS_TEXT

T0 = 1_202_135_400_000_000_000


def _quotes(n: int, seq: int) -> np.ndarray:
    r = new_records(n)
    r["category"], r["msg_type"], r["participant"], r["retrans"] = ord("k"), 32, ord("C"), 32
    r["msg_seq"] = seq + np.arange(n)
    r["time"] = 93000000
    r["root"], r["root_len"] = b"ABC  ", 5
    r["month_code"], r["expiry_day"], r["expiry_year"] = ord("B"), 16, 8
    r["strike_den"], r["strike"], r["strike_code"] = ord("C"), 40000, ord("H")
    r["premium_den"], r["bid"], r["bid_size"], r["offer"], r["offer_size"] = ord("B"), 100, 10, 110, 10
    r["session"], r["bbo_ind"], r["fields"] = 32, ord("A"), FIELDS_K
    return r


def _packet(n_quotes: int, seq: int, with_text: bool = False) -> bytes:
    recs = _quotes(n_quotes, seq)
    side = b""
    if with_text:
        t = new_records(1)
        t["category"], t["msg_type"], t["participant"], t["retrans"] = ord("C"), 32, ord("O"), 32
        t["msg_seq"], t["time"], t["fields"], t["var_len"] = seq + n_quotes, 93000000, FIELDS_TEXT, 5
        recs = np.concatenate([recs, t])
        side = b"HELLO"
    return encode_records(recs, side)


@pytest.fixture()
def known(tmp_path: Path) -> tuple[Path, list[int], list[int], list[int], list[int]]:
    counts1 = [10 if 500 <= i < 510 else 3 for i in range(1000)]
    pk1, seq = [], 1
    for c in counts1:
        pk1.append(_packet(c, seq))
        seq += c
    ts1 = [T0 + i * 1_000_000 for i in range(1000)]
    pk2 = [_packet(1, 1 + 2 * i, with_text=True) for i in range(200)]
    ts2 = [T0 + 300_000 + i * 5_000_000 for i in range(200)]
    write_pcap(tmp_path / "line01.pcap", pk1, ts1, dst_ip="233.43.202.1", dst_port=11001)
    write_pcap(tmp_path / "line02.pcap", pk2, ts2, dst_ip="233.43.202.2", dst_port=11002)
    (tmp_path / "line02-b.pcap").write_bytes((tmp_path / "line02.pcap").read_bytes())
    return tmp_path, counts1 + [2] * 200, ts1 + ts2, [len(p) for p in pk1 + pk2], [len(p) for p in pk1]


def _brute_peak(ts: list[int], w: list[int], window: int) -> float:
    best = 0
    for t in ts:
        best = max(best, sum(wi for tj, wi in zip(ts, w) if t <= tj < t + window))
    return best * 1e9 / window


def test_line_numbers(known: tuple) -> None:
    path, counts, ts, sizes, sizes1 = known
    st = capture_stats(path)
    assert sorted(st.lines) == [1, 2]
    l1 = st.lines[1]
    assert (l1.packets, l1.messages) == (1000, 3070)
    assert l1.span_s == pytest.approx(0.999)
    assert l1.packets_per_s == pytest.approx(1000 / 0.999)
    assert l1.messages_per_s == pytest.approx(3070 / 0.999)
    assert l1.peak_packets_per_s == {"100ms": pytest.approx(1000.0), "10ms": pytest.approx(1000.0)}
    assert l1.peak_messages_per_s["10ms"] == pytest.approx(100 / 0.01)
    assert l1.peak_messages_per_s["100ms"] == pytest.approx((10 * 10 + 90 * 3) / 0.1)
    assert l1.messages_per_packet["max"] == 10 and l1.messages_per_packet["p50"] == 3
    assert l1.bytes_per_packet["mean"] == pytest.approx(np.mean(sizes1), abs=1e-3)
    assert l1.categories == {"k": 3070}
    l2 = st.lines[2]
    assert l2.categories == {"C": 200, "k": 200} and l2.peak_packets_per_s["10ms"] == pytest.approx(200.0)


def test_totals_against_brute_force(known: tuple) -> None:
    path, counts, ts, sizes, _ = known
    t = capture_stats(path).total
    assert (t.packets, t.messages, t.payload_bytes) == (1200, 3470, sum(sizes))
    assert t.span_s == pytest.approx((max(ts) - min(ts)) / 1e9)
    for name, w in (("10ms", 10_000_000), ("100ms", 100_000_000)):
        assert t.peak_packets_per_s[name] == pytest.approx(_brute_peak(ts, [1] * len(ts), w))
        assert t.peak_messages_per_s[name] == pytest.approx(_brute_peak(ts, counts, w))
    assert t.bad_packets == 0
    text = format_stats(capture_stats(path))
    assert "all" in text and "k quote 3,270" in text


def test_locating_files(known: tuple, tmp_path: Path) -> None:
    path = known[0]
    assert list(capture_lines(path)) == [1, 2]
    assert list(capture_lines(path, "b")) == [2]
    assert list(capture_lines(path / "line02.pcap")) == [2]
    with pytest.raises(CaptureNotFound):
        capture_lines(tmp_path / "nothing-here")
