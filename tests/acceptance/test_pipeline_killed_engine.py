"""A decision engine process killed in the middle of a run: the run is reported failed,
naming the partition, and stops cleanly - no partition, no replay sender and no shared
memory segment is left; the survivors write what they collected (signals.parquet,
ingest.parquet) and the report says missed is unknown, not 0."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipeline_support import CAPTURE_DATE, alive, descendants, leftovers

from ops.topologies import topology_path

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]


def test_a_killed_engine_fails_the_run_cleanly(data_dir: Path) -> None:
    proc = subprocess.Popen([*CLI, "run", str(topology_path("opra_split_vega")), "--data", str(data_dir),
                             "--capture-date", CAPTURE_DATE, "--rate", "1x", "--seconds", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        run_dir = None
        while time.monotonic() < deadline and run_dir is None:
            found = list(data_dir.glob("runs/*/*/processes.json"))
            run_dir = found[0].parent if found else None
            time.sleep(0.1)
        assert run_dir is not None, "the run never started"
        procs = json.loads((run_dir / "processes.json").read_text())
        while time.monotonic() < deadline and not (run_dir / "replay-fs0").exists() and not \
                descendants(procs["replay"]["pid"]):
            time.sleep(0.1)
        time.sleep(1.0)  # the replay is sending
        everyone = [p["pid"] for p in procs.values()]
        everyone += [d for p in everyone for d in descendants(p)]
        os.kill(procs["engines"]["pid"], signal.SIGKILL)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, (out, err)
    assert "partition engines died: killed by SIGKILL" in err
    assert (run_dir / "signals.parquet").is_file() and (run_dir / "ingest.parquet").is_file()
    assert "missed unknown (partition engines died without its figures" in out, out
    assert "processed 0 (unknown: partition engines died)" in out and " 0 missed" not in out, out
    assert not [p for p in everyone if alive(p)]
    assert not leftovers(run_dir.name)
