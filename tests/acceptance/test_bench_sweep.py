"""``omdp bench sweep``: two rates of the fused pipeline, one sweep_id in every run's
meta.parquet, the JSON and the markdown table written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pipeline_support import CAPTURE_DATE

from omdp.metrics.run_files import read_meta
from ops.cli.main import cli
from ops.topologies import topology_path


@pytest.mark.slow
def test_sweep_runs_every_rate_with_one_sweep_id(data_dir: Path, tmp_path: Path) -> None:
    out, md = tmp_path / "sweep.json", tmp_path / "sweep.md"
    res = CliRunner().invoke(cli, ["bench", "sweep", str(topology_path("opra_fused")), "--rates", "1x,0.5x",
                                   "--seconds", "2", "--data", str(data_dir), "--capture-date", CAPTURE_DATE,
                                   "--json", str(out), "--markdown", str(md)])
    assert res.exit_code == 0, res.output
    sweep = json.loads(out.read_text())
    assert [p["rate"] for p in sweep["points"]] == ["0.5x", "1x"]
    run_dirs = [Path(p["run"]["run_dir"]) for p in sweep["points"]]
    assert {read_meta(d)["sweep_id"] for d in run_dirs} == {sweep["sweep_id"]}
    assert all(read_meta(d)["config"] == "opra-fused ring" for d in run_dirs)
    assert "| opra-fused ring | 0.5x |" in md.read_text()
