"""``omdp bench market-state --pipeline`` (docs/market_stats.md "What it costs"): the shipped
pipelines with the statistics off, shared and routed, one lap of a capture each; every
market run's windows complete; the off run has no leader; routing every update costs the
leaders more CPU per message than merging the partitions' deltas once a window."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline_support import CAPTURE_DATE, make_capture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_the_pipeline_comparison_runs_off_shared_and_route(tmp_path: Path) -> None:
    make_capture(tmp_path, seconds=1.0, lines=4)
    out = tmp_path / "pipe.json"
    r = subprocess.run([sys.executable, "-P", "-m", "ops.cli.main", "bench", "market-state", "--pipeline",
                        "--data", str(tmp_path), "--capture-date", CAPTURE_DATE, "--partitions", "1",
                        "--rounds", "1", "--rate", "2x", "--json", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(out.read_text())
    rows = {row["mode"]: row for row in doc["rows"]}
    assert set(rows) == {"off", "shared", "route"} and all(row["partitions"] == 1 for row in rows.values())
    assert rows["off"]["leader_ns_per_msg"] == 0 and rows["off"]["complete"] is None
    assert rows["shared"]["complete"] and rows["route"]["complete"]
    assert all(len(row["runs"]) == 1 and row["runs"][0]["messages"] > 0 for row in rows.values())
    assert rows["route"]["leader_ns_per_msg"] > rows["shared"]["leader_ns_per_msg"] > 0
    assert "handlers+leaders" in r.stdout and "complete" in r.stdout
