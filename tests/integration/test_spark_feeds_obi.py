"""The feeds job's tick decode on OBI v6 files of today's market (A and B copies, with the
synth's injected gaps and bad checksums): each file's tick file holds exactly the messages
``omdp decode`` prints for it, field by field, less those of the blocks it reports with a
bad checksum (the live path drops them; the viewer shows them); the file's row in
``feeds_files`` counts the packets, messages and malformed packets ``omdp capture stats``
counts, the bad checksums the synth injected into that copy, and the gaps its lost blocks
leave in the message sequence numbers."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from pipeline_support import make_obi_capture

from feedhandlers.captures import read_capture
from ops.capture.stats import capture_stats
from ops.spark.common.data_layout import CaptureFile
from ops.spark.feeds.capture_decode import write_capture_ticks
from ops.spark.feeds.manifest_roots import load_root_map
from ops.synth.manifest import load_manifest
from ops.synth.today.generator import FAULTS_FILE

pytestmark = pytest.mark.full

_BAD_BLOCK = re.compile(r"block (\d+): CHECKSUM")


def _decoded(path: Path) -> tuple[list[tuple], set[int]]:
    """``omdp decode``'s rows of a file - (category, seq) and for a quote root, strike, bid,
    bid size, offer, offer size - and the blocks it reports with a bad checksum."""
    done = subprocess.run([sys.executable, "-P", "-m", "ops.cli.main", "decode", str(path)], capture_output=True,
                          text=True, timeout=120)
    rows = []
    for line in done.stdout.splitlines()[1:]:
        t = line.split()
        if t[0] == "c":
            continue
        row = (t[0], int(t[1]))
        if t[0] == "k":
            row += (t[4], round(float(t[6]) * 1e9), round(float(t[8]) * 1e9), int(t[10]), round(float(t[12]) * 1e9),
                    int(t[14]))
        rows.append(row)
    return rows, {int(m.group(1)) for m in _BAD_BLOCK.finditer(done.stderr)}


def _ticks(path: str) -> list[tuple]:
    rows = []
    for r in pq.read_table(path).sort_by([("ts_ns", "ascending"), ("msg_index", "ascending")]).to_pylist():
        row = (r["category"], r["msg_seq"])
        if r["category"] == "k":
            row += (r["root"], r["strike_px"], r["bid_px"], r["bid_size"], r["offer_px"], r["offer_size"])
        rows.append(row)
    return rows


def test_obi_files_decode_into_the_tick_table_and_are_accounted(tmp_path: Path) -> None:
    capture = make_obi_capture(tmp_path, seconds=0.4, lines=2, faults_per_second=12.0)
    date = str(load_manifest(capture).date)
    roots = load_root_map(capture / "manifest.json")
    faults = pd.read_parquet(capture / FAULTS_FILE)
    checked_faults = 0
    for name in ("line01.pcap", "line01-b.pcap", "line02.pcap", "line02-b.pcap"):
        f = capture / name
        copy = "b" if "-b" in name else "a"
        line = int(name[4:6])
        cf = CaptureFile(str(f), line, copy, 0, f.stat().st_size)
        outcome, _ = write_capture_ticks(cf, date, roots, tmp_path / "ticks", tmp_path / "tick_windows")
        assert outcome.status == "ok" and outcome.feed == "obi-v6", name

        decoded, bad_blocks = _decoded(f)
        payloads = read_capture(f).payloads()
        dropped = set()
        for b in bad_blocks:
            first = int.from_bytes(payloads[b][6:10], "big")
            dropped |= set(range(first, first + payloads[b][10]))
        want = [r for r in decoded if r[1] not in dropped]
        assert _ticks(outcome.output) == want, name

        stats = capture_stats(f, copy).total
        assert (outcome.packets, outcome.messages, outcome.bad_packets) == (stats.packets, stats.messages,
                                                                           stats.bad_packets), name
        mine = faults[(faults.line == line) & faults["copy"].str.contains(copy)]
        assert outcome.bad_checksums == len(bad_blocks) == int((mine.kind == "checksum").sum()), name
        # every lost block but one at the file's end leaves a gap of its messages
        end = max(int.from_bytes(p[6:10], "big") + p[10] for p in payloads)
        inside = mine[mine.block_seq + mine.msg_count < end]
        assert outcome.gap_messages == int(inside.msg_count.sum()), name
        assert 0 < outcome.gaps <= len(inside) or outcome.gaps == len(inside) == 0, name
        checked_faults += len(inside)
    assert checked_faults > 0
