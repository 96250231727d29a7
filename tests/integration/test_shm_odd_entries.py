"""A FIFO or a symbolic link named omdp-* in /dev/shm (nothing omdp makes) is skipped and
reported by ``shm list``, ``shm clean``, ``run`` and the replay's sweep, never opened - a
FIFO would block the opener for ever - and never removed; the C mapping refuses it."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from omdp.metrics.stats_segment import StatsReader, StatsSegmentError
from omdp.transport.shm_names import new_run_id
from omdp.transport.api import TransportError
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaSender
from ops.replay.shm_segments import Segment, ShmError, ctl_name, reap_stale_segments

CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]
TOPOLOGY = Path(__file__).resolve().parents[2] / "ops" / "topologies" / "seq_split_vega.toml"
HANG_GUARD_S = 60  # a scan that opened the FIFO would never return


@pytest.fixture
def odd_entries() -> Iterator[list[Path]]:
    run = new_run_id()
    fifos = [Path("/dev/shm", n) for n in (f"omdp-{run}-stats", f"omdp-replay-{run}-ctl", f"omdp-{run}-c0")]
    link = Path("/dev/shm", f"omdp-{run}-c1")
    for f in fifos:
        os.mkfifo(f, 0o600)
    link.symlink_to("/etc/hostname")
    yield [*fifos, link]
    for p in (*fifos, link):
        p.unlink(missing_ok=True)


def omdp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=HANG_GUARD_S)


def test_shm_list_and_clean_skip_and_report_them(odd_entries: list[Path]) -> None:
    listed = omdp("shm", "list")
    assert listed.returncode == 0, listed.stderr
    for p in odd_entries:
        (row,) = [ln for ln in listed.stdout.splitlines() if ln.startswith(p.name)]
        assert "not-a-segment" in row
        assert ("a symbolic link" if p.is_symlink() else "a FIFO") in row
    cleaned = omdp("shm", "clean")
    assert cleaned.returncode == 0, cleaned.stderr
    assert all(p.is_symlink() or p.exists() for p in odd_entries)


@pytest.mark.full  # a run
def test_a_run_skips_and_reports_them(odd_entries: list[Path], tmp_path: Path) -> None:
    r = omdp("run", str(TOPOLOGY), "--data", str(tmp_path), "--set", "operators.src.params.count=2000")
    assert r.returncode == 0, r.stderr
    for p in odd_entries:
        assert f"skipped {p}: " in r.stderr
    assert all(p.is_symlink() or p.exists() for p in odd_entries)


def test_the_replay_sweep_and_the_mappings_refuse_them(odd_entries: list[Path]) -> None:
    fifo_stats, fifo_ctl, fifo_ring, link = odd_entries
    assert f"/{fifo_ctl.name}" not in reap_stale_segments()
    assert fifo_ctl.exists()
    run = fifo_stats.name[len("omdp-"):-len("-stats")]
    with pytest.raises(StatsSegmentError, match="invalid argument"):
        StatsReader(run)
    with pytest.raises(ShmError, match="Invalid argument"):
        Segment.open(ctl_name(run))
    with pytest.raises(TransportError):
        VegaSender.attach(ChannelSpec(queue_size=4, max_message=64), fifo_ring.name, connect_timeout=1.0)
