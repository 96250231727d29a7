"""``omdp run`` carries vega-tcp edges in the C partition loop: a chain over vega-tcp with a
fan-in, every record accounted for, the link's peer state ending the loop cleanly, and a
partition killed mid-run failing the run without leaving anything behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.full  # whole `omdp run` runs

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
TOPOLOGY = """
name = "vega-tcp-chain"

[channel]
transport = "vega-tcp"
queue_size = 16
max_message = 2048
mutex = false
wait = "spin-yield"

[operators.a]
kind = "seq_source"
params = { count = COUNT_A, batch = 16, record_size = 96, rate = 200000.0 }

[operators.b]
kind = "py_seq_source"
params = { count = 2000, batch = 8, source_base = 50, rate = 40000.0 }

[operators.r]
kind = "relay"

[operators.sink]
kind = "seq_sink"

[partitions.src]
operators = ["a"]

[partitions.src2]
operators = ["b"]

[partitions.mid]
operators = ["r"]

[partitions.snk]
operators = ["sink"]

[[edges]]
from = "a.out"
to = "r.in"

[[edges]]
from = "b.out"
to = "r.in"

[[edges]]
from = "r.out"
to = "sink.in"
"""


def write(tmp_path: Path, count_a: int) -> Path:
    path = tmp_path / "chain.toml"
    path.write_text(TOPOLOGY.replace("COUNT_A", str(count_a)))
    return path


def test_vega_tcp_edges_carry_every_record(tmp_path: Path) -> None:
    r = subprocess.run([*CLI, "run", str(write(tmp_path, 30000)), "--data", str(tmp_path), "--json", "-"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["status"] == "ended"
    ops = {k: v for p in result["partitions"].values() for k, v in p["report"]["operators"].items()}
    sink = ops["sink"]
    assert sink["records"] == 32000 and sink["sources"] == 2
    assert sink["gaps"] == sink["out_of_order"] == sink["bad_check"] == sink["bad_record"] == 0
    assert result["clocks"]["hosts"]["local"]["method"] == "reference"


def test_a_killed_upstream_fails_the_run_and_leaves_nothing(tmp_path: Path) -> None:
    proc = subprocess.Popen([*CLI, "run", str(write(tmp_path, 0)), "--data", str(tmp_path), "--json", "-"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    run_dir = None
    while time.monotonic() < deadline:
        logs = list(tmp_path.glob("runs/*/*/logs/mid.log"))
        if logs and " running" in logs[0].read_text():
            run_dir = logs[0].parents[1]
            break
        time.sleep(0.05)
    assert run_dir is not None, "the run did not start"
    pid = json.loads((run_dir / "processes.json").read_text())["mid"]["pid"]
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "partition mid died: killed by SIGKILL" in err
    for p in json.loads((run_dir / "processes.json").read_text()).values():
        with pytest.raises(ProcessLookupError):
            os.kill(p["pid"], 0)
