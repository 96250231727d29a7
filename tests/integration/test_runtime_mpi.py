"""``omdp run`` of a topology with ``transport = "mpi"``: the partitions are the ranks of one
``mpiexec`` job. It runs to the end with every record accounted, stops on Ctrl-C with the
queues drained, fails naming the partition when a rank is killed (its peer's channel
reports the dead peer), and leaves no process, FIFO or MPI file behind. Skipped, with the
reason, where MPI is not installed (docs/mpi.md)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from omdp.transport.mpi_job import mpi_job_unavailable
from omdp.transport.shm_names import SHM_DIR

pytestmark = [pytest.mark.skipif(mpi_job_unavailable() is not None, reason=str(mpi_job_unavailable())),
              pytest.mark.full]  # each a whole `omdp run` as an MPI job

TOPOLOGY = Path(__file__).resolve().parents[2] / "ops" / "topologies" / "seq_split_mpi.toml"
CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
HANG_GUARD_S = 120


def omdp_run(data: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "run", str(TOPOLOGY), "--data", str(data), "--json", "-", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def running(data: Path, proc: subprocess.Popen) -> Path:
    """The run's directory once both partitions log that their loops run."""
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        for pj in data.glob("runs/*/*/processes.json"):
            logs = [pj.parent / "logs" / f"{n}.log" for n in ("up", "down")]
            if all(p.exists() and " running" in p.read_text() for p in logs):
                return pj.parent
        time.sleep(0.05)
    raise AssertionError("partitions did not start running")


def records(result: dict) -> dict[str, int]:
    ops = {}
    for p in result["partitions"].values():
        ops.update((p["report"] or {}).get("operators", {}))
    return {k: ops[k]["records"] for k in ("src", "relay", "sink")}


def assert_nothing_left(run_dir: Path) -> None:
    for name, p in json.loads((run_dir / "processes.json").read_text()).items():
        stat = Path(f"/proc/{p['pid']}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in "ZX", \
            f"{name} (pid {p['pid']}) is still there: {stat.read_text()}"
    assert not (run_dir / "control").exists()
    made = json.loads((run_dir / "mpi_files.json").read_text())  # what the job's ranks mapped
    assert made and all(f.startswith(str(SHM_DIR)) for f in made)
    assert [f for f in made if Path(f).exists()] == []


def test_mpi_run_ends_with_every_record_accounted(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, "--set", "operators.src.params.count=200000")
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "ended"
    assert records(result) == {"src": 200000, "relay": 200000, "sink": 200000}
    sink = result["partitions"]["down"]["report"]["operators"]["sink"]
    assert sink["expected"] == 200000 and sink["gaps"] == 0
    up, down = (result["partitions"][n]["report"]["channels"]["up->down"] for n in ("up", "down"))
    assert up["frames"] == down["frames"] and up["ended"] == down["ended"] == 1
    run_dir = Path(result["partitions"]["down"]["log"]).parents[1]
    assert json.loads((run_dir / "processes.json").read_text())["down"]["rank"] == 1
    assert_nothing_left(run_dir)


def test_mpi_run_stops_on_ctrl_c_with_the_queue_drained(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, "--set", "operators.src.params.count=0")
    run_dir = running(tmp_path, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["status"] == "stopped"
    got = records(result)
    assert got["src"] > 0 and got["src"] == got["relay"] == got["sink"]
    assert_nothing_left(run_dir)


def test_mpi_run_with_a_killed_rank_fails_naming_it(tmp_path: Path) -> None:
    proc = omdp_run(tmp_path, "--set", "operators.src.params.count=0")
    run_dir = running(tmp_path, proc)
    pids = json.loads((run_dir / "processes.json").read_text())
    os.kill(pids["down"]["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 1
    assert "partition down died: killed by SIGKILL" in err
    result = json.loads(out)
    assert result["status"] == "failed"
    up_log = (run_dir / "logs" / "up.log").read_text()
    assert "MPI_ERR_PROC_FAILED" in up_log or result["partitions"]["up"]["state"] == "failed" \
        or result["partitions"]["up"]["exit"] is not None
    assert_nothing_left(run_dir)
