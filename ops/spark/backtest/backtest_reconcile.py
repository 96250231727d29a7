"""Reconciliation: a live ``omdp run ... --no-loop`` of a capture against the backtest
of the same capture (docs/analytics.md "Reconciliation").

The live engines price on a wall-clock thread, so which quote first meets which band is a
matter of timing; the book is not. The backtest therefore runs a reference configuration
without pricing (``reference``: book checks only) and the run's signals are held to it:

- every live crossed/locked signal must be a reference signal of the same message (line,
  sequence number) with the same series, kind and value (bid - offer, exact);
- every reference signal must be in the run, unless the run raised off_smile on that
  message (one anomaly, one signal: a quote outside its band raises off_smile instead of
  the crossed/locked it causes; the book's state moves the same either way);
- every live off_smile or parity signal must be on a message the backtest accepted, with the
  same series.

Anything else is a mismatch: the live pipeline lost, duplicated, misrouted or misread a
message that mattered. The run's rate does not matter: the same capture gives the same
answer at 1x or 5x.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ops.spark.common.data_layout import DataLayout

REFERENCE = "reference"
"""The backtest configuration live runs are reconciled against (no pricing)."""
BOOK_KINDS = ("crossed", "locked")
PRICED_KINDS = ("off_smile", "parity")
MAX_MISMATCH_ROWS = 1000
"""Mismatches listed per run (all are counted)."""

RECONCILE_SCHEMA = pa.schema(
    [("run_id", pa.string()), ("run_date", pa.string()), ("capture_date", pa.string()), ("rate_x", pa.float64()),
     ("live_signals", pa.int64()), ("reference_signals", pa.int64()), ("matched", pa.int64()),
     ("explained_by_off_smile", pa.int64()), ("priced_checked", pa.int64()), ("mismatches", pa.int64()),
     ("status", pa.string())]
)
RECONCILE_MISMATCH_SCHEMA = pa.schema(
    [("run_id", pa.string()), ("line", pa.int64()), ("msg_seq", pa.int64()), ("kind", pa.string()),
     ("side", pa.string()), ("reason", pa.string())]
)


@dataclass
class LiveRun:
    """One live run of the capture, with its signals."""

    run_id: str
    run_date: str
    capture_date: str
    rate_x: float
    signals: list[dict]

    def check_keys(self) -> list[int]:
        """(line << 48) | msg_seq of the run's priced signals, to be looked up in the backtest."""
        return [(int(s["line"]) << 48) | int(s["msg_seq"]) for s in self.signals if s["kind"] in PRICED_KINDS]


def replayed_once(plan_path: Path) -> bool:
    """True when the run's feed senders replayed the capture once (``--no-loop``)."""
    try:
        plan = json.loads(plan_path.read_text())
    except (OSError, ValueError):
        return False
    ops = plan.get("operators", {}) if isinstance(plan, dict) else {}
    senders = [o for o in ops.values() if isinstance(o, dict) and o.get("kind") == "feed_sender"]
    return bool(senders) and all(o.get("params", {}).get("loop") is False for o in senders)


def find_live_runs(layout: DataLayout, capture_date: str) -> list[LiveRun]:
    """Every ``--no-loop`` run of the capture of ``capture_date``, whatever date it is filed
    under (runs are filed by the wall-clock date they were made)."""
    runs_root = layout.root / "runs"
    found: list[LiveRun] = []
    if not runs_root.is_dir():
        return found
    for meta_path in sorted(runs_root.glob("*/*/meta.parquet")):
        run_dir = meta_path.parent
        try:
            (meta,) = pq.read_table(meta_path, columns=["run_id", "date", "capture_date", "rate_x"]).to_pylist()
        except (OSError, ValueError, pa.ArrowException):
            continue
        if meta["capture_date"] != capture_date or not replayed_once(run_dir / "plan.json"):
            continue
        sig_path = run_dir / "signals.parquet"
        if not sig_path.is_file():
            continue
        signals = pq.read_table(sig_path, columns=["line", "msg_seq", "root", "expiry", "strike_px", "put_call",
                                                   "kind", "value"]).to_pylist()
        found.append(LiveRun(meta["run_id"], meta["date"], capture_date, float(meta["rate_x"] or 0.0), signals))
    return found


def _series(s: dict) -> tuple:
    """(root, expiry, strike, put/call); a run's signals.parquet keeps the root's space padding."""
    return (str(s["root"]).rstrip(" \0"), int(s["expiry"]), int(s["strike_px"]), s["put_call"])


def reconcile_run(run: LiveRun, reference_dir: Path, found: list[dict]) -> tuple[dict, list[dict]]:
    """The RECONCILE_SCHEMA row of ``run`` and its mismatches (RECONCILE_MISMATCH_SCHEMA)."""
    ref = pq.read_table(reference_dir).to_pylist() if reference_dir.is_dir() else []
    ref_book = {(int(s["line"]), int(s["msg_seq"])): s for s in ref if s["kind"] in BOOK_KINDS}
    live_book = {(int(s["line"]), int(s["msg_seq"])): s for s in run.signals if s["kind"] in BOOK_KINDS}
    off_smile = {(int(s["line"]), int(s["msg_seq"])) for s in run.signals if s["kind"] == "off_smile"}
    accepted = {(f["line"], f["msg_seq"]): f for f in found}
    bad: list[dict] = []

    def miss(key: tuple[int, int], kind: str, side: str, reason: str) -> None:
        bad.append({"run_id": run.run_id, "line": key[0], "msg_seq": key[1], "kind": kind, "side": side,
                    "reason": reason})

    matched = explained = priced = 0
    for key, s in live_book.items():
        r = ref_book.get(key)
        if r is None:
            miss(key, s["kind"], "live", "not raised by the backtest on this message")
        elif _series(r) != _series(s) or r["kind"] != s["kind"] or float(r["value"]) != float(s["value"]):
            miss(key, s["kind"], "live", f"backtest says {r['kind']} {_series(r)} value {r['value']}, run says "
                                         f"{s['kind']} {_series(s)} value {s['value']}")
        else:
            matched += 1
    for key, r in ref_book.items():
        if key in live_book:
            continue
        if key in off_smile:
            explained += 1
        else:
            miss(key, r["kind"], "backtest", "raised by the backtest, missing from the run")
    for s in run.signals:
        if s["kind"] not in PRICED_KINDS:
            continue
        key = (int(s["line"]), int(s["msg_seq"]))
        f = accepted.get(key)
        if f is None:
            miss(key, s["kind"], "live", "the backtest accepted no such message")
        elif _series(f) != _series(s):
            miss(key, s["kind"], "live", f"the message is series {(f['root'], f['expiry'], f['strike_px'], f['put_call'])}")
        else:
            priced += 1
    row = {"run_id": run.run_id, "run_date": run.run_date, "capture_date": run.capture_date, "rate_x": run.rate_x,
           "live_signals": len(run.signals), "reference_signals": len(ref_book), "matched": matched,
           "explained_by_off_smile": explained, "priced_checked": priced, "mismatches": len(bad),
           "status": "ok" if not bad else "mismatch"}
    return row, bad[:MAX_MISMATCH_ROWS]
