"""A partition started as a rank of an MPI job (``omdp.runtime.mpi_supervisor``): its log,
its control FIFOs, its pid and exit-status files, and MPI itself.

``become_rank`` runs first thing in the partition process (before logging and the plan):
stderr to the partition's log, stdin/stdout onto the FIFOs the supervisor made, so the
rest of ``partition_main`` is the same as in a plain run. ``start_mpi`` initialises MPI
(here, in the partition, never in a process that forks afterwards) and records which rank
runs which partition: rank i runs the plan's partition i. ``mpi`` channels are named by
those ranks (``endpoint_of``).
"""
from __future__ import annotations

import os
from pathlib import Path

from omdp.plan import Plan

RANKS: dict[str, int] = {}
"""Partition name -> MPI rank, once ``start_mpi`` ran."""


def _write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def become_rank(control: Path, name: str, log: Path) -> None:
    """Log to ``log``; say our pid; take commands and write events over the FIFOs."""
    os.environ["OMDP_MPI_CONTROL"] = str(control)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    _write(control / f"{name}.pid", str(os.getpid()))
    for path, flags, target in ((control / f"{name}.in", os.O_RDONLY, 0), (control / f"{name}.out", os.O_WRONLY, 1)):
        fd = os.open(path, flags)  # waits for the supervisor's end of the FIFO
        os.dup2(fd, target)
        os.close(fd)


def write_status(control: Path, name: str, code: int) -> None:
    """The exit status, for the supervisor (a rank is not its child)."""
    _write(control / f"{name}.rc", str(code))


def start_mpi(plan: Plan, name: str) -> None:
    """Initialise MPI; check this process is the rank the plan gives partition ``name``."""
    from omdp.transport.mpi import mpi_init

    rank, size = mpi_init()
    control = Path(os.environ.get("OMDP_MPI_CONTROL", ""))
    if control.is_dir():
        _write(control / f"{name}.files", "\n".join(mapped_mpi_files()))
    RANKS.update({p.name: i for i, p in enumerate(plan.partitions)})
    if size != len(plan.partitions) or RANKS[name] != rank:
        raise RuntimeError(f"partition {name} is rank {rank} of {size}; the plan wants rank {RANKS[name]} of "
                           f"{len(plan.partitions)}")


def mapped_mpi_files() -> list[str]:
    """The MPI library's files in /dev/shm that this process maps (its own segment, once MPI
    started), for the supervisor's cleanup."""
    from fnmatch import fnmatch

    from omdp.transport.mpi_shm import PATTERNS

    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(maxsplit=5)
            path = parts[5].strip().removesuffix(" (deleted)") if len(parts) == 6 else ""
            if path.startswith("/dev/shm/") and any(fnmatch(Path(path).name, pat) for pat in PATTERNS):
                found.add(path)
    return sorted(found)


def endpoint_of(partition: str, channel_id: int) -> str:
    """The ``mpi`` endpoint that names ``partition``'s rank and channel ``channel_id``."""
    if partition not in RANKS:
        raise RuntimeError(f"mpi channel {channel_id}: this process is not a rank of the run's MPI job")
    return f"{RANKS[partition]}:{channel_id}"
