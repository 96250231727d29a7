"""Generation choices: same seed same bytes, rotation, a window that starts mid-day, and one
that covers the close (summaries and the end-of-day control message)."""
from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import numpy as np
import pytest

from feedhandlers.captures import read_pcap
from feedhandlers.opra_fast import BatchDecoder
from ops.synth.generator import SynthConfig, synthesize


def _tiny(data: Path, **kw: object) -> SynthConfig:
    base = dict(data=data, seconds=0.5, rate=0.1, seed=3, num_lines=3, underlyings=200, progress=False)
    base.update(kw)
    return SynthConfig(**base)  # type: ignore[arg-type]


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def _records(path: Path) -> np.ndarray:
    cap = read_pcap(path)
    buf, off, lens = cap.contiguous()
    return BatchDecoder().decode(buf, off, lens).records.copy()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = synthesize(_tiny(tmp_path / "a"))
    b = synthesize(_tiny(tmp_path / "b"))
    c = synthesize(_tiny(tmp_path / "c", seed=4))
    da, db, dc = _digests(a.directory), _digests(b.directory), _digests(c.directory)
    assert set(da) == {"line01.pcap", "line02.pcap", "line03.pcap", "manifest.json", "ground_truth.parquet"}
    assert da == db
    assert da["line01.pcap"] != dc["line01.pcap"]


def test_rotation_splits_a_line_into_ordered_files(tmp_path: Path) -> None:
    res = synthesize(_tiny(tmp_path, rotate_bytes=64 * 1024))
    files = res.manifest.lines[0].files["a"]
    assert len(files) > 1 and files[1] == "line01.1.pcap"
    seqs = np.concatenate([_records(res.directory / f)["msg_seq"] for f in files]).astype(np.int64)
    assert seqs[0] == 1 and np.all(np.diff(seqs) == 1)
    assert all((res.directory / f).stat().st_size <= 64 * 1024 for f in files)


def test_a_mid_day_window_continues_the_sequence(tmp_path: Path) -> None:
    res = synthesize(_tiny(tmp_path, start=dt.time(11, 0)))
    recs = _records(res.directory / "line01.pcap")
    assert recs["msg_seq"][0] > 1000 and recs["category"][0] != ord("H")
    assert recs["time"][0] >= 110000000
    assert res.manifest.lines[0].first_seq == int(recs["msg_seq"][0])


@pytest.mark.full  # 42 s of feed synthesized
def test_a_window_over_the_close_ends_with_summaries_and_end_of_day(tmp_path: Path) -> None:
    res = synthesize(_tiny(tmp_path, start=dt.time(15, 59, 50), seconds=42.0, rate=0.3))
    assert res.manifest.rate.session_seconds == 10.0
    cats: dict[str, int] = {}
    for ln in res.manifest.lines:
        recs = _records(res.directory / ln.files["a"][0])
        k = recs["category"] == ord("k")
        assert recs["time"][k].max() < 160000000
        f = recs[recs["category"] == ord("f")]
        assert np.all((f["time"] >= 160001000) & (f["time"] < 160021000))
        assert np.all(f["volume"] > 0) and np.all(f["high"] >= f["low"])
        last = recs[-1]
        assert chr(int(last["category"])) == "H" and chr(int(last["msg_type"])) == "J" and last["time"] == 160030000
        for c in recs["category"]:
            cats[chr(int(c))] = cats.get(chr(int(c)), 0) + 1
    assert cats.get("f", 0) > 0 and cats.get("a", 0) >= cats["f"]


def test_a_listed_options_file_drives_the_universe(tmp_path: Path) -> None:
    def rec(root: str, und: str, company: str, exch: str, limit: int, typ: str) -> str:
        return f"{root:<7}{und:<7}{company:<31.31}{exch:<12}{limit * 100:012d} {'000000000':<10}{typ:<3}"
    lines = [rec("AAQ", "AAPL", "Apple Inc", "ABCIPX", 250_000, "EU"), rec("APV", "AAPL", "Apple Inc (09LPS)", "ABCIPX", 250_000, "EL"),
             rec("MSQ", "MSFT", "Microsoft", "ABCIPX", 250_000, "EU"), rec("IBM", "IBM", "IBM", "ACIPX", 250_000, "EU"),
             rec("XYZ", "XYZ", "Xyz Corp", "CX", 25_000, "EU"), rec("1AAQ02", "AAPL", "flex", "ABCIPX", 0, "EF")]
    listed = tmp_path / "listed.txt"
    listed.write_text("\n".join(lines) + "\n")
    res = synthesize(_tiny(tmp_path / "out", universe=listed, num_lines=2, seconds=1.0, rate=0.05))
    m = res.manifest
    assert m.universe.source == "file:listed.txt" and m.universe.underlyings == 4
    assert set(m.roots) == {"AAQ", "APV", "MSQ", "IBM", "XYZ"}
    seen = set()
    for ln in m.lines:
        recs = _records(res.directory / ln.files["a"][0])
        seen |= {bytes(r).rstrip(b" \0").decode() for r in recs["root"][recs["category"] == ord("k")]}
    assert seen <= set(m.roots) and {"AAQ", "MSQ"} <= seen
