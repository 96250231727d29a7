"""What operators expect of runs and topologies: ``omdp runs list`` (id, topology, capture
date, rate, verdict, when; ``--json``), a run given by its id or its directory wherever a
command takes one, and the shipped topologies run and planned by name from any directory
(``omdp run seq_fused``, ``omdp plan --list``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ops.cli.main import cli
from ops.spark.latency.synthetic_runs import SyntheticRun, write_synthetic_run
from ops.topologies import TOPOLOGIES

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]


def invoke(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.output


@pytest.fixture
def pipeline_runs(tmp_path: Path) -> Path:
    """Two pipeline-like runs (records as a pipeline writes them): one sustainable at 2x, one
    not at 9x."""
    data = tmp_path / "data"
    for rid, rate, ok, started in (("p2x", 2.0, True, 1_796_000_100 * 10**9), ("p9x", 9.0, False, 1_796_000_000 * 10**9)):
        d = write_synthetic_run(data / "runs" / "2026-12-01", SyntheticRun(rid, "2026-12-01", rate_x=rate,
                                                                           started_ns=started, topology="opra_fused"))
        (d / "run.json").write_text(json.dumps({"run_id": rid, "status": "ended", "started_at": started / 1e9}))
        (d / "report.json").write_text(json.dumps({"sustainable": ok, "reasons": [] if ok else ["missed 1%"]}))
    return data


def test_runs_list_gives_each_runs_topology_capture_rate_verdict_and_time(pipeline_runs: Path) -> None:
    code, out = invoke("runs", "list", "--data", str(pipeline_runs))
    assert code == 0, out
    head, first, second = out.splitlines()
    assert head.split()[:5] == ["run", "topology", "capture", "rate", "verdict"]
    assert first.split()[:6] == ["p9x", "opra_fused", "2008-02-04", "9x", "not", "sustainable"]  # oldest first
    assert first.endswith("2026-11-30 00:53:20")
    assert second.split()[:5] == ["p2x", "opra_fused", "2008-02-04", "2x", "sustainable"]

    code, out = invoke("runs", "list", "--data", str(pipeline_runs), "--json")
    assert code == 0, out
    rows = json.loads(out)
    assert [(r["run_id"], r["rate_x"], r["verdict"]) for r in rows] == [("p9x", 9.0, "not sustainable"),
                                                                       ("p2x", 2.0, "sustainable")]
    assert rows[1]["run_dir"] == str(pipeline_runs / "runs" / "2026-12-01" / "p2x")

    code, out = invoke("runs", "list", "--data", str(pipeline_runs.parent / "empty"))
    assert code == 0 and out.startswith("no runs under")


def test_a_run_is_taken_by_its_id_or_its_directory(pipeline_runs: Path) -> None:
    run_dir = pipeline_runs / "runs" / "2026-12-01" / "p2x"
    by_id = invoke("runs", "show", "p2x", "--data", str(pipeline_runs))
    by_dir = invoke("runs", "show", str(run_dir))
    assert by_id[0] == 0 and by_id == by_dir and "rate: target 48,000 packets/s" in by_id[1]

    code, out = invoke("runs", "show", "p7x", "--data", str(pipeline_runs))
    assert code == 2 and "no run p7x under" in out and "omdp runs list" in out
    code, out = invoke("dashboard", "--live", str(run_dir))  # a live-run command takes the directory's id
    assert code == 2 and "no live run 'p2x' on this host" in out
    code, out = invoke("shm", "clean", "--run", str(run_dir), "--dry-run")
    assert code == 0, out


def test_plan_list_names_the_shipped_topologies() -> None:
    code, out = invoke("plan", "--list")
    assert code == 0, out
    names = [ln.split()[0] for ln in out.splitlines()]
    assert names == sorted(p.stem for p in TOPOLOGIES.glob("*.toml")) and "opra_fused" in names
    assert any(ln.startswith("seq_fused ") and "one partition" in ln for ln in out.splitlines())
    code, out = invoke("plan", "seq_split_vega")
    assert code == 0 and "plan seq-split-vega" in out
    code, out = invoke("plan", "no_such_topology")
    assert code == 2 and "no shipped topology 'no_such_topology'" in out and "omdp plan --list" in out


@pytest.mark.full  # a run
def test_a_shipped_topology_runs_by_name_from_any_directory(tmp_path: Path) -> None:
    r = subprocess.run([*CLI, "run", "seq_fused", "--data", "d", "--run-id", "byname", "--set",
                        "operators.src.params.count=2000"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    code, out = invoke("runs", "list", "--data", str(tmp_path / "d"))
    (row,) = out.splitlines()[1:]
    assert row.split()[:5] == ["byname", "seq-fused", "-", "-", "ended"]
