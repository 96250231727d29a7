"""A generated capture, end to end: every packet decodes and re-encodes identically,
sequences are contiguous, roots are cut alphabetically across lines, BBO indicators agree
with an NBBO kept independently, the ground truth is in the feed, B copies match."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from feedhandlers.captures import read_pcap
from feedhandlers.captures.framing import ip_to_int
from feedhandlers.opra_fast import BatchDecoder, decode_packet, encode_packet
from ops.synth.generator import SynthResult
from ops.synth.manifest import load_manifest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbbo_replay import NbboReplay  # noqa: E402


def _decoded(res: SynthResult, copy: str = "a") -> dict[int, tuple]:
    out = {}
    for ln in res.manifest.lines:
        for name in ln.files[copy]:
            cap = read_pcap(res.directory / name)
            buf, off, lens = cap.contiguous()
            d = BatchDecoder().decode(buf, off, lens)
            assert d.counters["packets_bad"] == 0
            out[ln.line] = (cap, d.records.copy(), d.pkt_first.copy(), d.pkt_count.copy(), bytes(buf))
    return out


@pytest.fixture(scope="module")
def decoded(small_capture: SynthResult) -> dict[int, tuple]:
    return _decoded(small_capture)


def test_manifest_validates_and_names_every_file(small_capture: SynthResult) -> None:
    m = load_manifest(small_capture.directory)
    assert m == small_capture.manifest
    assert len(m.lines) == 6 and m.seed == 7 and m.date.isoformat() == "2008-02-04"
    for ln in m.lines:
        assert ln.files["a"] == [f"line{ln.line:02d}.pcap"] and ln.files["b"] == [f"line{ln.line:02d}-b.pcap"]
        assert (ln.a.group, ln.a.port) == (f"233.43.202.{ln.line}", 11000 + ln.line)
    assert set(m.roots.values()) <= {u.symbol for u in m.underlyings}
    assert [u.id for u in m.underlyings] == list(range(len(m.underlyings)))


def test_every_packet_round_trips(small_capture: SynthResult, decoded: dict) -> None:
    n = 0
    for cap, *_ in decoded.values():
        for i in range(len(cap)):
            p = cap.payload(i)
            assert len(p) <= 1456
            assert encode_packet(decode_packet(p, i)) == p
            n += 1
    assert n == small_capture.manifest.rate.packets


def test_sequences_contiguous_from_one_and_times_forward(small_capture: SynthResult, decoded: dict) -> None:
    for line, (cap, recs, first, count, _) in decoded.items():
        seq = recs["msg_seq"].astype(np.int64)
        assert seq[0] == 1 and np.all(np.diff(seq) == 1)
        assert np.array_equal(recs["block_seq"][first].astype(np.int64), seq[first])
        assert recs[0]["category"] == ord("H") and recs[0]["msg_type"] == ord("C")
        assert np.all(np.diff(cap.ts_ns) >= 0)
        t = recs["time"].astype(np.int64)
        assert np.all(np.diff(t) >= 0) and t[0] >= 93000000 and t[-1] < 93003000
        assert np.all(cap.dst_ip == ip_to_int(f"233.43.202.{line}")) and np.all(cap.dst_port == 11000 + line)
        ln = small_capture.manifest.lines[line - 1]
        assert (ln.packets, ln.messages, ln.first_seq, ln.last_seq) == (len(cap), len(recs), 1, len(recs))


def test_roots_are_alphabetical_across_lines(small_capture: SynthResult, decoded: dict) -> None:
    lines = small_capture.manifest.lines
    for a, b in zip(lines, lines[1:]):
        assert a.last_root < b.first_root
    for line, (_, recs, *_r) in decoded.items():
        ln = lines[line - 1]
        roots = {bytes(r).rstrip(b" \0").decode() for r in recs["root"][recs["root_len"] > 0]}
        assert roots and all(ln.first_root <= r <= ln.last_root for r in roots)
    assert sum(ln.roots for ln in lines) == small_capture.manifest.universe.roots


def test_quotes_dominate_and_other_categories_appear(small_capture: SynthResult, decoded: dict) -> None:
    cats = np.concatenate([d[1]["category"] for d in decoded.values()])
    counts = {chr(c): int(n) for c, n in zip(*np.unique(cats, return_counts=True))}
    assert counts["k"] / cats.size >= 0.999
    assert {"a", "d", "H", "Y"} <= set(counts)


def test_rate_and_messages_per_packet(small_capture: SynthResult, decoded: dict) -> None:
    r = small_capture.manifest.rate
    assert r.packets_per_second == pytest.approx(0.3 * 24_000, rel=0.15)
    assert r.messages_per_packet == pytest.approx(14.0, abs=1.0)
    sizes = np.concatenate([d[0].lengths for d in decoded.values()])
    assert sizes.max() <= 1456


@pytest.mark.full  # a Python NBBO over 50,000 quotes
def test_bbo_indicators_match_an_independent_nbbo(small_capture: SynthResult, decoded: dict) -> None:
    gt = pq.read_table(small_capture.directory / small_capture.manifest.ground_truth.file).to_pydict()
    anomalous = set(zip(gt["line"], gt["seq"]))
    replay = NbboReplay()
    for line, (_, recs, *_r) in decoded.items():
        for m in recs[recs["category"] == ord("k")]:
            replay.feed(m, line, (line, int(m["msg_seq"])) in anomalous)
    assert replay.checked > 50_000
    assert replay.mismatches == []
    assert replay.unexplained == []
    # the ground truth's kinds and NBBO states are what the feed shows
    for line, seq, kind, state in zip(gt["line"], gt["seq"], gt["kind"], gt["nbbo_state"]):
        assert replay.states[(line, seq)] == state
        if kind in ("locked", "crossed"):
            assert state == kind


@pytest.mark.full  # a Python NBBO over the capture's quotes
def test_parity_events_break_parity_beyond_the_spreads(small_capture: SynthResult, decoded: dict) -> None:
    """While every exchange's quote of the call is shifted, the synthetic forward at the pair's
    best quotes (call bid - put offer, or call offer - put bid) trades through the fair one
    (the call's unshifted mid less the put's) by more than the cost of trading it, at the
    call's last shifted quote or at a quote of the put before the call is requoted: a break
    a spread-aware engine can see, not a move inside a wide put's spread."""
    gt = pq.read_table(small_capture.directory / small_capture.manifest.ground_truth.file).to_pandas()
    shifted = set(zip(gt["line"], gt["seq"]))
    last = gt[gt["kind"] == "parity"].groupby("event").tail(1)   # the event's last shifted exchange
    events = {(int(r.line), int(r.seq)): r for r in last.itertuples()}
    replay, pending, broken = NbboReplay(), {}, {}

    def judge(key: tuple, r: object) -> None:
        if (*key, ord("P")) not in replay.books:
            return
        cb, co = replay._best(replay.books[(*key, ord("C"))])
        pb, po = replay._best(replay.books[(*key, ord("P"))])
        fair = (r.fair_bid + r.fair_offer) / 2 - (pb[0] + po[0]) / 2    # cents
        cost = max(10.0, 0.0005 * (r.strike_px / 1e7 + fair))              # 0.05% of ~the forward
        now = cb[0] - po[0] > fair + cost if r.magnitude > 0 else co[0] - pb[0] < fair - cost
        broken[r.event] = broken.get(r.event, False) or now

    for line, (_, recs, *_r) in decoded.items():
        for m in recs[recs["category"] == ord("k")]:
            key, at = (bytes(m["root"]), int(m["expiry"]), int(m["strike_px"])), (line, int(m["msg_seq"]))
            if m["put_call"] == ord("C") and key in pending and at not in shifted:
                del pending[key]                                  # an exchange quotes the call normally again
            replay.feed(m, line, False)
            if m["put_call"] == ord("P") and key in pending:
                judge(key, pending[key])
            if at in events:
                pending[key] = events[at]
                judge(key, events[at])
    assert set(broken) == {r.event for r in events.values()} and all(broken.values()), broken


def test_ground_truth_rows_are_those_quotes(small_capture: SynthResult, decoded: dict) -> None:
    gt = pq.read_table(small_capture.directory / small_capture.manifest.ground_truth.file).to_pydict()
    assert set(gt["kind"]) == {"locked", "crossed", "off_smile", "parity"}
    assert small_capture.manifest.ground_truth.rows == len(gt["kind"])
    for i in range(len(gt["kind"])):
        recs = decoded[gt["line"][i]][1]
        m = recs[gt["seq"][i] - 1]
        assert int(m["msg_seq"]) == gt["seq"][i] and m["category"] == ord("k")
        assert bytes(m["root"]).rstrip(b" \0").decode() == gt["root"][i]
        assert chr(int(m["participant"])) == gt["participant"][i]
        assert (int(m["expiry"]), int(m["strike_px"]), chr(int(m["put_call"]))) == (gt["expiry"][i], gt["strike_px"][i], gt["put_call"][i])
        assert (int(m["bid"]), int(m["offer"]), int(m["time"])) == (gt["bid"][i], gt["offer"][i], gt["time"][i])
        assert (int(m["bid"]), int(m["offer"])) != (gt["fair_bid"][i], gt["fair_offer"][i])


def test_b_copies_carry_the_same_packets(small_capture: SynthResult, decoded: dict) -> None:
    for ln in small_capture.manifest.lines:
        a = decoded[ln.line][0]
        b = read_pcap(small_capture.directory / ln.files["b"][0])
        assert a.payloads() == b.payloads() and np.array_equal(a.ts_ns, b.ts_ns)
        assert np.all(b.dst_ip == ip_to_int(ln.b.group)) and np.all(b.dst_port == ln.b.port)


def test_every_quote_is_on_its_tick_grid(small_capture: SynthResult, decoded: dict) -> None:
    penny = {u.symbol for u in small_capture.manifest.underlyings if u.penny}
    roots = small_capture.manifest.roots
    for _, recs, *_r in decoded.values():
        k = recs[recs["category"] == ord("k")]
        is_penny = np.array([roots[bytes(r).rstrip(b" \0").decode()] in penny for r in k["root"]])
        for side in ("bid", "offer"):
            p = k[side].astype(np.int64)
            tick = np.where(p < 300, np.where(is_penny, 1, 5), np.where(is_penny, 5, 10))
            assert np.all(p % tick == 0)
