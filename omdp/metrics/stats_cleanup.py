"""Finding and removing stats segments that their run left behind.

An owner unlinks its segment when it closes; a run killed with SIGKILL cannot. A segment
is stale when its owner's process is gone (or a zombie), when its owner marked it closed,
or when it never became valid (creation interrupted) and is older than a grace period.
``omdp shm clean`` uses ``clean_stats_segments`` beside the transports' own clean-up; all
omdp shared memory shares the ``omdp-<run>-`` prefix and stats segments end in ``-stats``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from omdp.metrics.stats_segment import StatsReader, StatsSegmentError, stats_segment_name
from omdp.native import lib
from omdp.transport.shm_names import not_a_segment

SHM_DIR = Path("/dev/shm")
PREFIX = "omdp-"
SUFFIX = "-stats"
INVALID_GRACE_S = 10.0
"""A segment without a valid header is left alone this long: it may be being created."""


@dataclass(frozen=True)
class StatsSegmentStatus:
    """One stats segment found in shared memory and whether its run is still alive."""

    run_id: str
    name: str
    pid: int | None       # owner's process id; None when the header is not readable
    stale: bool
    reason: str           # why it is (not) stale


def pid_alive(pid: int) -> bool:
    """True when process pid exists and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    # Field 3, after the parenthesised command name, is the state; Z = zombie, X = dead.
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _status(name: str) -> StatsSegmentStatus:
    run_id = name[len(PREFIX) : -len(SUFFIX)]
    try:
        reader = StatsReader(run_id)
    except (StatsSegmentError, ValueError) as e:
        try:
            age = time.time() - (SHM_DIR / name).stat().st_mtime
        except FileNotFoundError:
            return StatsSegmentStatus(run_id, name, None, False, "already removed")
        stale = age > INVALID_GRACE_S
        return StatsSegmentStatus(run_id, name, None, stale, f"unreadable ({e}), {age:.0f} s old")
    with reader:
        info = reader.info()
    if info["closed_ns"]:
        return StatsSegmentStatus(run_id, name, info["pid"], True, "closed by its owner")
    if not pid_alive(info["pid"]):
        return StatsSegmentStatus(run_id, name, info["pid"], True, f"owner pid {info['pid']} is gone")
    return StatsSegmentStatus(run_id, name, info["pid"], False, f"owner pid {info['pid']} is alive")


def list_stats_segments(shm_dir: Path = SHM_DIR) -> list[StatsSegmentStatus]:
    """Every ``omdp-*-stats`` segment in shared memory, with its staleness."""
    if not shm_dir.is_dir():
        return []
    names = sorted(p.name for p in shm_dir.iterdir() if p.name.startswith(PREFIX) and p.name.endswith(SUFFIX)
                   and not not_a_segment(p))
    return [_status(n) for n in names if len(n) > len(PREFIX) + len(SUFFIX)]


def remove_stats_segment(run_id: str) -> bool:
    """Unlink run_id's segment whatever its state; False when there was none."""
    stats_segment_name(run_id)  # validates the run id
    rc = lib.omdp_stats_unlink(run_id.encode())
    if rc == lib.OMDP_STATS_ENOENT:
        return False
    if rc != 0:
        raise StatsSegmentError(run_id, "unlink", rc)
    return True


def clean_stats_segments(force: bool = False, run: str | None = None) -> list[StatsSegmentStatus]:
    """Remove stale stats segments (every one with ``force``; only run ``run``'s when given);
    returns those removed."""
    removed = []
    for st in list_stats_segments():
        if run is not None and st.run_id != run:
            continue
        if (st.stale or force) and remove_stats_segment(st.run_id):
            removed.append(st)
    return removed
