"""The replay's NBBO table: a bucket's NBBO changes (the engine's log, NBBO_CHANGE_DTYPE) as
Arrow and as one Parquet file per bucket, streamed a row group at a time.

A 30 s day has 4.4 M NBBO changes (80 bytes each). Gathered into one growing array per
bucket, copying them into its fresh pages took 1.9 task CPU-seconds of the replay (in the
executors, against 0.36 s in a process of its own: the pages of a large new array cost far
more there), more than the engine. Streamed, they pass through one fixed buffer of a row
group (``NBBO_ROW_GROUP`` changes, 21 MB, filled from the engine's log, converted and
written when full), whose columns are built while it is in cache (docs/analytics.md,
"Replay"; bench: docs/benchmarks.md, 2026-11-29): the replay with the NBBO table took 3.5
task CPU-s for the 30 s day instead of 5.6-5.8.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from decision_engines.engine_records import NBBO_CHANGE_DTYPE
from omdp.record import copy_records

REPLAY_NBBO_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),           # the quote's capture time
        ("line", pa.int32()),            # the quote's line and sequence number
        ("msg_seq", pa.int64()),
        ("quote_participant", pa.string()),  # the exchange whose quote moved the NBBO
        ("underlying_id", pa.uint32()),
        ("root", pa.string()),
        ("expiry", pa.uint32()),
        ("strike_px", pa.int64()),
        ("put_call", pa.string()),
        ("bid_px", pa.int64()),          # the NBBO after the quote; null: no bid on any exchange
        ("bid_size", pa.int64()),
        ("bid_participant", pa.string()),
        ("offer_px", pa.int64()),        # null: no offer
        ("offer_size", pa.int64()),
        ("offer_participant", pa.string()),
    ]
)
"""One row per quote that changed a series' NBBO (bid or offer: price, size or exchange),
the NBBO after it as the engine holds it (1e-9 price units), in the order the engine saw
them."""

_CHARS = pa.array([chr(i) for i in range(256)], pa.string())

REPLAY_NBBO_DICT_SCHEMA = pa.schema([
    pa.field(f.name, pa.dictionary(pa.int32(), pa.string()) if f.type == pa.string() else f.type) for f in REPLAY_NBBO_SCHEMA
])
"""What ``nbbo_arrow`` builds: REPLAY_NBBO_SCHEMA with its strings as dictionary arrays."""

_NBBO_DELTA = ["ts_ns", "msg_seq", "bid_size", "offer_size"]

NBBO_WRITE_OPTIONS = {
    "use_dictionary": [f.name for f in REPLAY_NBBO_SCHEMA if f.type == pa.string()]
    + ["line", "underlying_id", "expiry", "strike_px", "bid_px", "offer_px"],
    "column_encoding": {n: "DELTA_BINARY_PACKED" for n in _NBBO_DELTA},
    "write_statistics": ["ts_ns", "msg_seq"],
    "store_schema": False,
}
"""How NBBO files are written, chosen by timing the write of one bucket's 2.2 M changes
one column choice at a time: the string columns' dictionaries as built (casting them to
plain strings for the writer to hash back into dictionaries row by row was the write's
biggest part); the series fields and prices as dictionaries (few distinct values in a row
group); the times, sequence numbers and sizes delta-encoded; min/max statistics only on
the time and sequence columns (what a reader prunes on); snappy throughout; no Arrow
schema stored, so Spark and pyarrow read REPLAY_NBBO_SCHEMA's strings (docs/benchmarks.md,
2026-11-28)."""


def _chars(codes: np.ndarray) -> pa.DictionaryArray:
    """One-byte codes as one-letter strings (0: null), a dictionary over the 256 codes."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=codes == 0), _CHARS)


class RootNames:
    """Each series' root by its engine slot, named once from any of its records and kept
    across row groups; a row group's ``root`` column is a dictionary of the roots it uses."""

    def __init__(self) -> None:
        self._names = np.empty(0, object)
        self._known = np.zeros(0, bool)

    def column(self, changes: np.ndarray) -> pa.DictionaryArray:
        slot = changes["slot"].astype(np.int64)
        top = int(slot.max()) + 1 if len(slot) else 0
        if top > len(self._known):
            grow = max(top, 2 * len(self._known)) - len(self._known)
            self._known = np.concatenate([self._known, np.zeros(grow, bool)])
            self._names = np.concatenate([self._names, np.empty(grow, object)])
        new = np.flatnonzero(~self._known[slot])
        if len(new):
            slots, first = np.unique(slot[new], return_index=True)
            self._names[slots] = [bytes(r).rstrip(b" \0").decode("ascii", "replace") for r in changes["root"][new[first]]]
            self._known[slots] = True
        used = np.zeros(top, bool)
        used[slot] = True
        index = np.cumsum(used, dtype=np.int32) - 1   # a used slot's place in the dictionary
        return pa.DictionaryArray.from_arrays(pa.array(index[slot]), pa.array(self._names[:top][used].tolist(), pa.string()))


def nbbo_arrow(changes: np.ndarray, roots: RootNames | None = None) -> pa.Table:
    """REPLAY_NBBO_DICT_SCHEMA rows of NBBO_CHANGE_DTYPE records (write them with
    NBBO_WRITE_OPTIONS); ``roots`` carries the series' names from earlier row groups."""
    no_bid, no_offer = changes["bid_part"] == 0, changes["offer_part"] == 0
    cols = {
        "ts_ns": pa.array(changes["ts_ns"], pa.int64()),
        "line": pa.array(changes["line"].astype(np.int32)),
        "msg_seq": pa.array(changes["msg_seq"].astype(np.int64)),
        "quote_participant": _chars(changes["quote_part"]),
        "underlying_id": pa.array(changes["underlying_id"], pa.uint32()),
        "root": (roots or RootNames()).column(changes),
        "expiry": pa.array(changes["expiry"], pa.uint32()),
        "strike_px": pa.array(changes["strike_px"], pa.int64()),
        "put_call": _chars(changes["put_call"]),
        "bid_px": pa.array(changes["bid_px"], pa.int64(), mask=no_bid),
        "bid_size": pa.array(changes["bid_size"].astype(np.int64), mask=no_bid),
        "bid_participant": _chars(changes["bid_part"]),
        "offer_px": pa.array(changes["offer_px"], pa.int64(), mask=no_offer),
        "offer_size": pa.array(changes["offer_size"].astype(np.int64), mask=no_offer),
        "offer_participant": _chars(changes["offer_part"]),
    }
    return pa.table(cols, schema=REPLAY_NBBO_DICT_SCHEMA)


NBBO_ROW_GROUP = 262_144
"""NBBO changes per row group of an NBBO file, and the size of the buffer that gathers them
(21 MB). Converting and writing 4.4 M changes in a process of its own: 294 ns a change
against 317-406 ns all at once, 310-320 ns with row groups of 1 M changes; files 2-3%
smaller than all at once (docs/benchmarks.md, 2026-11-29)."""


class NbboFile:
    """A bucket's NBBO changes streamed into ``path``: written under a hidden temporary name,
    renamed into place by ``close`` (a failed or retried task leaves no half file where
    readers look); ``abort`` removes it."""

    def __init__(self, path: Path, row_group: int = NBBO_ROW_GROUP) -> None:
        self.path = Path(path)
        self.rows = 0
        self._tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        self._buf = np.empty(row_group, NBBO_CHANGE_DTYPE)
        self._n = 0
        self._roots = RootNames()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(self._tmp, REPLAY_NBBO_DICT_SCHEMA,
                                                                 **NBBO_WRITE_OPTIONS)

    def extend(self, changes: np.ndarray) -> None:
        """Append changes (valid only for this call: the engine's log is reused)."""
        while len(changes):
            k = min(len(changes), len(self._buf) - self._n)
            copy_records(self._buf[self._n:self._n + k], changes[:k])
            self._n += k
            self.rows += k
            changes = changes[k:]
            if self._n == len(self._buf):
                self._flush()

    def _flush(self) -> None:
        if self._n and self._writer is not None:
            self._writer.write_table(nbbo_arrow(self._buf[:self._n], self._roots))
        self._n = 0

    def close(self) -> int:
        """Write what is left, put the file in place; the changes written."""
        if self._writer is None:
            raise ValueError(f"{self.path}: already closed")
        self._flush()
        self._writer.close()
        self._writer = None
        self._tmp.replace(self.path)
        return self.rows

    def abort(self) -> None:
        """Drop the file (a task that failed)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._tmp.unlink(missing_ok=True)
