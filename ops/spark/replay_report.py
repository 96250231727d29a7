"""The replay's part of the nightly report, and which dates a night covers.

Runs are filed under the wall-clock date they were made (``runs/<date>/``), captures under
their capture date (``captures/<date>/``), so a date a user names may be either. A night
``D`` covers both readings: the runs made on D and the captures they replayed, and the
capture of D (if there is one) with every run of it, whatever date that run is filed under.
The replay job runs over those captures (reconciling every ``--no-loop`` run of them), and
the report's "Dates" table says what D was read as and what was used.

The tables sit in ``reports/<D>/`` beside the others (``replay_*``, ``night_dates``); this
module renders its own section of the page, so the page's other sections need not change.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ops.spark.data_layout import DataLayout
from ops.spark.replay_job import REPLAY_CONFIGS_SCHEMA, ReplayResult
from ops.spark.replay_reconcile import RECONCILE_MISMATCH_SCHEMA, RECONCILE_SCHEMA

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


def write_replay_tables(reports_dir: Path, night: NightDates, result: ReplayResult | None) -> None:
    """``night_dates`` and, when the replay ran, ``replay_configs``, ``replay_reconciliation``
    and ``replay_mismatches`` (copied from ``replay/date=*/``)."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([{
        "date": night.date, "read_as": night.read_as, "capture_dates": ",".join(night.capture_dates),
        "runs_made": night.runs_made, "runs_of_captures": json.dumps(night.runs_of_captures, sort_keys=True)}],
        schema=NIGHT_DATES_SCHEMA), reports_dir / "night_dates.parquet")
    if result is None:
        return
    pq.write_table(pa.Table.from_pylist(result.configs, schema=REPLAY_CONFIGS_SCHEMA),
                   reports_dir / "replay_configs.parquet")
    pq.write_table(pa.Table.from_pylist(result.reconciliation, schema=RECONCILE_SCHEMA),
                   reports_dir / "replay_reconciliation.parquet")
    bad = []
    for date in result.dates:
        path = reports_dir.parent.parent / "replay" / f"date={date}" / "reconciliation_mismatches"
        if path.is_dir():
            bad += pq.read_table(path).to_pylist()
    pq.write_table(pa.Table.from_pylist(bad, schema=RECONCILE_MISMATCH_SCHEMA), reports_dir / "replay_mismatches.parquet")


def _rows(reports_dir: Path, name: str) -> list[dict]:
    path = reports_dir / f"{name}.parquet"
    return pq.read_table(path).to_pylist() if path.is_file() else []


def _table(rows: list[dict], cols: list[tuple[str, str]], empty: str) -> str:
    if not rows:
        return f"<p class='empty'>{html.escape(empty)}</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('n/a' if r.get(k) is None else str(r.get(k)))}</td>"
                                    for k, _ in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def replay_section(reports_dir: Path) -> str:
    """The page's "Dates" and "Replay" sections (empty when the night wrote no such tables)."""
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
             f"tables below cover those runs too; the feeds tables cover the capture of "
             f"{html.escape(d['date'])} only (a capture's own night has its feeds tables).</p>"]
    recon = _rows(reports_dir, "replay_reconciliation")
    bad = [r for r in recon if r["mismatches"]]
    parts += ["<h2>Replay</h2>",
              f"<p class='flag'>{len(bad)} run(s) disagree with the replay</p>" if bad
              else "<p class='ok'>every live run reconciled agrees with the replay</p>" if recon else "",
              "<h3>Configurations</h3>",
              _table(_rows(reports_dir, "replay_configs"),
                     [("date", "capture"), ("config", "config"), ("messages", "messages"), ("signals", "signals"),
                      ("crossed", "crossed"), ("locked", "locked"), ("off_smile", "off smile"), ("parity", "parity"),
                      ("refreshes", "pricing refreshes"), ("table_full", "quotes lost to a full engine"),
                      ("nbbo_changes", "NBBO changes"), ("precision", "precision"), ("recall", "recall"),
                      ("detected", "events detected"), ("events", "events injected"),
                      ("engine_cpu_s", "engine CPU s")], "no capture replayed"),
              "<p>precision and recall: against the synthetic capture's ground truth (n/a: none), "
              "ops/spark/replay_score.py</p>",
              "<h3>Reconciliation with live runs</h3>",
              _table(recon, [("run_id", "run"), ("run_date", "filed under"), ("capture_date", "capture"),
                             ("rate_x", "rate x"), ("live_signals", "live signals"),
                             ("reference_signals", "replay book signals"), ("matched", "matched"),
                             ("explained_by_off_smile", "explained by off smile"),
                             ("priced_checked", "priced checked"), ("mismatches", "mismatches"),
                             ("status", "status")], "no --no-loop run of these captures"),
              _table(_rows(reports_dir, "replay_mismatches")[:50],
                     [("run_id", "run"), ("line", "line"), ("msg_seq", "sequence"), ("kind", "kind"),
                      ("side", "side"), ("reason", "why")], "no mismatch")]
    return "\n".join(parts)
