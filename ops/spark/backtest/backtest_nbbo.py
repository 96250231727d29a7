"""The backtest's NBBO table: a bucket's NBBO changes (the engine's log, NBBO_CHANGE_DTYPE) as
Arrow and as one Parquet file per bucket, streamed a row group at a time.

A 30 s day has 4.4 M NBBO changes (80 bytes each). Gathered into one growing array per
bucket, copying them into its fresh pages took 1.9 task CPU-seconds of the backtest (in the
executors, against 0.36 s in a process of its own: the pages of a large new array cost far
more there), more than the engine. Streamed, they pass through one fixed buffer of a row
group (``NBBO_ROW_GROUP`` changes, 21 MB, filled from the engine's log, converted and
written when full), whose columns are built while it is in cache (docs/analytics.md,
"Backtest"; bench: docs/benchmarks.md, 2026-11-29): the backtest with the NBBO table took 3.5
task CPU-s for the 30 s day instead of 5.6-5.8. The conversion is one C pass over the
records into reused column buffers (``NbboColumns``) and a root dictionary of distinct
roots (``RootNames``): 22 ns a change where numpy field by field and a dictionary entry per
series took 134.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from decision_engines.engine_records import NBBO_CHANGE_DTYPE
from omdp.native import ffi, lib
from omdp.record import copy_records

BACKTEST_NBBO_SCHEMA = pa.schema(
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

BACKTEST_NBBO_DICT_SCHEMA = pa.schema([
    pa.field(f.name, pa.dictionary(pa.int32(), pa.string()) if f.type == pa.string() else f.type) for f in BACKTEST_NBBO_SCHEMA
])
"""What ``nbbo_arrow`` builds: BACKTEST_NBBO_SCHEMA with its strings as dictionary arrays."""

_NBBO_DELTA = ["ts_ns", "msg_seq", "bid_size", "offer_size"]

NBBO_WRITE_OPTIONS = {
    "use_dictionary": [f.name for f in BACKTEST_NBBO_SCHEMA if f.type == pa.string()]
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
schema stored, so Spark and pyarrow read BACKTEST_NBBO_SCHEMA's strings (docs/benchmarks.md,
2026-11-28)."""


_DICT = pa.dictionary(pa.int32(), pa.string())
_I64 = ("ts_ns", "msg_seq", "strike_px", "bid_px", "bid_size", "offer_px", "offer_size")
_I32 = ("line", "quote_part", "put_call", "bid_part", "offer_part")
_U32 = ("underlying_id", "slot", "expiry")
_BITS = ("quote_valid", "put_call_valid", "bid_valid", "offer_valid")


class NbboColumns:
    """Column buffers the C converter (``omdp_engine_nbbo_arrow``, native
    engine_nbbo_arrow.h) fills from NBBO change records in one pass - about 85 ns a change
    less than a numpy copy and conversion per field (docs/benchmarks.md) - grown when a call
    needs more rows, reused otherwise: the arrays ``fill`` returns are valid until the
    next ``fill``."""

    def __init__(self) -> None:
        self._rows = -1
        self._bufs: dict[str, np.ndarray] = {}

    def fill(self, changes: np.ndarray) -> dict[str, np.ndarray]:
        """The columns of ``changes`` (NBBO_CHANGE_DTYPE), ``len(changes)`` rows each (the
        bitmaps whole bytes)."""
        if changes.dtype != NBBO_CHANGE_DTYPE:
            raise ValueError(f"NBBO changes have dtype {changes.dtype}, not NBBO_CHANGE_DTYPE")
        changes = np.ascontiguousarray(changes)
        n = len(changes)
        if n > self._rows:
            self._rows = max(n, 1)
            self._bufs = {**{k: np.empty(self._rows, np.int64) for k in _I64},
                          **{k: np.empty(self._rows, np.int32) for k in _I32},
                          **{k: np.empty(self._rows, np.uint32) for k in _U32},
                          **{k: np.empty((self._rows + 7) // 8, np.uint8) for k in _BITS}}
        cols = ffi.new("omdp_nbbo_arrow_cols_t*")
        keep = []
        for name, arr in self._bufs.items():
            keep.append(ffi.from_buffer(arr))
            setattr(cols, name, ffi.cast(ffi.typeof(getattr(cols, name)), keep[-1]))
        src = ffi.from_buffer(changes) if n else ffi.NULL
        if lib.omdp_engine_nbbo_arrow(ffi.cast("omdp_engine_nbbo_t*", src), n, cols) != 0:
            raise ValueError("omdp_engine_nbbo_arrow refused its arguments")
        return {k: v[:n] if k not in _BITS else v[:(n + 7) // 8] for k, v in self._bufs.items()}


def _fixed(t: pa.DataType, values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A fixed-width column over ``values`` (no copy), null where ``valid``'s bit is 0."""
    return pa.Array.from_buffers(t, len(values), [None if valid is None else pa.py_buffer(valid), pa.py_buffer(values)],
                                 null_count=0 if valid is None else -1)


def _chars(codes: np.ndarray, valid: np.ndarray) -> pa.DictionaryArray:
    """One-byte codes as one-letter strings (null where not valid: code 0), a dictionary over
    the 256 codes."""
    return pa.DictionaryArray.from_buffers(_DICT, len(codes), [pa.py_buffer(valid), pa.py_buffer(codes)], _CHARS,
                                           null_count=-1)


class RootNames:
    """Each series' root by its engine slot, named once from any of its records and kept
    across row groups; a row group's ``root`` column is a dictionary of the distinct roots it
    uses (a few thousand a day), indexed through the slots' root numbers: no string per row
    or per series once a slot is known (one entry per series, as before, cost 36 ns a
    change at 200,000 series: docs/benchmarks.md)."""

    def __init__(self) -> None:
        self._root_of_slot = np.full(0, -1, np.int32)   # slot -> root number; -1 not seen yet
        self._names: list[str] = []                      # root number -> name
        self._numbers: dict[str, int] = {}
        self._names_array = np.empty(0, object)

    def column(self, slots: np.ndarray, raw_roots: np.ndarray) -> pa.DictionaryArray:
        """The root column of rows of series ``slots`` (``raw_roots``: their records' root
        fields, read only for slots not named yet)."""
        slot = slots.astype(np.intp)
        top = int(slot.max()) + 1 if len(slot) else 0
        if top > len(self._root_of_slot):
            grow = max(top, 2 * len(self._root_of_slot)) - len(self._root_of_slot)
            self._root_of_slot = np.concatenate([self._root_of_slot, np.full(grow, -1, np.int32)])
        number = self._root_of_slot[slot]
        new = np.flatnonzero(number < 0)
        if len(new):
            named, first = np.unique(slot[new], return_index=True)
            # one name per distinct raw root (a few thousand), not one per new series
            raws, which = np.unique(raw_roots[new[first]], return_inverse=True)
            numbers = np.empty(len(raws), np.int32)
            for k, raw in enumerate(raws):
                name = bytes(raw).rstrip(b" \0").decode("ascii", "replace")
                numbers[k] = self._numbers.setdefault(name, len(self._names))
                if numbers[k] == len(self._names):
                    self._names.append(name)
            self._root_of_slot[named] = numbers[which]
            self._names_array = np.array(self._names, object)
            number = self._root_of_slot[slot]
        used = np.zeros(len(self._names), bool)
        used[number] = True
        index = np.cumsum(used, dtype=np.int32) - 1   # a used root's place in the dictionary
        return pa.DictionaryArray.from_arrays(pa.array(index[number]), pa.array(self._names_array[used].tolist(), pa.string()))


def nbbo_arrow(changes: np.ndarray, roots: RootNames | None = None, columns: NbboColumns | None = None) -> pa.Table:
    """BACKTEST_NBBO_DICT_SCHEMA rows of NBBO_CHANGE_DTYPE records (write them with
    NBBO_WRITE_OPTIONS); ``roots`` carries the series' names from earlier row groups;
    ``columns`` lends its buffers (the table is then valid until its next ``fill``)."""
    c = (columns or NbboColumns()).fill(changes)
    i64, i32, u32 = pa.int64(), pa.int32(), pa.uint32()
    cols = {
        "ts_ns": _fixed(i64, c["ts_ns"]),
        "line": _fixed(i32, c["line"]),
        "msg_seq": _fixed(i64, c["msg_seq"]),
        "quote_participant": _chars(c["quote_part"], c["quote_valid"]),
        "underlying_id": _fixed(u32, c["underlying_id"]),
        "root": (roots or RootNames()).column(c["slot"], changes["root"]),
        "expiry": _fixed(u32, c["expiry"]),
        "strike_px": _fixed(i64, c["strike_px"]),
        "put_call": _chars(c["put_call"], c["put_call_valid"]),
        "bid_px": _fixed(i64, c["bid_px"], c["bid_valid"]),
        "bid_size": _fixed(i64, c["bid_size"], c["bid_valid"]),
        "bid_participant": _chars(c["bid_part"], c["bid_valid"]),
        "offer_px": _fixed(i64, c["offer_px"], c["offer_valid"]),
        "offer_size": _fixed(i64, c["offer_size"], c["offer_valid"]),
        "offer_participant": _chars(c["offer_part"], c["offer_valid"]),
    }
    return pa.table(cols, schema=BACKTEST_NBBO_DICT_SCHEMA)


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
        self._columns = NbboColumns()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer: pq.ParquetWriter | None = pq.ParquetWriter(self._tmp, BACKTEST_NBBO_DICT_SCHEMA,
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
            self._writer.write_table(nbbo_arrow(self._buf[:self._n], self._roots, self._columns))
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
