"""``omdp capture stats`` on an OBI v6 capture: the format told from the packets' bytes,
every block's messages counted (a bad-checksum block counted malformed), the B copy read
when asked for, and a one-line error for a copy the capture lacks."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from pipeline_support import make_obi_capture

from feedhandlers.captures import read_capture
from ops.capture.stats import capture_stats
from ops.cli.main import cli
from ops.synth.manifest import load_manifest
from ops.synth.today.generator import FAULTS_FILE

pytestmark = pytest.mark.full


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_obi_capture(tmp_path_factory.mktemp("obistats"), seconds=0.3, lines=4)


@pytest.mark.parametrize("copy", ["a", "b"])
def test_counts_match_the_blocks(capture: Path, copy: str) -> None:
    faults = pd.read_parquet(capture / FAULTS_FILE)
    bad = faults[(faults.kind == "checksum") & (faults["copy"] == copy)]
    st = capture_stats(capture, copy)
    assert sorted(st.lines) == [ln.line for ln in load_manifest(capture).lines]
    packets = messages = 0
    for ln in st.lines:
        cap = read_capture(capture / f"line{ln:02d}{'-b' if copy == 'b' else ''}.pcap")
        packets += len(cap)
        messages += sum(p[10] for p in cap.payloads())       # each block's msg_count
    assert st.total.packets == packets
    assert st.total.bad_packets == len(bad)
    assert st.total.messages == messages - int(bad.msg_count.sum())
    assert sum(st.total.categories.values()) == st.total.messages
    assert st.total.categories["k"] > 0.9 * st.total.messages
    assert st.total.categories["H"] == len(st.lines)            # each line's Start of Day
    assert np.isclose(st.total.messages_per_packet["mean"], st.total.messages / st.total.packets, rtol=1e-3)


def test_a_missing_copy_is_one_line(capture: Path, tmp_path: Path) -> None:
    only_a = tmp_path / "only-a"
    only_a.mkdir()
    for f in capture.iterdir():
        if not f.name.endswith("-b.pcap"):
            (only_a / f.name).symlink_to(f)
    manifest = json.loads((capture / "manifest.json").read_text())
    for ln in manifest["lines"]:
        del ln["files"]["b"]
    (only_a / "manifest.json").unlink()
    (only_a / "manifest.json").write_text(json.dumps(manifest))
    res = CliRunner().invoke(cli, ["capture", "stats", str(only_a), "--copies", "B"])
    assert res.exit_code != 0
    assert "lists no B copy of any line" in res.output and "Traceback" not in res.output
