"""``omdp bench synth`` runs end to end on a tiny capture and writes its JSON."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ops.cli.main import cli

pytestmark = pytest.mark.full  # synth three times over


def test_bench_synth_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "synth.json"
    res = CliRunner().invoke(cli, ["bench", "synth", "--seconds", "0.3", "--rate", "0.1x", "--num-lines", "2",
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["benchmark"] == "synth" and doc["messages"] > 0 and doc["msgs_per_s_cpu"] > 0
    assert {"market", "records", "encode", "pcap"} <= set(doc["stages"])
    assert "messages/s CPU" in res.output
