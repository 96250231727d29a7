"""Files a nightly job could not use: reported by name with the reason, skipped, and the
night goes on (issue 8 "Data rules").
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from pyspark.sql import types as T

log = logging.getLogger("omdp.spark")

FILE_PROBLEM_SCHEMA = T.StructType(
    [
        T.StructField("date", T.StringType(), False),
        T.StructField("job", T.StringType(), False),
        T.StructField("path", T.StringType(), False),
        T.StructField("action", T.StringType(), False),   # "skipped" or "partly skipped"
        T.StructField("error", T.StringType(), False),
    ]
)


@dataclass(frozen=True)
class FileProblem:
    """A file that was skipped (``action`` "skipped") or read only in part ("partly
    skipped"), with the error that says why."""

    path: str
    action: str
    error: str

    def row(self, date: str, job: str) -> dict[str, str]:
        """The row of the ``*_skipped_files`` report table."""
        return {"date": date, "job": job, "path": self.path, "action": self.action, "error": self.error}


def report_problems(date: str, job: str, problems: list[FileProblem]) -> None:
    """Log each problem on the driver, one line per file."""
    for p in problems:
        log.warning("%s %s: %s %s: %s", job, date, p.action, p.path, p.error)


def gather_problems(problems: list[FileProblem], rows: list[dict]) -> None:
    """Add to ``problems`` each file the tasks' status rows name (their ``problems_json``:
    [(path, action, error)]) that it does not name yet: a file two tasks read is reported once."""
    seen = {p.path for p in problems}
    for r in rows:
        for path, action, error in json.loads(r["problems_json"]):
            if path not in seen:
                seen.add(path)
                problems.append(FileProblem(path, action, error))
