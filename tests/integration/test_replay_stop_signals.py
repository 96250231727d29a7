"""``omdp replay`` started the way scripts and service managers start it (SIGINT ignored at
start) stops on SIGTERM or Ctrl-C like on Ctrl-C at a terminal: it prints its summary, writes
intended.parquet and removes its shared memory."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from cli_child_support import start_background_job, stop_job
from replay_support import make_line, write_capture

pytestmark = pytest.mark.slow  # two replays of a few seconds


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_replay_stops_cleanly_on_a_stop_signal(tmp_path: Path, stop: int) -> None:
    write_capture(tmp_path / "cap", [make_line(3, 400, seed=2)])
    proc = start_background_job(["replay", str(tmp_path / "cap"), "--rate", "0.05x", "--loop", "--no-http",
                                 "--copies", "A", "--run-dir", str(tmp_path / "run")], cwd=tmp_path)
    try:
        first = proc.stderr.readline()
        assert first.startswith("replay "), first + proc.stderr.read()
        run_id = first.split()[1].rstrip(":")
        deadline = time.monotonic() + 30
        while not [n for n in os.listdir("/dev/shm") if run_id in n]:
            assert time.monotonic() < deadline, "the replay made no shared memory"
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        out, err = stop_job(proc, stop, "omdp replay")
    assert proc.returncode == 0, err[-3000:]
    assert "stopped:" in out and (tmp_path / "run" / "intended.parquet").is_file()
    assert [n for n in os.listdir("/dev/shm") if run_id in n] == []
