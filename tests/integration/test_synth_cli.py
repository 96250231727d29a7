"""The commands: ``omdp synth``, ``omdp capture stats`` (table and JSON) and ``omdp demo``."""
from __future__ import annotations

import pytest
import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from ops.cli.main import cli
from ops.synth.manifest import load_manifest


@pytest.mark.full
def test_synth_then_stats(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["synth", "--data", str(tmp_path), "--seconds", "0.5", "--rate", "0.1x", "--seed", "2",
                                   "--num-lines", "3", "--quiet", "--anomaly-rate", "crossed=20"])
    assert res.exit_code == 0, res.output
    assert "3 lines" in res.output and "messages/packet" in res.output
    capture = tmp_path / "captures" / "2008-02-04"
    m = load_manifest(capture)
    assert m.rate.multiplier == 0.1 and len(m.lines) == 3
    out = tmp_path / "stats.json"
    res = CliRunner().invoke(cli, ["capture", "stats", str(capture), "--json", str(out)])
    assert res.exit_code == 0, res.output
    st = json.loads(out.read_text())
    assert st["total"]["packets"] == m.rate.packets and st["total"]["messages"] == m.rate.messages
    assert set(st["lines"]) == {"1", "2", "3"} and "categories:" in res.output
    as_csv = CliRunner().invoke(cli, ["capture", "stats", str(capture), "--output", "csv"])
    rows = list(csv.DictReader(io.StringIO(as_csv.output)))
    assert [r["line"] for r in rows] == ["1", "2", "3", "total"] and int(rows[-1]["packets"]) == m.rate.packets
    as_json = CliRunner().invoke(cli, ["capture", "stats", str(capture), "-o", "json"])
    assert json.loads(as_json.output) == st


def test_bad_options_are_reported(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["synth", "--data", str(tmp_path), "--rate", "fast"])
    assert res.exit_code != 0 and "rate" in res.output
    res = CliRunner().invoke(cli, ["synth", "--data", str(tmp_path), "--anomaly-rate", "weird=1"])
    assert res.exit_code != 0 and "KIND=N" in res.output
    res = CliRunner().invoke(cli, ["capture", "stats", str(tmp_path)])
    assert res.exit_code != 0 and "no line" in res.output
