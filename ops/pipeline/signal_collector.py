"""The signal collector (``signal_collector``): every signal the decision engines raise,
kept for ``signals.parquet`` and pushed to the live stats segment for the dashboard.

A Python sink: signals are rare (a few per second of feed), so one interpreter call per
batch of them costs nothing on the hot path, and the records are copied out of the batch
(it is lent for the call only).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from decision_engines.signal_record import SIGNAL_DTYPE, signal_kind_name
from omdp.metrics.run_files import write_signals
from omdp.metrics.stats_segment import StatsSegmentError, StatsWriter
from omdp.operator import Operator, OperatorContext
from omdp.record import RT_SIGNAL
from omdp.registry import NoParams

PUT_CALL = {ord("C"): "C", ord("P"): "P"}


def signals_table(sig: np.ndarray) -> dict[str, Any]:
    """Signal records as the columns of signals.parquet (RUN_SIGNALS_SCHEMA)."""
    st = sig["hdr"]["stamps"]
    ts = np.where(st["de_out"] > 0, st["de_out"], st["de_in"])
    roots = [bytes(r[:n]).decode("ascii", "replace") for r, n in zip(sig["root"], sig["root_len"])]
    return {
        "ts_ns": ts.astype(np.int64),
        "engine": sig["engine"].astype(np.uint16),
        "line": sig["line"].astype(np.uint16),
        "msg_seq": sig["msg_seq"].astype(np.uint64),
        "underlying_id": sig["underlying_id"].astype(np.uint32),
        "root": roots,
        "expiry": sig["expiry"].astype(np.uint32),
        "strike_px": sig["strike_px"].astype(np.int64),
        "put_call": [PUT_CALL.get(int(p), "") for p in sig["put_call"]],
        "kind": [signal_kind_name(int(k)) for k in sig["kind"]],
        "value": sig["value"].astype(np.float64),
    }


class SignalCollector(Operator):
    """Keeps every signal record; writes signals.parquet when its input ends."""

    def __init__(self, params: NoParams, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.parts: list[np.ndarray] = []
        self.count = 0
        self.foreign = 0
        self.stats: StatsWriter | None = None
        if ctx.run_dir is not None:
            try:
                self.stats = StatsWriter.attach(Path(ctx.run_dir).name)
            except (StatsSegmentError, ValueError):
                self.stats = None

    def process_batch(self, records: np.ndarray, port: str) -> None:
        """Copy the batch's signal records and show them live."""
        ok = records["hdr"]["type"] == RT_SIGNAL
        self.foreign += int((~ok).sum())
        sig = records[ok].copy()
        if not len(sig):
            return
        self.parts.append(sig)
        self.count += len(sig)
        if self.stats is not None:
            cols = signals_table(sig)
            for i in range(len(sig)):
                series = f"{cols['root'][i]} {int(cols['expiry'][i])} {cols['put_call'][i]}{int(cols['strike_px'][i]) / 1e9:g}"
                self.stats.push_signal(cols["kind"][i], series, float(cols["value"][i]), int(cols["engine"][i]),
                                       int(cols["ts_ns"][i]))

    def end_of_stream(self) -> None:
        """Write signals.parquet (also when there was none: an empty file says so)."""
        if self.ctx.run_dir is None:
            return
        sig = np.concatenate(self.parts) if self.parts else np.zeros(0, SIGNAL_DTYPE)
        write_signals(self.ctx.run_dir, signals_table(sig))

    def stopped_early(self) -> None:
        """A hard stop: write the signals received so far (the report says the run failed)."""
        self.end_of_stream()

    def counters(self) -> dict[str, int]:
        """Signals kept and records of another type."""
        return {"signals": self.count, "foreign": self.foreign}

    def close(self) -> None:
        """Detach from the stats segment."""
        if self.stats is not None:
            self.stats.close()
            self.stats = None
