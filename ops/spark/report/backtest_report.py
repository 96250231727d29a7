"""The backtest's part of the nightly report, and which dates a night covers.

Runs are filed under the wall-clock date they were made (``runs/<date>/``), captures under
their capture date (``captures/<date>/``), so a date a user names may be either. A night
``D`` covers both readings: the runs made on D and the captures they replayed, and the
capture of D (if there is one) with every run of it, whatever date that run is filed under.
The backtest job runs over those captures (reconciling every ``--no-loop`` run of them), and
the report's "Dates" table says what D was read as and what was used.

The tables sit in ``reports/<D>/`` beside the others (``backtest_*``, ``night_dates``); this
module renders its own section of the page, so the page's other sections need not change.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from omdp.atomic_files import write_parquet_atomic
from ops.spark.backtest.backtest_job import BACKTEST_CONFIGS_SCHEMA, BacktestResult
from ops.spark.backtest.backtest_reconcile import RECONCILE_MISMATCH_SCHEMA, RECONCILE_SCHEMA
from ops.spark.common.data_layout import DataLayout
from ops.spark.report.report_cells import FLOAT, INT, SHARE, TEXT, html_table

NIGHT_DATES_SCHEMA = pa.schema(
    [("date", pa.string()), ("read_as", pa.string()), ("capture_dates", pa.string()),
     ("runs_made", pa.int64()), ("runs_of_captures", pa.string())]
)


@dataclass
class NightDates:
    """What a named date was read as, and the captures and runs the night uses."""

    date: str
    read_as: str                                       # "run date", "capture date", "both", "neither"
    capture_dates: list[str] = field(default_factory=list)
    runs_made: int = 0                                 # run directories under runs/<date>/
    runs_of_captures: dict[str, str] = field(default_factory=dict)  # run_id -> the date it is filed under


def _run_capture_dates(folder: Path) -> dict[str, str]:
    """run_id -> capture date of the runs in one runs/<date>/ folder."""
    out = {}
    for meta in sorted(folder.glob("*/meta.parquet")):
        try:
            (row,) = pq.read_table(meta, columns=["run_id", "capture_date"]).to_pylist()
        except (OSError, ValueError, pa.ArrowException):
            continue
        out[row["run_id"]] = row["capture_date"]
    return out


def resolve_night(layout: DataLayout, date: str) -> NightDates:
    """The captures and runs of the night ``date`` (see the module doc)."""
    made = _run_capture_dates(layout.runs(date))
    has_capture = layout.captures(date).is_dir()
    read_as = {(True, True): "both", (True, False): "run date", (False, True): "capture date",
               (False, False): "neither"}[(bool(made), has_capture)]
    captures = sorted({d for d in made.values() if layout.captures(d).is_dir()} | ({date} if has_capture else set()))
    runs_of: dict[str, str] = {}
    runs_root = layout.root / "runs"
    if runs_root.is_dir():
        for folder in sorted(p for p in runs_root.iterdir() if p.is_dir()):
            for run_id, cap in _run_capture_dates(folder).items():
                if cap in captures:
                    runs_of[run_id] = folder.name
    return NightDates(date, read_as, captures, len(made), runs_of)


def write_backtest_tables(reports_dir: Path, night: NightDates, result: BacktestResult | None) -> None:
    """``night_dates`` and, when the backtest ran, ``backtest_configs``, ``backtest_reconciliation``
    and ``backtest_mismatches`` (copied from ``backtest/date=*/``)."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(pa.Table.from_pylist([{
        "date": night.date, "read_as": night.read_as, "capture_dates": ",".join(night.capture_dates),
        "runs_made": night.runs_made, "runs_of_captures": json.dumps(night.runs_of_captures, sort_keys=True)}],
        schema=NIGHT_DATES_SCHEMA), reports_dir / "night_dates.parquet")
    if result is None:
        return
    write_parquet_atomic(pa.Table.from_pylist(result.configs, schema=BACKTEST_CONFIGS_SCHEMA),
                         reports_dir / "backtest_configs.parquet")
    write_parquet_atomic(pa.Table.from_pylist(result.reconciliation, schema=RECONCILE_SCHEMA),
                         reports_dir / "backtest_reconciliation.parquet")
    bad = []
    for date in result.dates:
        path = reports_dir.parent.parent / "backtest" / f"date={date}" / "reconciliation_mismatches"
        if path.is_dir():
            bad += pq.read_table(path).to_pylist()
    write_parquet_atomic(pa.Table.from_pylist(bad, schema=RECONCILE_MISMATCH_SCHEMA),
                         reports_dir / "backtest_mismatches.parquet")


def _rows(reports_dir: Path, name: str) -> list[dict]:
    path = reports_dir / f"{name}.parquet"
    return pq.read_table(path).to_pylist() if path.is_file() else []


def backtest_section(reports_dir: Path) -> str:
    """The page's "Dates" and "Backtest" sections (empty when the night wrote no such tables)."""
    dates = _rows(reports_dir, "night_dates")
    if not dates:
        return ""
    d = dates[0]
    runs_of = json.loads(d["runs_of_captures"] or "{}")
    parts = ["<h2>Dates</h2>",
             f"<p>{html.escape(d['date'])} was read as: <b>{html.escape(d['read_as'])}</b>. Runs made that night: "
             f"{d['runs_made']}. Captures covered: {html.escape(d['capture_dates'] or 'none')}. Runs of those "
             f"captures (and where they are filed): "
             f"{html.escape(', '.join(f'{r} ({f})' for r, f in sorted(runs_of.items())) or 'none')}. The latency "
             f"tables above cover those runs too, and the feeds tables those captures.</p>"]
    recon = _rows(reports_dir, "backtest_reconciliation")
    bad = [r for r in recon if r["mismatches"]]
    parts += ["<h2>Backtest</h2>",
              f"<p class='flag'>{len(bad)} run(s) disagree with the backtest</p>" if bad
              else "<p class='ok'>every live run reconciled agrees with the backtest</p>" if recon else "",
              "<h3>Configurations</h3>",
              html_table(_rows(reports_dir, "backtest_configs"),
                         [("date", "capture", TEXT), ("config", "config", TEXT), ("messages", "messages", INT),
                          ("signals", "signals", INT), ("crossed", "crossed", INT), ("locked", "locked", INT),
                          ("off_smile", "off smile", INT), ("parity", "parity", INT),
                          ("refreshes", "pricing refreshes", INT), ("table_full", "quotes lost to a full engine", INT),
                          ("nbbo_changes", "NBBO changes", INT), ("precision", "precision", SHARE),
                          ("recall", "recall", SHARE), ("detected", "events detected", INT),
                          ("events", "events injected", INT), ("engine_cpu_s", "engine CPU s", FLOAT)],
                         "no capture backtested"),
              "<p>precision and recall: against the synthetic capture's ground truth (n/a: none), "
              "ops/spark/backtest/backtest_score.py</p>",
              "<h3>Reconciliation with live runs</h3>",
              html_table(recon, [("run_id", "run", TEXT), ("run_date", "filed under", TEXT),
                                 ("capture_date", "capture", TEXT), ("rate_x", "rate x", FLOAT),
                                 ("live_signals", "live signals", INT), ("reference_signals", "backtest book signals", INT),
                                 ("matched", "matched", INT), ("explained_by_off_smile", "explained by off smile", INT),
                                 ("priced_checked", "priced checked", INT), ("mismatches", "mismatches", INT),
                                 ("status", "status", TEXT)], "no --no-loop run of these captures"),
              html_table(_rows(reports_dir, "backtest_mismatches")[:50],
                         [("run_id", "run", TEXT), ("line", "line", INT), ("msg_seq", "sequence", INT),
                          ("kind", "kind", TEXT), ("side", "side", TEXT), ("reason", "why", TEXT)], "no mismatch")]
    return "\n".join(parts)
