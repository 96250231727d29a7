"""Precision and recall of each backtest configuration against a synthetic capture's ground
truth (``captures/<date>/ground_truth.parquet``, written by ``omdp synth``;
docs/analytics.md "What-if").

The rules are ``ops.spark.backtest.signal_score``'s: a signal is a true positive when the message
that raised it is an anomalous quote of a compatible kind, or - for crossed/locked - while
an anomalous quote of its series stands (until that exchange next quotes the series on
that line); an event is detected when one of its quotes raised a compatible signal. Every
signal and event of the day counts (no warm-up is left out).

The standing windows need the later quotes of each anomalous quote's exchange and series.
Those messages are in the engine tasks, spread over the buckets: the driver hands each task
the keys (``truth_keys``: a 64-bit hash of line, root, expiry, strike, put/call and
exchange, with the strike to pre-filter on) and each task returns its messages with one of
those keys (``truth_quotes``), a few per anomaly; the driver scores with them and the
configuration's signals table.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from decision_engines.signal_record import SIGNAL_KIND_NAMES
from feedhandlers.routing import root_keys
from ops.spark.backtest.backtest_stage import StagedPart, quote_hits
from ops.spark.backtest.signal_score import QUOTE_KEY_DTYPE, CaptureRun, Score, score
from ops.synth.ground_truth import GROUND_TRUTH_FILE

_M = [np.uint64(k) for k in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93,
                              0xA0761D6478BD642F, 0xE7037ED1A0B428DB)]
_KIND_CODE = {name: code for code, name in SIGNAL_KIND_NAMES.items()}
SCORE_SIGNAL_DTYPE = np.dtype([("line", "<u2"), ("msg_seq", "<u8"), ("root", "S6"), ("expiry", "<u4"),
                               ("strike_px", "<i8"), ("put_call", "u1"), ("kind", "u1"), ("time", "<u4")])
"""The fields of a signal record ``signal_score.score`` reads."""


def truth_path(captures_dir: Path) -> Path | None:
    """The day's ground truth file, or None (not a synthetic capture, or an older one)."""
    p = captures_dir / GROUND_TRUTH_FILE
    return p if p.is_file() else None


def _root_bits(roots: np.ndarray) -> np.ndarray:
    """S6 roots (NUL or space padded) as uint64: the routing's keys with spaces as NULs."""
    b = np.ascontiguousarray(roots, dtype="S6").view(np.uint8).copy()
    b[b == 32] = 0
    return root_keys(b.view("S6"))


def quote_hash(line: np.ndarray, root: np.ndarray, expiry: np.ndarray, strike_px: np.ndarray, put_call: np.ndarray,
               participant: np.ndarray) -> np.ndarray:
    """A 64-bit key of (line, series, exchange) per message (uint64 arithmetic wraps)."""
    with np.errstate(over="ignore"):
        h = np.asarray(line, np.uint64) * _M[0]
        for k, v in enumerate((_root_bits(root), np.asarray(expiry, np.uint64), np.asarray(strike_px).astype(np.uint64),
                               np.asarray(put_call, np.uint64), np.asarray(participant, np.uint64)), start=1):
            h = (h ^ (h >> np.uint64(29))) + v * _M[k]
    return h


def truth_keys(path: Path) -> tuple[tuple[int, int], ...]:
    """(strike_px, key) of every anomalous quote in the ground truth: the key is the
    (line, series, exchange) hash; the strike lets a task skip hashing most messages."""
    gt = pq.read_table(path, columns=["line", "root", "expiry", "strike_px", "put_call", "participant"]).to_pydict()
    if not gt["line"]:
        return ()
    h = quote_hash(np.array(gt["line"]), np.array([r.encode() for r in gt["root"]], dtype="S6"), np.array(gt["expiry"]),
                   np.array(gt["strike_px"], np.int64), np.array([ord(p) for p in gt["put_call"]]),
                   np.array([ord(p) for p in gt["participant"]]))
    return tuple(sorted({(int(k), int(x)) for k, x in zip(gt["strike_px"], h)}))


def truth_quotes(part: StagedPart, keys: tuple[tuple[int, int], ...]) -> list[list]:
    """The staged records of a part (``backtest_stage.StagedPart``) with one of ``keys``
    (``truth_keys``), as [line, msg_seq, root, expiry, strike_px, put_call, participant]."""
    if not keys or not len(part):
        return []
    f = part.fields(quote_hits(part, np.array([k for k, _ in keys], dtype=np.int64),
                               np.array([x for _, x in keys], dtype=np.uint64)))
    return [[int(f["line"][i]), int(f["msg_seq"][i]), bytes(f["root"][i]).rstrip(b" \0").decode("ascii", "replace"),
             int(f["expiry"][i]), int(f["strike_px"][i]), int(f["put_call"][i]), int(f["participant"][i])]
            for i in range(len(f["line"]))]


def score_config(signals_dir: Path, quotes: list[list], path: Path) -> Score:
    """Score a configuration's signals table (``backtest/date=D/config=<name>/signals``)
    against the ground truth at ``path``, with the tasks' ``truth_quotes`` rows."""
    t = pq.read_table(signals_dir, columns=["line", "msg_seq", "root", "expiry", "strike_px", "put_call", "kind", "time"])
    d = t.to_pydict()
    sig = np.zeros(t.num_rows, SCORE_SIGNAL_DTYPE)
    for name in ("line", "msg_seq", "expiry", "strike_px", "time"):
        sig[name] = d[name]
    sig["root"] = [r.encode() for r in d["root"]]
    sig["put_call"] = [ord(p) if p else 0 for p in d["put_call"]]
    sig["kind"] = [_KIND_CODE.get(k, 255) for k in d["kind"]]
    q = np.zeros(len(quotes), QUOTE_KEY_DTYPE)
    for i, name in enumerate(("line", "msg_seq", "root", "expiry", "strike_px", "put_call", "participant")):
        q[name] = [r[i].encode() if name == "root" else r[i] for r in quotes]
    return score(CaptureRun(sig, {}, 0, 0, q, 0), path)
