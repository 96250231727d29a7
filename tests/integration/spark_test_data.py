"""Test data for the Spark job tests: OPRA captures with known timing (encoded with the C
encoder, written with the pcap writer) and a manifest mapping roots to underlyings."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from feedhandlers.captures import PcapWriter
from feedhandlers.opra_fast import encode_stream, new_records

T0_NS = 1_202_135_400_000_000_000
"""2008-02-04 14:30:00 UTC: the open of the day the captures pretend to be."""

ROOTS = {"IBM": "IBM", "IBQ": "IBM", "MSQ": "MSFT", "AAQ": "AAPL", "XYZ": "XYZ"}
"""Option roots and their underlyings (several roots may share one underlying)."""


def quote_records(n: int, roots: list[str], first_seq: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` 'k' quotes (with a last sale every 10th message) over ``roots``."""
    r = new_records(n)
    r["category"] = np.where(np.arange(n) % 10 == 9, ord("a"), ord("k"))
    r["msg_type"] = ord(" ")
    r["participant"] = rng.choice([ord(c) for c in "ABCIPX"], n)
    r["retrans"] = ord(" ")
    r["msg_seq"] = first_seq + np.arange(n)
    r["time"] = 93_000_000
    names = rng.choice(roots, n)
    r["root"] = [s.encode() for s in names]
    r["root_len"] = [len(s) for s in names]
    r["month_code"] = rng.choice([ord("C"), ord("O")], n)
    r["expiry_day"] = 22
    r["expiry_year"] = 8
    r["strike_den"] = ord("A")
    r["strike"] = rng.integers(50, 200, n) * 10
    r["strike_code"] = ord("D")
    r["premium_den"] = ord("B")
    r["bid"] = rng.integers(100, 1000, n)
    r["bid_size"] = rng.integers(1, 100, n)
    r["offer"] = r["bid"] + 10
    r["offer_size"] = rng.integers(1, 100, n)
    r["premium"] = r["bid"] + 5
    r["volume"] = rng.integers(1, 50, n)
    r["session"] = ord(" ")
    r["bbo_ind"] = ord(" ")
    return r


def write_capture(
    path: Path,
    ts_ns: np.ndarray,
    counts: np.ndarray,
    *,
    line: int,
    roots: list[str] | None = None,
    seed: int = 0,
    max_bytes: int | None = None,
) -> list[Path]:
    """Write packet k at ``ts_ns[k]`` holding ``counts[k]`` messages; return the files
    (several when ``max_bytes`` rotates them)."""
    rng = np.random.default_rng(seed)
    records = quote_records(int(counts.sum()), roots or list(ROOTS), 1, rng)
    buf, offs, lens, first = encode_stream(records, b"", counts.astype(np.uint32))
    assert len(offs) == len(counts), "every packet must take exactly its count"
    assert np.array_equal(np.diff(first), counts[:-1])
    with PcapWriter(path, dst_ip=f"233.43.202.{line}", dst_port=11000 + line, max_bytes=max_bytes) as w:
        w.write(buf, offs, lens, ts_ns.astype(np.int64))
        return list(w.paths)


def write_manifest(folder: Path, date: str) -> Path:
    """``manifest.json`` with the root -> underlying map."""
    path = folder / "manifest.json"
    path.write_text(json.dumps({"date": date, "roots": ROOTS}, indent=2))
    return path
