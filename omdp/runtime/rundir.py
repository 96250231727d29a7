"""Run ids and run directories (docs/architecture.md "Data layout": ``runs/<date>/<run_id>/``).

A run id names the run's directory and its shared memory segments
(``omdp.transport.shm_names.new_run_id``: ``<YYYYMMDD>T<HHMMSS>p<pid><4 hex>``).
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from omdp.errors import InputError
from omdp.transport.shm_names import new_run_id

__all__ = ["DEFAULT_DATA_DIR", "RunIdError", "check_new_run_id", "log_name", "new_run_id", "run_dir"]

DEFAULT_DATA_DIR = Path("omdp-data")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]{0,62}")
"""What both the shared memory names (no dashes) and the stats segment (63 bytes) take."""


class RunIdError(InputError):
    """A run id given by the user that cannot name a new run."""


def check_new_run_id(data_dir: Path, run_id: str) -> None:
    """Refuse, before anything is created, a run id that cannot name the run's shared memory
    or that an earlier run under ``data_dir`` already has (its records would be overwritten)."""
    if not _RUN_ID.fullmatch(run_id):
        raise RunIdError(f"{run_id!r}: a run id is 1 to 63 characters of A-Z, a-z, 0-9, '_' and '.', not starting "
                         f"with '.' (it names the run's shared memory)")
    taken = sorted((Path(data_dir) / "runs").glob(f"*/{run_id}"))
    if taken:
        raise RunIdError(f"{run_id}: a run with this id exists ({taken[0]}); give another id")


def run_dir(data_dir: Path, run_id: str, now: dt.datetime | None = None) -> Path:
    """``<data>/runs/<YYYY-MM-DD>/<run_id>``, created with its ``logs`` folder."""
    now = now or dt.datetime.now(dt.timezone.utc)
    d = Path(data_dir) / "runs" / f"{now:%Y-%m-%d}" / run_id
    (d / "logs").mkdir(parents=True, exist_ok=True)
    return d


def log_name(partition: str) -> str:
    """A partition's log file name: ``fh[3]`` -> ``fh.3.log``."""
    return _SAFE.sub(".", partition.replace("]", "")) + ".log"
