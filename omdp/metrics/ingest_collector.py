"""``IngestCollector``: per feed line, what arrived and what was lost.

Feed handlers count per line packets and messages received, messages missed (sequence
gaps), duplicate packets (the losing copy of A/B arbitration) and decode errors. Those
cumulative counters reach the stats segment's line table either straight from the feed
handler's C loop (``omdp_stats_line_publish``) or through ``update`` here, once per poll.
Every ``interval_s`` ``tick`` turns the table into one ingest.parquet row per line; the
dashboard reads the same table live.

Bounded memory (``spill_dir``): a run of 96 lines adds 96 rows a second, so once
``chunk_rows`` rows are held they are written to ingest.parquet as a row group (a temporary
file in the run directory, renamed into place by ``write``) and dropped; a 30-minute soak
of today's 96 lines grew the collector by 0.85 MiB a minute while it held them all.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.clock import now_ns
from omdp.metrics.run_files import to_table, write_ingest
from omdp.metrics.stats_segment import LINE_COUNTER_NAMES, StatsWriter

DEFAULT_CHUNK_ROWS = 16_384
"""Rows held before they are written, with ``spill_dir`` (under 3 minutes of 96 lines)."""

LINE_COUNTS_DTYPE = np.dtype([("line", "<u2")] + [(n, "<i8") for n in LINE_COUNTER_NAMES])
"""One line's cumulative counters, for ``update_many``."""


class IngestCollector:
    """Latest per-line ingest counters, periodic rows for ingest.parquet, and totals."""

    def __init__(self, stats: StatsWriter | None = None, interval_s: float = 1.0, spill_dir: str | Path | None = None,
                 chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        """stats: the run's segment (its line table is then the source of truth, so lines
        published there by other processes are collected too). interval_s: row period.
        spill_dir: the run directory, where rows past ``chunk_rows`` are written as the run
        goes (None: all held until ``write``)."""
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
        self._spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.chunk_rows = chunk_rows
        self._writer: pq.ParquetWriter | None = None
        self._spill_tmp: Path | None = None
        self.spilled_rows = 0
        self._stats = stats
        self._interval_ns = int(interval_s * 1e9)
        self._next_row_ns = 0
        self._latest: dict[int, dict[str, int]] = {}
        self._rows: dict[str, list[int]] = {n: [] for n in ("ts_ns", "line", *LINE_COUNTER_NAMES)}

    def update(self, line: int, ts_ns: int | None = None, **counts: int) -> None:
        """Set one line's cumulative counters (names from ``LINE_COUNTER_NAMES``, missing = 0)."""
        unknown = set(counts) - set(LINE_COUNTER_NAMES)
        if unknown:
            raise KeyError(f"unknown line counters {sorted(unknown)}; known: {LINE_COUNTER_NAMES}")
        full = {n: int(counts.get(n, 0)) for n in LINE_COUNTER_NAMES}
        for n, v in full.items():
            if v < 0:
                raise ValueError(f"line {line}: counter {n} is negative ({v})")
        if self._stats is not None:
            self._stats.publish_line(line, ts_ns=ts_ns, **full)
        self._latest[int(line)] = full

    def update_many(self, counts: np.ndarray, ts_ns: int | None = None) -> None:
        """``update`` for every row of a ``LINE_COUNTS_DTYPE`` array (one poll of all lines)."""
        if counts.dtype != LINE_COUNTS_DTYPE:
            raise TypeError(f"counts must have dtype {LINE_COUNTS_DTYPE}, got {counts.dtype}")
        ts = ts_ns or now_ns()
        for row in counts:
            self.update(int(row["line"]), ts_ns=ts, **{n: int(row[n]) for n in LINE_COUNTER_NAMES})

    def _refresh_from_segment(self) -> None:
        if self._stats is None:
            return
        for row in self._stats.lines():
            self._latest[row["line"]] = {k: row[k] for k in LINE_COUNTER_NAMES}

    def latest(self) -> dict[int, dict[str, int]]:
        """Line -> its latest cumulative counters."""
        self._refresh_from_segment()
        return {line: dict(c) for line, c in sorted(self._latest.items())}

    def tick(self, ts_ns: int | None = None) -> bool:
        """Append one row per line when ``interval_s`` has passed since the last rows."""
        ts = ts_ns or now_ns()
        if ts < self._next_row_ns:
            return False
        self.snapshot(ts)
        return True

    def snapshot(self, ts_ns: int | None = None) -> None:
        """Append one row per line now (the run's final rows, or on demand)."""
        ts = ts_ns or now_ns()
        for line, c in self.latest().items():
            self._rows["ts_ns"].append(ts)
            self._rows["line"].append(line)
            for n in LINE_COUNTER_NAMES:
                self._rows[n].append(c[n])
        self._next_row_ns = ts + self._interval_ns
        if self._spill_dir is not None and self.held_rows >= self.chunk_rows:
            self._spill()

    @property
    def held_rows(self) -> int:
        """Rows held in memory (not yet written)."""
        return len(self._rows["ts_ns"])

    def _spill(self) -> None:
        """The rows held, as a row group of the run directory's ingest.parquet-to-be."""
        table = self.table()
        if self._writer is None:
            assert self._spill_dir is not None
            self._spill_dir.mkdir(parents=True, exist_ok=True)
            self._spill_tmp = self._spill_dir / f".ingest.parquet.{os.getpid()}.{id(self)}.tmp"
            self._writer = pq.ParquetWriter(self._spill_tmp, table.schema)
        self._writer.write_table(table)
        self.spilled_rows += table.num_rows
        self._rows = {n: [] for n in self._rows}

    def totals(self) -> dict[str, int]:
        """Every counter summed over lines."""
        latest = self.latest()
        return {n: sum(c[n] for c in latest.values()) for n in LINE_COUNTER_NAMES}

    def missed_ratio(self) -> float | None:
        """Missed / (received + missed) messages over all lines; None before any message."""
        t = self.totals()
        seen = t["messages_received"] + t["messages_missed"]
        return t["messages_missed"] / seen if seen else None

    def table(self) -> pa.Table:
        """The rows held (all of them unless some were spilled) with ``RUN_INGEST_SCHEMA``."""
        return to_table("ingest.parquet", self._rows)

    def write(self, run_dir: str | Path) -> Path:
        """Write run_dir/ingest.parquet: the rows held, after those spilled there."""
        if self._writer is None:
            return write_ingest(run_dir, self.table())
        if self.held_rows:
            self._spill()
        self._writer.close()
        self._writer = None
        assert self._spill_tmp is not None
        path = Path(run_dir) / "ingest.parquet"
        os.replace(self._spill_tmp, path)
        return path

    def rows(self) -> list[dict[str, Any]]:
        """The rows held as dicts (oldest first)."""
        return self.table().to_pylist()
