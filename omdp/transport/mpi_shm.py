"""The files an MPI library leaves in /dev/shm, as ``omdp shm list`` / ``clean`` see them.

Open MPI's shared-memory transport maps one file per rank, ``sm_segment.<host>.<uid>.<job>.<rank>``
(5.x; ``vader_segment.<host>.<job>.<rank>`` in 4.x). A job that ends, even with a rank
killed, removes them; a job whose launcher itself was killed leaves them. Such a file
holds no owner record, so its owner is whoever maps it: it is removable once no process
on this host maps it (``/proc/*/maps``) and it is older than ``INVALID_GRACE_S`` (a rank
may be about to map a file it has just made).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from omdp.metrics.stats_cleanup import INVALID_GRACE_S
from omdp.transport.owned_segment import OwnedSegment

PATTERNS = ("sm_segment.*", "vader_segment.*")
KIND = "mpi-shm"


def mapping_pids(path: Path) -> list[int]:
    """Pids of the processes that map ``path`` now."""
    needle = str(path)
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            with open(proc / "maps", errors="replace") as f:
                if any(line.rstrip("\n").endswith(needle) for line in f):
                    pids.append(int(proc.name))
        except OSError:
            continue  # gone, or not ours to read
    return pids


def classify(path: Path) -> OwnedSegment:
    """One MPI file: mapped by a live process (left alone) or removable."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return OwnedSegment(path.name, KIND, "", 0, None, "dead", False, "already gone")
    job = path.name.split(".")[-2] if path.name.count(".") >= 2 else ""
    pids = mapping_pids(path)
    age = time.time() - st.st_mtime
    if pids:
        return OwnedSegment(path.name, KIND, job, st.st_size, pids[0], "alive", False,
                            f"Open MPI job {job}: mapped by pid {', '.join(map(str, pids))}")
    removable = age > INVALID_GRACE_S
    return OwnedSegment(path.name, KIND, job, st.st_size, None, "dead", removable,
                        f"Open MPI job {job}: mapped by no process, {age:.0f} s old")


def list_mpi_segments(shm_dir: Path) -> list[OwnedSegment]:
    """Every MPI file in ``shm_dir``, sorted by name."""
    if not shm_dir.is_dir():
        return []
    return [classify(p) for p in sorted({p for pat in PATTERNS for p in shm_dir.glob(pat)})]


def unlink(path: Path) -> bool:
    """Remove one MPI file; False when it was already gone."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
