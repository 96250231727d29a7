"""The ground truth of a synthetic capture: every injected anomalous quote, where it is in
the feed (line, message sequence number) and what it was, written as Parquet.

Schema (docs/manifest.md "Ground truth"): one row per anomalous quote message; an event
(``event``) of kind ``parity`` has one row per exchange it moved.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from omdp.atomic_files import write_parquet_atomic
from ops.synth.anomalies import KINDS
from ops.synth.market import ChunkQuotes
from ops.synth.nbbo import bid_of, offer_of
from ops.synth.series import SeriesTable
from ops.synth.universe import EXCHANGES, Universe

GROUND_TRUTH_FILE = "ground_truth.parquet"

SCHEMA = pa.schema([
    ("event", pa.int64()),
    ("kind", pa.string()),
    ("line", pa.int16()),
    ("seq", pa.int64()),
    ("time", pa.int32()),
    ("ts_ns", pa.int64()),
    ("participant", pa.string()),
    ("root", pa.string()),
    ("underlying", pa.string()),
    ("underlying_id", pa.int32()),
    ("series_id", pa.int64()),
    ("expiry", pa.int32()),
    ("strike_px", pa.int64()),
    ("put_call", pa.string()),
    ("bid", pa.int32()),
    ("offer", pa.int32()),
    ("fair_bid", pa.int32()),
    ("fair_offer", pa.int32()),
    ("nbbo_bid", pa.int32()),
    ("nbbo_offer", pa.int32()),
    ("nbbo_state", pa.string()),
    ("magnitude", pa.float64()),
])


class GroundTruth:
    """Collects anomalies chunk by chunk; ``place`` fills in where each landed in the feed."""

    def __init__(self) -> None:
        self._cols: dict[str, list[np.ndarray]] = {k: [] for k in (
            "event", "kind", "series", "exch", "bid", "offer", "fair_bid", "fair_offer", "nbbo_bid", "nbbo_offer", "magnitude")}
        self.count = 0
        self._line: list[np.ndarray] = []
        self._seq: list[np.ndarray] = []
        self._time: list[np.ndarray] = []
        self._ts: list[np.ndarray] = []
        self._ids: list[np.ndarray] = []

    def add(self, cq: ChunkQuotes) -> np.ndarray:
        """Take a chunk's anomalies; returns each quote row's ground-truth id (-1: none)."""
        inj = cq.anomalies
        rows = cq.rows
        n = inj["row"].shape[0]
        gt = np.full(len(rows), -1, dtype=np.int64)
        if n == 0:
            return gt
        r = inj["row"]
        ids = self.count + np.arange(n)
        gt[r] = ids
        nbb = bid_of(rows.best_bid[r])[0]
        nbo = offer_of(rows.best_offer[r])[0]
        cols = {"event": inj["event"], "kind": inj["kind"], "series": rows.series[r], "exch": rows.exch[r],
                "bid": rows.bid[r], "offer": rows.offer[r], "fair_bid": inj["fair_bid"], "fair_offer": inj["fair_offer"],
                "nbbo_bid": nbb, "nbbo_offer": nbo, "magnitude": inj["magnitude"]}
        for k, v in cols.items():
            self._cols[k].append(np.asarray(v))
        self.count += n
        return gt

    def place(self, ids: np.ndarray, line: int, seq: np.ndarray, time: np.ndarray, ts_ns: np.ndarray) -> None:
        """Anomalies ``ids`` were sent on ``line`` with sequence numbers ``seq``."""
        self._ids.append(ids)
        self._line.append(np.full(ids.shape[0], line, dtype=np.int16))
        self._seq.append(seq.astype(np.int64))
        self._time.append(time.astype(np.int32))
        self._ts.append(ts_ns.astype(np.int64))

    def table(self, uni: Universe, series_table: SeriesTable) -> pa.Table:
        """Every anomaly as an Arrow table (SCHEMA), in feed order per line."""
        def cat(k: str, dtype: type) -> np.ndarray:
            return np.concatenate(self._cols[k]) if self._cols[k] else np.zeros(0, dtype=dtype)
        n = self.count
        line = np.zeros(n, dtype=np.int16)
        seq = np.full(n, -1, dtype=np.int64)
        time = np.zeros(n, dtype=np.int32)
        ts = np.zeros(n, dtype=np.int64)
        if self._ids:
            ids = np.concatenate(self._ids)
            line[ids] = np.concatenate(self._line)
            seq[ids] = np.concatenate(self._seq)
            time[ids] = np.concatenate(self._time)
            ts[ids] = np.concatenate(self._ts)
        series = cat("series", np.int64)
        nbb, nbo = cat("nbbo_bid", np.int64), cat("nbbo_offer", np.int64)
        state = np.where((nbb > 0) & (nbo > 0) & (nbb > nbo), "crossed",
                         np.where((nbb > 0) & (nbo > 0) & (nbb == nbo), "locked", "normal"))
        und = series_table.underlying[series]
        data = {
            "event": cat("event", np.int64),
            "kind": np.array(KINDS, dtype=object)[cat("kind", np.int8)] if n else np.zeros(0, dtype=object),
            "line": line, "seq": seq, "time": time, "ts_ns": ts,
            "participant": np.array(list(EXCHANGES), dtype=object)[cat("exch", np.int64)] if n else np.zeros(0, dtype=object),
            "root": np.array([uni.roots[i].symbol for i in series_table.root[series]], dtype=object),
            "underlying": np.array([uni.underlyings[i].symbol for i in und], dtype=object),
            "underlying_id": und.astype(np.int32),
            "series_id": series,
            "expiry": series_table.expiry[series].astype(np.int32),
            "strike_px": series_table.strike_milli[series] * 1_000_000,
            "put_call": np.where(series_table.is_put[series], "P", "C").astype(object),
            "bid": cat("bid", np.int32), "offer": cat("offer", np.int32),
            "fair_bid": cat("fair_bid", np.int32), "fair_offer": cat("fair_offer", np.int32),
            "nbbo_bid": nbb.astype(np.int32), "nbbo_offer": nbo.astype(np.int32),
            "nbbo_state": state.astype(object), "magnitude": cat("magnitude", np.float64),
        }
        table = pa.table({k: pa.array(v, type=SCHEMA.field(k).type) for k, v in data.items()}, schema=SCHEMA)
        return table.sort_by([("line", "ascending"), ("seq", "ascending")])

    def write(self, path: Path, uni: Universe, series_table: SeriesTable) -> int:
        """Write the Parquet file; returns the number of rows."""
        table = self.table(uni, series_table)
        write_parquet_atomic(table, path)
        return table.num_rows

