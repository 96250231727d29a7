"""The feeds task's counts (ops.spark.feeds.feed_tally, from the counting decoder) equal counting
the tick rows one by one: 10 ms windows (packets on their msg_index 0 row, messages, packet
bytes, first and last time), packets per message count, messages per (underlying, category),
nulls included. On the C decoder's own calls (small chunks, packet times out of order,
malformed packets, roots the manifest does not know) and on any calls hypothesis makes; on
those, the gaps in message sequence numbers too (packets whose first number is past the
highest end before them, and the numbers skipped; packets going back open none)."""
from __future__ import annotations

import datetime as dt
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedhandlers.captures import read_pcap
from ops.spark.common.data_layout import DataLayout
from ops.spark.feeds.feed_tally import TICK_WINDOWS_SCHEMA, WINDOW_NS, FeedTally
from ops.spark.feeds.manifest_roots import load_root_map
from ops.spark.feeds.tick_arrow import ArrowDecoded, ArrowTickDecoder
from ops.synth.generator import SynthConfig, synthesize

COLUMNS = ("ts_ns", "msg_index", "packet_messages", "packet_bytes", "underlying", "category")
_CHARS = pa.array([chr(i) for i in range(256)], pa.string())


def _reference(rows: list[dict]) -> tuple[dict, Counter, Counter]:
    """The counts, row by row."""
    windows: dict[int, list[int]] = {}
    per_packet: Counter = Counter()
    mix: Counter = Counter()
    for r in rows:
        w = r["ts_ns"] - r["ts_ns"] % WINDOW_NS
        acc = windows.setdefault(w, [0, 0, 0, r["ts_ns"], r["ts_ns"]])
        first = r["msg_index"] == 0
        acc[0] += first
        acc[1] += 1
        acc[2] += r["packet_bytes"] if first else 0
        acc[3], acc[4] = min(acc[3], r["ts_ns"]), max(acc[4], r["ts_ns"])
        per_packet[r["packet_messages"]] += first
        mix[(r["underlying"], r["category"])] += 1
    return {w: tuple(v) for w, v in windows.items()}, +per_packet, mix


def _tallied(tally: FeedTally) -> tuple[dict, Counter, Counter]:
    table = tally.windows()
    assert table.schema.equals(TICK_WINDOWS_SCHEMA)
    w10 = table.column("w10").to_pylist()
    assert w10 == sorted(w10)
    windows = {r["w10"]: (r["packets"], r["messages"], r["bytes"], r["first_ns"], r["last_ns"]) for r in table.to_pylist()}
    assert len(windows) == table.num_rows
    return windows, Counter(tally.messages_per_packet), Counter(tally.mix)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    data = tmp_path_factory.mktemp("synth")
    date = dt.date(2008, 2, 4)
    synthesize(SynthConfig(data=data, date=date, seconds=0.5, rate=1.0, seed=5, num_lines=1, progress=False))
    layout = DataLayout(data)
    (f,) = layout.capture_files(date.isoformat(), "A")
    return read_pcap(f.path), load_root_map(layout.manifest(date.isoformat()))


def _broken(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every 5th packet's start-of-header byte cleared, every 7th cut short: malformed."""
    buf, lengths = buf.copy(), lengths.astype(np.uint32).copy()
    buf[offsets[::5].astype(np.int64)] = 0
    lengths[3::7] = np.minimum(lengths[3::7], 10)
    return buf, lengths


@pytest.mark.full
@pytest.mark.parametrize("shuffle,broken", [(False, False), (True, False), (False, True)])
def test_counts_of_the_decoders_calls_equal_counting_the_rows(capture, shuffle, broken) -> None:
    cap, root_map = capture
    buf, lengths, ts = np.asarray(cap.buf), np.asarray(cap.lengths, np.uint32), np.asarray(cap.ts_ns, np.int64)
    if shuffle:  # packet times out of order, within and across chunks
        ts = np.random.default_rng(1).permutation(ts)
    if broken:
        buf, lengths = _broken(buf, np.asarray(cap.offsets), lengths)
    known = dict(list(sorted(root_map.items()))[::2])  # half the roots: null underlyings
    decoder = ArrowTickDecoder(reuse=True, dictionary=True, split=True, count=True)
    tally, rows, bad = FeedTally(), [], 0
    chunk = 97
    for start in range(0, len(cap), chunk):
        end = min(len(cap), start + chunk)
        done = decoder.decode(buf, cap.offsets[start:end], lengths[start:end], ts[start:end], known, start)
        tally.add(done, ts[start:end], lengths[start:end])
        bad += done.counters["packets_bad"]
        for batch in done.batches:
            rows += batch.select(COLUMNS).to_pylist()  # a copy: the buffers are reused
    assert (bad > 50) == broken
    got, want = _tallied(tally), _reference(rows)
    assert len(want[0]) > 10 and None in {u for u, _ in want[2]} and len({c for _, c in want[2]}) > 1
    assert got == want


@st.composite
def _calls(draw) -> list[tuple[ArrowDecoded, np.ndarray, np.ndarray, list[dict]]]:
    """Decode calls as a counting decoder returns them - packets (a time, a size, 0..6
    messages, 0 for a malformed one), their quotes in one batch and counted per root, their
    other messages in the rest batch, underlying and category null possible - with the rows."""
    roots = {"IBM": "IBM", "IBQ": "IBM", "MSQ": "MSFT", "ZZZ": None}
    cats = ["k", "a", "d", "Y", None]
    base = 1_202_135_400_000_000_000
    calls = []
    seq = draw(st.integers(0, 1_000))
    for _ in range(draw(st.integers(1, 4))):
        ts, lengths, packet_rows, packet_seq, rows = [], [], [], [], []
        names: list[str] = []
        for _ in range(draw(st.integers(1, 20))):
            t = base + draw(st.integers(0, 60)) * 3_000_000 + draw(st.integers(0, 2_999_999))
            size = draw(st.integers(20, 1_000))
            k = draw(st.integers(0, 6))
            ts.append(t), lengths.append(size), packet_rows.append(k)
            seq = max(0, seq + draw(st.sampled_from([0, 0, 0, 1, 4, -3, -40])))  # on time, a gap, going back
            packet_seq.append(seq if k else -1)
            for i in range(k):
                root, cat = draw(st.sampled_from(sorted(roots))), draw(st.sampled_from(cats))
                names += [root] if root not in names else []
                rows.append({"ts_ns": t, "msg_index": i, "packet_messages": k, "packet_bytes": size,
                             "root": root, "underlying": roots[root], "category": cat, "msg_seq": seq + i})
            seq += k
        under = sorted({roots[n] for n in names if roots[n] is not None})   # the call's dictionary

        def batch(part: list[dict]) -> pa.RecordBatch | None:
            return pa.RecordBatch.from_arrays([
                pa.array([r["ts_ns"] for r in part], pa.int64()),
                pa.array([r["msg_index"] for r in part], pa.int32()),
                pa.array([r["packet_messages"] for r in part], pa.int32()),
                pa.array([r["packet_bytes"] for r in part], pa.int32()),
                pa.DictionaryArray.from_arrays(pa.array([under.index(r["underlying"]) if r["underlying"] else None
                                                         for r in part], pa.int32()), pa.array(under, pa.string())),
                pa.DictionaryArray.from_arrays(pa.array([ord(r["category"]) if r["category"] else None for r in part],
                                                        pa.int32()), _CHARS),
            ], names=list(COLUMNS)) if part else None

        done = ArrowDecoded(
            batch([r for r in rows if r["category"] == "k"]), rest=batch([r for r in rows if r["category"] != "k"]),
            packet_rows=np.array(packet_rows, np.int32), packet_seq=np.array(packet_seq, np.int64),
            root_quotes=np.array([sum(r["root"] == n and r["category"] == "k" for r in rows) for n in names], np.uint32),
            root_underlying=np.array([under.index(roots[n]) if roots[n] else len(under) for n in names], np.int64))
        calls.append((done, np.array(ts, np.int64), np.array(lengths, np.uint32), rows))
    return calls


@pytest.mark.full
@settings(max_examples=200, deadline=None)
@given(_calls())
def test_counts_of_any_calls_equal_counting_the_rows(calls) -> None:
    tally = FeedTally()
    for done, ts, lengths, _ in calls:
        tally.add(done, ts, lengths)
    rows = [r for *_, rows in calls for r in rows]
    assert _tallied(tally) == _reference(rows)
    assert (tally.gaps, tally.gap_messages) == _gaps([(r["msg_seq"], r["packet_messages"]) for r in rows
                                                      if r["msg_index"] == 0])


def _gaps(packets: list[tuple[int, int]]) -> tuple[int, int]:
    """Gaps and the numbers they skip, packet by packet (first msg_seq, messages)."""
    gaps = skipped = 0
    reach = None
    for first, n in packets:
        if reach is not None and first > reach:
            gaps, skipped = gaps + 1, skipped + first - reach
        reach = first + n if reach is None else max(reach, first + n)
    return gaps, skipped


def test_no_call_gives_no_window() -> None:
    tally = FeedTally()
    assert tally.windows().num_rows == 0 and tally.messages_per_packet == {} and tally.mix == {}
