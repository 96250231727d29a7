"""``omdp demo`` from scratch: it synthesizes its capture, runs the fused pipeline on this
machine, prints the breakdown and exits 0; a second demo reuses the capture."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ops.cli.main import cli


@pytest.mark.slow
def test_demo_runs_the_pipeline(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["demo", "--data", str(tmp_path), "--seconds", "3", "--capture-seconds", "0.5"])
    assert res.exit_code == 0, res.output
    assert "synthesizing" in res.output and "Latency breakdown" in res.output
    assert "accounting: decoded" in res.output and "(ok)" in res.output
    assert (tmp_path / "captures" / "2008-02-04" / "manifest.json").is_file()
    assert list(tmp_path.glob("runs/*/*/samples.parquet"))
    res = CliRunner().invoke(cli, ["demo", "--data", str(tmp_path), "--seconds", "2"])
    assert res.exit_code == 0, res.output
    assert "reusing" in res.output
