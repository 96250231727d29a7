"""Score a decision engine's signals against a synthetic capture's ground truth: the rules
the nightly backtest's precision and recall use (``backtest_score``), and the one-engine
reference run of tests/integration/test_engine_signal_scoring.py. A ``CaptureRun`` holds an
engine's signals over a capture and who quoted what; they are matched to the ground truth
(one row per anomalous quote, by line and message sequence number):

- a signal is a true positive when the message that raised it is an anomalous quote of a
  compatible kind: crossed/locked for a lock or cross; off_smile, parity or - if that quote
  left the market locked or crossed - crossed/locked for the quotes of an off-smile or
  parity event (a parity event moves a call on every exchange: each move is off the smile);
- a crossed/locked signal on a message that is not itself anomalous is also a true positive
  while an anomalous quote of that series is standing (it stands until its exchange next
  quotes the series): the market is locked or crossed against that quote - the generator
  promises no lock or cross that an anomaly does not explain;
- an event is detected when at least one of its quotes raised a compatible signal.

precision = true positive signals / signals; recall = detected events / events.

``warmup_ms`` leaves the capture's first milliseconds out of both (events that start in it,
signals raised in it): until the engine has seen a series' market and priced its group there
is nothing to measure a quote against - an anomaly on a series' very first quote cannot be
told from the series' price.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from decision_engines.signal_record import SIGNAL_KIND_NAMES

COMPATIBLE: dict[str, set[str]] = {
    "locked": {"locked", "crossed"},
    "crossed": {"locked", "crossed"},
    "off_smile": {"off_smile", "parity"},
    "parity": {"off_smile", "parity"},
}


QUOTE_KEY_DTYPE = np.dtype([("line", "<u2"), ("msg_seq", "<u8"), ("root", "S6"), ("expiry", "<u4"),
                            ("strike_px", "<i8"), ("put_call", "u1"), ("participant", "u1")])


@dataclass
class CaptureRun:
    """What the engine produced over a capture, and who quoted what (for standing anomalies)."""

    signals: np.ndarray
    counters: dict[str, int]
    messages: int
    refreshes: int
    quotes: np.ndarray  # QUOTE_KEY_DTYPE, one row per decoded message
    first_time: int     # HHMMSSmmm of the first message


@dataclass
class Score:
    """Precision and recall, overall and per ground-truth kind."""

    signals: int
    true_positives: int
    events: int
    detected: int
    per_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    false_positive_kinds: dict[str, int] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return self.true_positives / self.signals if self.signals else 1.0

    @property
    def recall(self) -> float:
        return self.detected / self.events if self.events else 1.0


def _series_key(root: object, expiry: object, strike_px: object, put_call: object) -> tuple:
    r = root if isinstance(root, bytes) else str(root).encode()
    pc = put_call if isinstance(put_call, int) else ord(str(put_call))
    return (r.rstrip(b" \0"), int(expiry), int(strike_px), pc)


def standing_windows(gt: dict[str, list], quotes: np.ndarray) -> dict[tuple, list[tuple[int, int, int]]]:
    """(line, series key) -> [(first seq, end seq, event)]: an anomalous quote stands from its
    message until its exchange's next quote of the series on that line."""
    wanted = {}
    for i in range(len(gt["seq"])):
        key = (int(gt["line"][i]), _series_key(gt["root"][i], gt["expiry"][i], gt["strike_px"][i], gt["put_call"][i]))
        wanted.setdefault((key, ord(gt["participant"][i])), []).append((int(gt["seq"][i]), int(gt["event"][i])))
    roots = {k[0][1][0] for k in wanted}
    sel = np.isin(np.char.rstrip(quotes["root"], b" \0"), list(roots)) if roots else np.zeros(len(quotes), bool)
    later: dict[tuple, list[int]] = {}
    for q in quotes[sel]:
        key = ((int(q["line"]), _series_key(q["root"], q["expiry"], q["strike_px"], int(q["put_call"]))), int(q["participant"]))
        if key in wanted:
            later.setdefault(key, []).append(int(q["msg_seq"]))
    windows: dict[tuple, list[tuple[int, int, int]]] = {}
    for key, rows in wanted.items():
        seqs = np.sort(np.array(later.get(key, []), dtype=np.int64))
        for seq, event in rows:
            nxt = seqs[np.searchsorted(seqs, seq, side="right")] if seqs.size and seqs[-1] > seq else np.iinfo(np.int64).max
            windows.setdefault(key[0], []).append((seq, int(nxt), event))
    return windows


def _ms_of_day(hhmmssmmm: np.ndarray) -> np.ndarray:
    t = np.asarray(hhmmssmmm, dtype=np.int64)
    return ((t // 10_000_000) * 3600 + (t // 100_000) % 100 * 60 + (t // 1000) % 100) * 1000 + t % 1000


def score(run: CaptureRun, truth_path: Path, warmup_ms: int = 0) -> Score:
    """Match a run's signals to the ground truth Parquet file (see the module docstring)."""
    gt = pq.read_table(truth_path).to_pydict()
    signals = run.signals
    if warmup_ms:
        start = int(_ms_of_day(np.array([run.first_time]))[0]) + warmup_ms
        early = {int(e) for e, t in zip(gt["event"], _ms_of_day(np.array(gt["time"], dtype=np.int64))) if t < start}
        keep = [i for i, e in enumerate(gt["event"]) if int(e) not in early]
        gt = {k: [v[i] for i in keep] for k, v in gt.items()}
        signals = signals[_ms_of_day(signals["time"]) >= start]
    key = {(int(l), int(s)): i for i, (l, s) in enumerate(zip(gt["line"], gt["seq"]))}
    windows = standing_windows(gt, run.quotes)
    kinds = [SIGNAL_KIND_NAMES.get(int(k), f"kind{int(k)}") for k in signals["kind"]]
    detected: set[int] = set()
    tp = 0
    fp_kinds: dict[str, int] = {}
    for sig, kind in zip(signals, kinds):
        line, seq = int(sig["line"]), int(sig["msg_seq"])
        i = key.get((line, seq))
        event = None
        if i is not None:
            want = set(COMPATIBLE.get(gt["kind"][i], set()))
            if gt["nbbo_state"][i] in ("locked", "crossed"):
                want |= {"locked", "crossed"}
            if kind in want:
                event = int(gt["event"][i])
        if event is None and kind in ("locked", "crossed"):
            series = (line, _series_key(sig["root"], sig["expiry"], sig["strike_px"], int(sig["put_call"])))
            for first, end, ev in windows.get(series, []):
                if first <= seq < end:
                    event = ev
                    break
        if event is not None:
            tp += 1
            detected.add(event)
        else:
            fp_kinds[kind] = fp_kinds.get(kind, 0) + 1
    events: dict[int, str] = {int(e): k for e, k in zip(gt["event"], gt["kind"])}
    per_kind: dict[str, dict[str, int]] = {}
    for ev, k in events.items():
        d = per_kind.setdefault(k, {"events": 0, "detected": 0})
        d["events"] += 1
        d["detected"] += ev in detected
    return Score(len(kinds), tp, len(events), len(detected & set(events)), per_kind, fp_kinds)
