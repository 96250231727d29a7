"""omdp synth --market today: a small OBI v6 capture checked against what the generator
promises - layout and manifest, groups and ports of spec 2.2, every block decoding with its
checksum (but the injected ones), MSNs contiguous per line but the injected gaps, A and B
identical but the injected faults, the message mix, the burst profile, one line per series,
and a BBO kept from the indicators that agrees with the appendages."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from feedhandlers.captures import read_capture
from feedhandlers.opra_obi import decode_blocks
from ops.synth.manifest import load_manifest
from ops.synth.today.generator import FAULTS_FILE, TodayConfig, synthesize_today
from ops.synth.today.profile import burst_profile

SECONDS = 1.0


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("today")
    cfg = TodayConfig(data=data, seconds=SECONDS, rate=0.005, underlyings=150, series=12_000, b_copy=True,
                      gaps_per_second=6.0, checksums_per_second=6.0,
                      anomalies_per_second={"locked": 40.0, "crossed": 40.0}, progress=False)
    return synthesize_today(cfg).directory


def _read(capture: Path, name: str):
    cap = read_capture(capture / name)
    return cap, decode_blocks(*cap.contiguous(), keep_bad_checksum=True)


def test_manifest_and_layout(capture: Path) -> None:
    m = load_manifest(capture)
    assert m.feed_format == "obi-v6"
    assert [ln.line for ln in m.lines] == list(range(1, 97))
    assert len(m.exchanges) - 1 >= 17  # participants of spec 8.1 plus O
    for ln in m.lines:
        assert ln.files == {"a": [f"line{ln.line:02d}.pcap"], "b": [f"line{ln.line:02d}-b.pcap"]}
        assert (ln.a.group, ln.b.group) == (f"224.0.204.{ln.line}", f"224.0.206.{ln.line}")
        assert ln.a.port == ln.b.port == 45000 + ln.line
        assert (capture / ln.files["a"][0]).exists() and (capture / ln.files["b"][0]).exists()
    raw = json.loads((capture / "manifest.json").read_text())
    assert raw["feed_format"] == "obi-v6"
    assert (capture / "ground_truth.parquet").exists() and (capture / FAULTS_FILE).exists()


def test_old_manifests_default_to_fast(capture: Path, tmp_path: Path) -> None:
    raw = json.loads((capture / "manifest.json").read_text())
    raw.pop("feed_format")
    raw.pop("profile")
    raw["ground_truth"].pop("faults_file")
    raw["ground_truth"].pop("faults")
    raw["lines"] = raw["lines"][:24]
    (tmp_path / "manifest.json").write_text(json.dumps(raw))
    assert load_manifest(tmp_path).feed_format == "opra-fast-v2"
    raw["feed_format"] = "obi-v6"
    raw["lines"][0]["line"] = 97
    (tmp_path / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="97"):
        load_manifest(tmp_path)


def test_blocks_decode_sequence_and_copies(capture: Path) -> None:
    m = load_manifest(capture)
    faults = pq.read_table(capture / FAULTS_FILE).to_pylist()
    assert {f["kind"] for f in faults} == {"gap", "checksum"}
    by_line: dict[int, list[dict]] = {}
    for f in faults:
        by_line.setdefault(f["line"], []).append(f)
    seen_faults = 0
    for ln in m.lines:
        copies = {}
        for copy in ("a", "b"):
            cap, dec = _read(capture, ln.files[copy][0])
            assert not dec.errors, dec.errors[:1]
            assert (cap.lengths <= 1000).all()
            bad = {int(b["block_seq"]) for b in dec.blocks if b["status"] & 1}
            want_bad = {f["block_seq"] for f in by_line.get(ln.line, []) if f["kind"] == "checksum" and f["copy"] == copy}
            assert bad == want_bad
            seq = dec.records["msg_seq"].astype(np.int64)
            assert seq[0] == 0 and chr(dec.records["category"][0]) == "H" and chr(dec.records["msg_type"][0]) == "C"
            missing = set(range(int(seq[-1]) + 1)) - set(seq.tolist())
            want_missing = set()
            for f in by_line.get(ln.line, []):
                if f["kind"] == "gap" and copy in f["copy"]:
                    want_missing |= set(range(f["block_seq"], f["block_seq"] + f["msg_count"]))
            assert missing == want_missing
            copies[copy] = {int(b["block_seq"]): cap.payload(i) for i, b in enumerate(dec.blocks)}
        # A and B: the same bytes for every block both carry, but the bad checksums
        sums = {f["block_seq"] for f in by_line.get(ln.line, []) if f["kind"] == "checksum"}
        for s in set(copies["a"]) & set(copies["b"]):
            if s not in sums:
                assert copies["a"][s] == copies["b"][s]
        seen_faults += len(by_line.get(ln.line, []))
    assert seen_faults == len(faults) == sum(m.ground_truth.faults.values())


def test_message_mix_and_line_of_each_series(capture: Path) -> None:
    m = load_manifest(capture)
    cats: Counter = Counter()
    series_line: dict[tuple, int] = {}
    for ln in m.lines:
        _, dec = _read(capture, ln.files["a"][0])
        r = dec.records
        short = (r["wire"] & 2) != 0
        cats.update(chr(c) for c in r["category"])
        cats["q"] += int(short.sum())
        cats["k"] -= int(short.sum())
        assert (r["category"][r["category"] == ord("C")].size == 0) or ln.line == 4
        assert (r["category"][r["category"] == ord("Y")].size == 0) or ln.line == 4
        digit = np.array([bytes(x)[:1].isdigit() for x in r["root"]]) & np.isin(r["category"], [ord("k"), ord("a")])
        assert not digit.any() or ln.line == 4
        quotes = r[np.isin(r["category"], [ord("k"), ord("a")])]
        for key in set(zip(quotes["root"].tolist(), quotes["expiry"].tolist(), quotes["strike_px"].tolist(),
                           quotes["put_call"].tolist())):
            assert series_line.setdefault(key, ln.line) == ln.line
    quotes = cats["k"] + cats["q"]
    assert cats["H"] == 96
    assert cats["k"] > 0 and cats["q"] > 0 and cats["Y"] > 0
    assert 0 < cats["a"] < quotes / 200


def test_bbo_from_indicators_matches_appendages(capture: Path) -> None:
    """Keep every participant's latest quote per series: the best bid over them is what the
    indicator says (this quote, none, or the appendage's participant, price and size), and
    every ground-truth quote left the market locked or crossed."""
    m = load_manifest(capture)
    gt = pq.read_table(capture / "ground_truth.parquet").to_pylist()
    assert gt and {g["kind"] for g in gt} <= {"locked", "crossed"}
    assert all(g["seq"] > 0 and g["nbbo_state"] in ("locked", "crossed") for g in gt)
    gapped = {f["line"] for f in pq.read_table(capture / FAULTS_FILE).to_pylist() if f["kind"] == "gap" and "a" in f["copy"]}
    for ln in [x for x in m.lines if x.line not in gapped][:12]:
        _, dec = _read(capture, ln.files["a"][0])
        r = dec.records
        bids: dict[tuple, dict[int, tuple]] = {}
        for x in r[r["category"] == ord("k")]:
            key = (bytes(x["root"]), int(x["expiry"]), int(x["strike_px"]), int(x["put_call"]))
            book = bids.setdefault(key, {})
            book[int(x["participant"])] = (int(x["bid"]), int(x["bid_size"]), int(x["offer"]), int(x["offer_size"]))
            i = int(x["bbo_ind"]) - ord("A")
            best_b = max(((b, s, -p) for p, (b, s, _, _) in book.items() if b > 0), default=None)
            if i >> 2 == 3:
                assert best_b is not None and (best_b[0], best_b[1]) == (int(x["best_bid"]), int(x["best_bid_size"]))
                assert -best_b[2] == int(x["best_bid_part"])
            if i >> 2 == 2:
                assert best_b is None
            if i >> 2 == 1:
                assert best_b is not None and -best_b[2] == int(x["participant"])


def test_burst_profile_peak_over_mean() -> None:
    rng = np.random.default_rng(1)
    for ratio in (3.0, 8.0, 20.0):
        p = burst_profile(rng, 1000, ratio)
        assert p.mean() == pytest.approx(1.0) and p.max() / p.mean() == pytest.approx(ratio, rel=1e-6)


@pytest.mark.full
def test_capture_peak_over_mean(tmp_path: Path) -> None:
    cfg = TodayConfig(data=tmp_path, seconds=1.5, rate=0.01, peak_ratio=6.0, underlyings=100, series=8_000,
                      gaps_per_second=0, checksums_per_second=0, progress=False)
    d = synthesize_today(cfg).directory
    ts = []
    for f in sorted(d.glob("line*.pcap")):
        cap, dec = _read(d, f.name)
        ts.append(np.repeat(cap.ts_ns, dec.blocks["count"].astype(np.int64)))
    t = np.sort(np.concatenate(ts))
    t = t - t[0]
    per_bucket = np.bincount(t // 10_000_000)
    ratio = per_bucket.max() / per_bucket[:150].mean()
    assert ratio == pytest.approx(6.0, rel=0.15)


def test_book_refuses_indices_outside_it() -> None:
    from ops.synth.today.book import QuoteBook

    book = QuoteBook(n_series=4, n_exch=18)
    one, two = np.ones(1, dtype=np.uint32), np.ones(2, dtype=np.uint32)
    with pytest.raises(ValueError, match="outside the book"):
        book.apply(np.array([4]), np.array([0]), one, one, one * 3, one, np.zeros(1, np.uint8), one)
    with pytest.raises(ValueError, match="outside the book"):
        book.apply(np.array([0]), np.array([18]), one, one, one * 3, one, np.zeros(1, np.uint8), one)
    with pytest.raises(ValueError, match="tick must have one value per quote"):
        book.apply(np.array([0, 0]), np.array([0, 1]), two * 5, two, two * 9, two, np.zeros(2, np.uint8), one)
    q = book.apply(np.array([0, 0]), np.array([0, 1]), two * 5, two, two * 9, two, np.zeros(2, np.uint8), two)
    # the second participant's bid of 5 ties on price and size: the first keeps the best bid
    assert bytes(q.bbo_ind).decode() == "FA"
