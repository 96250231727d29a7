"""A replay service killed outright: its senders follow it, and the next service unlinks the
shared memory it left behind (docs/architecture.md principle 7)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from replay_support import make_line, write_capture

from ops.replay.ctl_segment import CtlSegment
from ops.replay.shm_segments import reap_stale_segments

SCRIPT = """
import sys, time
from ops.replay.config import ReplayConfig
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService
svc = ReplayService(ReplayConfig(capture_dir=sys.argv[1], rate=RateSpec.parse(pps=100), copies="A", run_dir=sys.argv[2]))
st = svc.start()
print(st.run_id, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_killed_service_leaves_nothing_behind(tmp_path: Path) -> None:
    write_capture(tmp_path / "cap", [make_line(1, 2000)])
    proc = subprocess.Popen([sys.executable, "-P", "-c", SCRIPT, str(tmp_path / "cap"), str(tmp_path / "run")],
                            stdout=subprocess.PIPE, text=True)
    try:
        run_id = proc.stdout.readline().strip()
        names = [f"/omdp-replay-{run_id}-ctl", f"/omdp-replay-{run_id}-intended"]
        ctl = CtlSegment.open(names[0])
        sender_pid = int(ctl.senders["pid"][0])
        ctl.close()
        assert _alive(sender_pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _alive(sender_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(sender_pid), "a sender must not outlive its service"
        # Another service starting on this host meanwhile may reap them first; either way
        # they must be gone, and what was still there is ours to reap.
        left = [n for n in names if Path("/dev/shm" + n).exists()]
        reaped = reap_stale_segments()
        assert set(left) <= set(reaped), (left, reaped)
        assert not any(Path("/dev/shm" + n).exists() for n in names)
    finally:
        if proc.poll() is None:
            proc.kill()
