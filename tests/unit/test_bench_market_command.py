"""``omdp bench market-state``: one row per skew, partition count and mode, the baseline
routes three updates per message, and a bad partition list is one line naming the option."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ops.cli.main import cli


def test_the_bench_prints_and_writes_every_point(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    r = CliRunner().invoke(cli, ["bench", "market-state", "--messages", "20000", "--partitions", "1,2",
                                 "--skew", "1.0", "--runs", "1", "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    rows = doc["rows"]
    assert [(x["partitions"], x["mode"]) for x in rows] == [(1, "shared"), (1, "route"), (2, "shared"), (2, "route")]
    assert all(x["messages"] == 20000 for x in rows)
    assert all(x["deltas_per_msg"] == 3.0 for x in rows if x["mode"] == "route")
    assert all(0 < x["deltas_per_msg"] < 3.0 for x in rows if x["mode"] == "shared")


def test_a_bad_partition_list_is_refused_with_the_option() -> None:
    r = CliRunner().invoke(cli, ["bench", "market-state", "--partitions", "0,2"])
    assert r.exit_code == 2 and "--partitions" in r.output and "1 .. 64" in r.output
    assert "Traceback" not in r.output


def test_the_pipeline_comparison_refuses_partition_counts_it_has_no_topology_for(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["bench", "market-state", "--pipeline", "--partitions", "1,4", "--data", str(tmp_path)])
    assert r.exit_code == 2 and "--partitions" in r.output and "topologies for 1 and 2 handler partitions" in r.output
    assert "Traceback" not in r.output


def test_the_pipeline_comparison_names_a_missing_capture(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["bench", "market-state", "--pipeline", "--data", str(tmp_path),
                                 "--capture-date", "2008-02-05"])
    assert r.exit_code == 2 and "--capture-date" in r.output and "2008-02-05: no such capture" in r.output
    assert "Traceback" not in r.output
