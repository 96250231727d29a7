"""Replay shared memory: 0600 segments, and reaping only those whose creator is dead."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from omdp.clock import now_ns
from ops.replay.ctl_segment import CtlSegment
from ops.replay.shm_segments import ctl_name, reap_stale_segments


def test_reap_takes_only_segments_of_dead_creators() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = CtlSegment.create(ctl_name(f"dead{now_ns()}"), n_senders=1, log_capacity=1024, creator_pid=dead.pid)
    live = CtlSegment.create(ctl_name(f"live{now_ns()}"), n_senders=1, log_capacity=1024, creator_pid=os.getpid())
    try:
        assert Path("/dev/shm" + live.name).stat().st_mode & 0o777 == 0o600
        stale_was_there = Path("/dev/shm" + stale.name).exists()
        reaped = reap_stale_segments()
        assert live.name not in reaped and Path("/dev/shm" + live.name).exists()
        assert not Path("/dev/shm" + stale.name).exists()
        assert stale.name in reaped or not stale_was_there
    finally:
        stale.close()
        live.close()
        live.unlink()
