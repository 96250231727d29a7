"""Helpers of the pipeline tests: small synthetic captures, and what a capture holds per line
(packet headers read with numpy, no decoding), to account for every message exactly."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from feedhandlers.captures import read_capture

CAPTURE_DATE = "2008-02-04"


def make_capture(data_dir: Path, seconds: float = 0.5, lines: int = 4, seed: int = 3) -> Path:
    """A synthetic capture under data_dir/captures/<date>/ (one per data_dir)."""
    from ops.synth.generator import SynthConfig, synthesize

    res = synthesize(SynthConfig(data=data_dir, seconds=seconds, num_lines=lines, seed=seed, progress=False))
    return res.directory


def make_obi_capture(data_dir: Path, seconds: float = 0.5, lines: int = 8, faults_per_second: float = 8.0) -> Path:
    """A small capture of today's market (OBI v6, A and B copies, injected gaps and bad
    checksums at ``faults_per_second`` per line each) under data_dir/captures/<date>/."""
    from ops.synth.today.generator import TodayConfig, synthesize_today

    cfg = TodayConfig(data=data_dir, seconds=seconds, rate=0.005, underlyings=120, series=8_000, b_copy=True,
                      gaps_per_second=faults_per_second, checksums_per_second=faults_per_second, num_lines=lines,
                      progress=False)
    return synthesize_today(cfg).directory


@dataclass
class LinePackets:
    """One line's packets in capture order: payloads, message counts, first sequences."""

    line: int
    payloads: list[bytes]
    counts: np.ndarray
    first_seq: np.ndarray


def line_packets(capture_dir: Path) -> dict[int, LinePackets]:
    """Every line's packets (the A copy files) with their header counts."""
    manifest = json.loads((capture_dir / "manifest.json").read_text())
    out = {}
    for entry in manifest["lines"]:
        line = entry["line"]
        cap = read_capture(capture_dir / entry["files"]["a"][0])
        payloads = cap.payloads()
        counts = np.array([int(p[12:15]) for p in payloads], dtype=np.int64)
        first = np.array([int(p[2:12]) for p in payloads], dtype=np.int64)
        out[line] = LinePackets(line, payloads, counts, first)
    return out


def leftovers(run_id: str) -> list[str]:
    """Shared memory segments whose name holds the run id (rings, stats, the replay's)."""
    return [f for f in os.listdir("/dev/shm") if run_id in f]


def alive(pid: int) -> bool:
    """True when pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Every process below pid (children, grandchildren, ...)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = []
            for task in Path(f"/proc/{p}/task").iterdir():
                kids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out
