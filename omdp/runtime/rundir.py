"""Run ids and run directories (docs/architecture.md "Data layout": ``runs/<date>/<run_id>/``).

A run id names the run's directory and its shared memory segments
(``omdp.transport.shm_names.new_run_id``: ``<YYYYMMDD>T<HHMMSS>p<pid><4 hex>``). An id is
used once per data directory: ``claim_run_dir`` refuses an id that already names a run
directory (under any date), so a finished run is never overwritten, and
``discard_unstarted`` removes the directory of a run refused before it wrote anything.
"""
from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path

from omdp.errors import InputError
from omdp.transport.shm_names import new_run_id

__all__ = ["DEFAULT_DATA_DIR", "RunIdError", "check_run_id", "claim_run_dir", "discard_unstarted", "find_run_dir",
           "log_name", "new_run_id"]

DEFAULT_DATA_DIR = Path("omdp-data")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]{0,62}")
"""What both the shared memory names (no dashes) and the stats segment (63 bytes) take."""


class RunIdError(InputError):
    """A run id that cannot be used: malformed, or already the name of a run."""


def check_run_id(run_id: str) -> str:
    """``run_id`` if it can name a run directory and its shared memory; else RunIdError."""
    if not _RUN_ID.fullmatch(run_id):
        raise RunIdError(f"--run-id {run_id!r}: a run id is 1 to 63 characters of A-Z, a-z, 0-9, '_' and '.', "
                         "not starting with '.' (it names the run's shared memory)")
    return run_id


def find_run_dir(data_dir: Path, run_id: str) -> Path | None:
    """The directory of run ``run_id`` under ``<data>/runs/<date>/``, or None."""
    runs = Path(data_dir) / "runs"
    if not runs.is_dir():
        return None
    return next((d for d in sorted(runs.glob(f"*/{run_id}")) if d.is_dir()), None)


def claim_run_dir(data_dir: Path, run_id: str, now: dt.datetime | None = None) -> Path:
    """Create ``<data>/runs/<YYYY-MM-DD>/<run_id>`` (with ``logs``) for a new run; RunIdError
    when ``run_id`` is malformed or another run already has it (under any date)."""
    check_run_id(run_id)
    taken = find_run_dir(data_dir, run_id)
    if taken is not None:
        raise RunIdError(f"--run-id {run_id}: already used by the run in {taken} (a run id names one run; "
                         "give another, or leave --run-id out for a fresh one)")
    now = now or dt.datetime.now(dt.timezone.utc)
    d = Path(data_dir) / "runs" / f"{now:%Y-%m-%d}" / run_id
    d.parent.mkdir(parents=True, exist_ok=True)
    try:
        d.mkdir()
    except FileExistsError:
        raise RunIdError(f"--run-id {run_id}: already used by the run in {d}") from None
    (d / "logs").mkdir()
    return d


def discard_unstarted(d: Path) -> bool:
    """Remove run directory ``d`` if no file was written in it (a run refused before it
    started leaves nothing behind); True when removed."""
    if not d.is_dir() or any(p.is_file() or p.is_symlink() for p in d.rglob("*")):
        return False
    shutil.rmtree(d, ignore_errors=True)
    try:
        d.parent.rmdir()  # the date's folder, when this run was its only one
    except OSError:
        pass
    return True


def log_name(partition: str) -> str:
    """A partition's log file name: ``fh[3]`` -> ``fh.3.log``."""
    return _SAFE.sub(".", partition.replace("]", "")) + ".log"
