"""The runs of a data directory, one row each, for ``omdp runs list``.

A row is read from what the run left in ``runs/<date>/<run_id>/``: ``run.json`` (status and
times, every run), ``plan.json`` (the topology), ``meta.parquet`` (a pipeline run's capture
date and rate) and ``report.json`` (a pipeline run's sustainability verdict). A file that is
missing or unreadable leaves its fields empty; a run directory without ``run.json`` is one
still running, or one whose process was killed.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from omdp.metrics.breakdown import BASE_PPS


@dataclass
class RunRow:
    """One run: id, topology, capture date, rate (Nx), verdict, start time, directory."""

    run_id: str
    topology: str
    capture_date: str
    rate_x: float | None
    verdict: str
    started: str
    run_dir: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _meta(run_dir: Path) -> dict[str, Any]:
    if not (run_dir / "meta.parquet").is_file():
        return {}
    from omdp.metrics.run_files import RunRecordError, read_meta

    try:
        return read_meta(run_dir)
    except (RunRecordError, OSError, ValueError):
        return {}


def _verdict(run: dict[str, Any], report: dict[str, Any]) -> str:
    """'sustainable' / 'not sustainable' / 'unknown' (a test could not be judged: the report's
    ``sustainable`` is null) for a pipeline run that ended, else the run's status."""
    status = str(run.get("status") or "running or killed")
    if status == "failed" or "sustainable" not in report:
        return status
    if report["sustainable"] is None:
        return "unknown"
    return "sustainable" if report["sustainable"] else "not sustainable"


def _when(run: dict[str, Any], meta: dict[str, Any], run_dir: Path) -> str:
    if isinstance(run.get("started_at"), (int, float)):
        t = dt.datetime.fromtimestamp(run["started_at"], dt.timezone.utc)
    elif meta.get("started_ns"):
        t = dt.datetime.fromtimestamp(meta["started_ns"] / 1e9, dt.timezone.utc)
    else:
        t = dt.datetime.fromtimestamp(run_dir.stat().st_mtime, dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S")


def run_row(run_dir: Path) -> RunRow:
    """The row of the run in ``run_dir``."""
    run, plan, report = _json(run_dir / "run.json"), _json(run_dir / "plan.json"), _json(run_dir / "report.json")
    meta = _meta(run_dir)
    rate = meta.get("rate_x")
    if rate is None and meta.get("target_pps"):
        rate = meta["target_pps"] / BASE_PPS
    return RunRow(run_id=run_dir.name, topology=str(meta.get("topology") or plan.get("topology") or ""),
                  capture_date=str(meta.get("capture_date") or ""), rate_x=float(rate) if rate else None,
                  verdict=_verdict(run, report), started=_when(run, meta, run_dir), run_dir=str(run_dir))


def list_runs(data_dir: Path) -> list[RunRow]:
    """Every run under ``<data>/runs/``, oldest first."""
    runs = Path(data_dir) / "runs"
    dirs = [d for d in runs.glob("*/*") if d.is_dir() and not d.name.startswith(".")] if runs.is_dir() else []
    return sorted((run_row(d) for d in dirs), key=lambda r: (r.started, r.run_id))
