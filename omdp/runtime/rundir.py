"""Run ids and run directories (docs/architecture.md "Data layout": ``runs/<date>/<run_id>/``).

A run id names the run's directory and its shared memory segments
(``omdp.transport.shm_names.new_run_id``: ``<YYYYMMDD>T<HHMMSS>p<pid><4 hex>``).
"""
from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from omdp.transport.shm_names import new_run_id

__all__ = ["DEFAULT_DATA_DIR", "log_name", "new_run_id", "run_dir"]

DEFAULT_DATA_DIR = Path("omdp-data")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def run_dir(data_dir: Path, run_id: str, now: dt.datetime | None = None) -> Path:
    """``<data>/runs/<YYYY-MM-DD>/<run_id>``, created with its ``logs`` folder."""
    now = now or dt.datetime.now(dt.timezone.utc)
    d = Path(data_dir) / "runs" / f"{now:%Y-%m-%d}" / run_id
    (d / "logs").mkdir(parents=True, exist_ok=True)
    return d


def log_name(partition: str) -> str:
    """A partition's log file name: ``fh[3]`` -> ``fh.3.log``."""
    return _SAFE.sub(".", partition.replace("]", "")) + ".log"
