"""Faults an operator meets with ``omdp run``: a reused run id (refused, the finished run
kept), a run refused before it starts (no run directory left), rings bigger than the free
shared memory (refused at start with the figures, not a SIGBUS later), and a full disk (one
line naming the file, no traceback, no temporary or empty file left)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cpu_fit_support import on_cpus_here
from full_disk_support import full_disk, leftovers, small_disk  # noqa: F401  (fixtures)

TOPOLOGIES = Path(__file__).resolve().parents[2] / "ops" / "topologies"
CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
SMALL = ("--set", "operators.src.params.count=2000")


def omdp(*args: str) -> subprocess.CompletedProcess:
    """``omdp run TOPOLOGY ...`` on the CPUs this test may use, unless the test sets them."""
    if args[0] == "run" and not any(".cpus=" in a for a in args):
        args = (*args, *on_cpus_here(Path(args[1])))
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.full  # two runs
def test_a_reused_run_id_is_refused_and_the_finished_run_kept(tmp_path: Path) -> None:
    first = omdp("run", str(TOPOLOGIES / "seq_fused.toml"), "--data", str(tmp_path), "--run-id", "r1", *SMALL)
    assert first.returncode == 0, first.stderr
    (run,) = tmp_path.glob("runs/*/r1")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert "run.json" in before

    again = omdp("run", str(TOPOLOGIES / "seq_split_vega.toml"), "--data", str(tmp_path), "--run-id", "r1", *SMALL)
    assert again.returncode == 2
    assert "--run-id: r1: already used by the run in" in again.stderr and "Traceback" not in again.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_rings_bigger_than_free_shared_memory_are_refused_at_start(tmp_path: Path) -> None:
    # 2^20 slots of 64 MiB: 64 TiB of ring, more than any /dev/shm has free
    r = omdp("run", str(TOPOLOGIES / "seq_split_vega.toml"), "--data", str(tmp_path), *SMALL,
             "--set", "channel.queue_size=1048576", "--set", "channel.max_message=67108864")
    assert r.returncode == 2, r.stderr
    assert "/dev/shm: the run needs" in r.stderr and "vega-shm rings" in r.stderr and "free" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*"))


def test_a_run_refused_by_the_machine_check_leaves_no_run_directory(tmp_path: Path) -> None:
    r = omdp("run", str(TOPOLOGIES / "seq_fused.toml"), "--data", str(tmp_path), *SMALL,
             "--set", "partitions.app.cpus=[4095]")
    assert r.returncode == 2 and "partitions.app.cpus" in r.stderr, r.stderr
    assert not any((tmp_path / "runs").rglob("*")) if (tmp_path / "runs").exists() else True


def test_a_full_disk_fails_the_run_with_one_line_and_leaves_nothing_half_written(full_disk: Path) -> None:  # noqa: F811
    data = full_disk / "data"
    r = omdp("run", str(TOPOLOGIES / "seq_fused.toml"), "--data", str(data), "--run-id", "full1", *SMALL)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert "No space left on device" in r.stderr and "cannot write" in r.stderr
    assert leftovers(full_disk) == []
    assert not list(data.glob("runs/*/full1"))  # nothing of it was written: no directory either
