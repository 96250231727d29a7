"""Find the day's run directories and check every run record file against its contract
(``omdp.metrics.run_records``) on the driver before any executor reads it; read the one-row
meta files.

Only Parquet footers are read (cheap): a truncated, garbage or wrong-schema file is reported
by name and left out, so one bad file never fails the night. A run without a usable
``meta.parquet`` or ``samples.parquet`` is left out as a whole; the other files are optional.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from omdp.errors import InputError
from omdp.metrics.run_records import RUN_FILES
from ops.spark.common.file_problems import FileProblem

REQUIRED_FILES = ("meta.parquet", "samples.parquet")


class RunRecordError(InputError):
    """A run record file that does not meet its contract: which file and why."""


@dataclass
class RunDirectory:
    """One usable run: its directory name and, per record file name, the checked path and
    the row count its footer states."""

    name: str
    path: Path
    files: dict[str, Path] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)


def check_record_file(path: Path, schema: pa.Schema) -> int:
    """Return the row count of ``path`` if its footer is readable and every field of
    ``schema`` is there with its type; raise RunRecordError otherwise."""
    try:
        meta = pq.read_metadata(path)
        found = meta.schema.to_arrow_schema()
    except (OSError, pa.ArrowException) as exc:
        raise RunRecordError(f"unreadable Parquet: {exc}") from exc
    for f in schema:
        idx = found.get_field_index(f.name)
        if idx < 0:
            raise RunRecordError(f"column {f.name!r} missing")
        if not found.field(idx).type.equals(f.type):
            raise RunRecordError(f"column {f.name!r} is {found.field(idx).type}, contract says {f.type}")
    return meta.num_rows


def scan_runs(runs_dir: Path) -> tuple[list[RunDirectory], list[FileProblem]]:
    """The usable runs under ``runs/<date>/`` (sorted by name) and the problems found."""
    runs: list[RunDirectory] = []
    problems: list[FileProblem] = []
    if not runs_dir.is_dir():
        return runs, problems
    for run_path in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        run = RunDirectory(run_path.name, run_path)
        missing_required = False
        for name, schema in RUN_FILES.items():
            path = run_path / name
            if not path.exists():
                if name in REQUIRED_FILES:
                    problems.append(FileProblem(str(path), "skipped", "required run record file missing; run skipped"))
                    missing_required = True
                continue
            try:
                rows = check_record_file(path, schema)
                if name == "meta.parquet" and rows != 1:
                    raise RunRecordError(f"holds {rows} rows, a run has exactly one")
            except RunRecordError as exc:
                whole = name in REQUIRED_FILES
                problems.append(
                    FileProblem(str(path), "skipped", f"{exc}" + ("; run skipped" if whole else ""))
                )
                missing_required |= whole
                continue
            run.files[name] = path
            run.rows[name] = rows
        if not missing_required:
            runs.append(run)
    return runs, problems


def read_meta(runs: list[RunDirectory], date: str) -> tuple[dict[str, dict], list[FileProblem]]:
    """``{run_dir: meta row}`` (``date`` set to the night) and the problems. Read on the
    driver: a meta file is one row, and reading it there costs no Spark job. A meta file
    whose footer was sound but whose row is not is reported and its run left out."""
    rows: dict[str, dict] = {}
    problems: list[FileProblem] = []
    for run in runs:
        path = run.files["meta.parquet"]
        try:
            (row,) = pq.read_table(path, schema=RUN_FILES["meta.parquet"]).to_pylist()
        except (OSError, ValueError, pa.ArrowException) as exc:
            problems.append(FileProblem(str(path), "skipped", f"meta row unreadable: {exc}; run skipped"))
            continue
        rows[run.name] = {**row, "date": date}
    return rows, problems
