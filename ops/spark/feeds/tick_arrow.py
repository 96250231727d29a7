"""Packets (OPRA FAST V2) or blocks (OBI v6) straight to tick-table Arrow batches: the C decoder writes each column into its
own buffer in Arrow's layout (``native/include/omdp/opra_arrow.h``) and this wraps the
buffers as ``pyarrow`` arrays without copying them, with the tick file's explicit schema
(``TICK_FILE_SCHEMA``). No 256-byte record and no numpy pass per field on the way: the only
Python work per batch is per distinct root (its underlying, from the day's manifest).

It gives the same batches as decoding to records (``feedhandlers.opra_fast.BatchDecoder``)
and converting them (``ops.spark.feeds.tick_table.ticks_batch``); tests hold the two equal. With
``dictionary=True`` (what the feeds task writes) the six string columns come as dictionary
arrays instead (``TICK_FILE_DICT_SCHEMA``, same values): root and underlying indexed by the
decoder's per-call root numbering, the one-character columns by their character code (which the
decoder writes beside the strings when asked, ``chr_code``), so
Parquet writes their dictionary pages without hashing every row's string (a fifth of the
write's CPU).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from feedhandlers.opra_batch import counters_dict
from feedhandlers.opra_errors import CAPACITY, OPRA_ERROR_DTYPE, OpraDecodeError
from feedhandlers.opra_obi_errors import ObiDecodeError
from feedhandlers.opra_obi_errors import counters_dict as obi_counters_dict
from omdp.native import ffi, lib
from ops.spark.feeds.tick_table import TICK_FILE_SCHEMA

_CHAR_BYTES = lib.OMDP_ARROW_CHAR_BYTES
_ROOT_BYTES = lib.OMDP_ARROW_ROOT_BYTES
_DICT = pa.dictionary(pa.int32(), pa.string())
_CHAR_DICT = pa.array([chr(i) for i in range(256)], pa.string())
"""The one-character columns' dictionary: code c -> chr(c) (the decoder writes a code >= 0x80
as U+0080..U+00FF, code 0 as null)."""
DICT_COLUMNS = ("category", "msg_type", "participant", "root", "underlying", "put_call")
NEVER_NULL = ("ts_ns", "block_seq", "msg_seq", "msg_index", "packet_messages", "packet_bytes", "root")
"""Columns the decoder fills on every row (native/include/omdp/opra_arrow.h)."""
TICK_FILE_DICT_SCHEMA = pa.schema([pa.field(f.name, _DICT if f.name in DICT_COLUMNS else f.type,
                                            nullable=f.name not in NEVER_NULL) for f in TICK_FILE_SCHEMA])
"""TICK_FILE_SCHEMA with the string columns as dictionary<int32, string> (the same values)
and the NEVER_NULL columns declared non-nullable, so that Parquet stores them REQUIRED: no
definition level per value to build and encode (about a tenth of the write's CPU), the
same types and values for every reader (Spark reads them into its nullable schema)."""

@dataclass
class ArrowDecoded:
    """One call's result: the tick batch (None when no packet held a message; with ``split``
    the quotes only, and ``rest`` the other messages), the first errors and this call's
    counters (packets, packets_ok, packets_bad, messages, per code; an OBI decoder's also
    empty and feed_flagged). With ``count``: the rows of each packet (0 for a malformed one)
    and its first message's msg_seq (-1 for a malformed or empty one), and, per distinct
    root of the call (root id order), its quote rows and its underlying's index in the
    batches' underlying dictionary (the dictionary's length for a root without one)."""

    batch: pa.RecordBatch | None
    errors: list[OpraDecodeError | ObiDecodeError] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    rest: pa.RecordBatch | None = None
    packet_rows: np.ndarray | None = None
    packet_seq: np.ndarray | None = None
    root_quotes: np.ndarray | None = None
    root_underlying: np.ndarray | None = None

    @property
    def batches(self) -> list[pa.RecordBatch]:
        """The call's non-empty batches: the quotes (or every row), then the rest."""
        return [b for b in (self.batch, self.rest) if b is not None]

def _buf(arr: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(arr)

def _column_buffers(rows: int) -> tuple:
    """Every column's buffers for ``rows`` rows (layouts: native/include/omdp/opra_arrow.h)."""
    bits = (rows + 7) // 8
    return (
        [np.empty(rows, np.int64) for _ in range(3 + 4 + 4)],  # 3 ints, prices, quantities
        [np.empty(rows, np.int32) for _ in range(3 + 2 + 1)],  # 3 ints, expiry, time, root_id
        np.empty(rows, np.uint32),  # root_first_row
        np.empty((1 + 4 + 4 + 1 + 4, bits), np.uint8),  # validity: expiry, prices, qtys, time, chars
        np.empty((4, rows + 1), np.int32),
        np.empty((4, rows * _CHAR_BYTES), np.uint8),
        np.empty(rows + 1, np.int32),
        np.empty(rows * _ROOT_BYTES, np.uint8),
        np.empty((4, rows), np.int32),  # character codes (dictionary indices), written when asked for
        np.empty(rows, np.int32),  # underlying's dictionary indices (dictionary mode)
        np.empty(rows, np.uint32),  # quote rows per distinct root (count)
    )


def _fast_errors(errs: object, n: int) -> list[OpraDecodeError]:
    if not n:
        return []
    arr = np.frombuffer(ffi.buffer(errs, n * OPRA_ERROR_DTYPE.itemsize), dtype=OPRA_ERROR_DTYPE)
    return [OpraDecodeError(int(e["code"]), int(e["packet_index"]), int(e["offset"]), int(e["message_index"]),
                            int(e["slot"])) for e in arr]


def _obi_errors(errs: object, n: int) -> list[ObiDecodeError]:
    return [ObiDecodeError.from_c(errs[i]) for i in range(n)]  # type: ignore[index]


@dataclass(frozen=True)
class _Feed:
    """What differs between the two wire formats on the way to the columns: the C calls,
    the error and counter structs and how they read."""

    row_bound: Callable[..., int]
    decode: Callable[..., int]
    error_type: str
    counters_type: str
    errors: Callable[[object, int], list]
    counters: Callable[[np.ndarray], dict[str, int]]


_FEEDS = {
    "fast": _Feed(lib.omdp_opra_arrow_row_bound, lib.omdp_opra_decode_arrow, "omdp_opra_error_t",
                  "omdp_opra_counters_t", _fast_errors, counters_dict),
    "obi": _Feed(lib.omdp_obi_arrow_row_bound, lib.omdp_obi_decode_arrow, "omdp_obi_error_t",
                 "omdp_obi_counters_t", _obi_errors, obi_counters_dict),
}
"""The decoder's formats by ``feed`` name (as ``feedhandlers.opra_obi.detect_feed`` names them)."""


class ArrowTickDecoder:
    """Decodes runs of packets into tick batches.

    With ``reuse`` (what the feeds job's writer uses: it writes each batch before asking for
    the next) the column buffers are kept and reused, grown when a call needs more rows, so a
    steady stream of chunks allocates and page-faults nothing; a batch is then valid only
    until the next ``decode``. Without it every call allocates fresh buffers that the batch
    it returns owns.

    With ``split`` (dictionary mode only; what the feeds task writes) a call's quotes come in
    one batch and its other messages in another (``ArrowDecoded.rest``), each in packet
    order: a quote carries every option field and no sale field, so the quotes' columns hold
    no null, and Parquet writes a column without nulls at half the CPU or less (it builds no
    definition levels from the bitmap and packs no spaced values; docs/benchmarks.md).

    With ``count`` (split only; what the feeds task profiles the feed from) the decoder also
    says how many rows each packet wrote and how many quote rows each distinct root has,
    counted as it writes them, and the call says each root's underlying
    (``ArrowDecoded.packet_rows``, ``root_quotes``, ``root_underlying``): the profiles then
    need no pass over the quotes' rows (``ops.spark.feeds.feed_tally``).

    ``feed`` is the packets' wire format: "fast" (OPRA FAST V2) or "obi" (OBI v6 blocks,
    decoded as the live path does: a block whose checksum does not match is dropped and
    counted). Both give the same columns (one record, one table)."""

    def __init__(self, max_errors: int = 1024, reuse: bool = False, dictionary: bool = False,
                 split: bool = False, count: bool = False, feed: str = "fast") -> None:
        if feed not in _FEEDS:
            raise ValueError(f"feed must be 'fast' or 'obi', not {feed!r}")
        if split and not dictionary:
            raise ValueError("split needs dictionary mode (per-row strings cannot have two regions)")
        if count and not split:
            raise ValueError("count needs split (its root counts are of the quotes)")
        self._reuse = reuse
        self._dictionary = dictionary
        self._split = split
        self._count = count
        self._feed = _FEEDS[feed]
        self._packet_rows = np.zeros(0, np.int32)
        self._packet_seq = np.zeros(0, np.int64)
        self._bufs: tuple | None = None
        self._rows = 0
        self._errs = ffi.new(f"{self._feed.error_type}[]", max_errors)
        self._max_errors = max_errors
        self._res = ffi.new("omdp_opra_arrow_result_t*")
        self._c_counters = ffi.new(f"{self._feed.counters_type}*")
        self._totals = np.frombuffer(ffi.buffer(self._c_counters), dtype=np.uint64)

    @property
    def counters(self) -> dict[str, int]:
        """Totals over every call so far."""
        return self._feed.counters(self._totals)

    def decode(
        self,
        buf: np.ndarray | bytes | memoryview,
        offsets: np.ndarray,
        lengths: np.ndarray,
        ts_ns: np.ndarray,
        root_map: dict[str, str],
        first_packet_index: int = 0,
    ) -> ArrowDecoded:
        """Decode packets ``buf[offsets[i] : offsets[i] + lengths[i]]`` captured at
        ``ts_ns[i]``; malformed ones are skipped, reported (the first ``max_errors``) and
        counted."""
        data = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.reshape(-1)
        if data.dtype != np.uint8:
            data = data.view(np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.uint64)
        lengths = np.ascontiguousarray(lengths, dtype=np.uint32)
        ts_ns = np.ascontiguousarray(ts_ns, dtype=np.int64)
        n = int(offsets.shape[0])
        if ts_ns.shape[0] != n or lengths.shape[0] != n:
            raise ValueError("offsets, lengths and ts_ns differ in length")
        if n and int((offsets + lengths).max()) > data.shape[0]:
            raise ValueError("a packet lies outside the buffer")
        # A good packet has exactly its header's count of messages: this is enough rows.
        bound = max(1, int(self._feed.row_bound(
            ffi.from_buffer("uint8_t[]", data), data.shape[0], ffi.from_buffer("uint64_t[]", offsets),
            ffi.from_buffer("uint32_t[]", lengths), n)) if n else 0)
        # split: two halves, quotes in the first, the rest from the second (whole 64 rows each:
        # the second half's bitmaps start at a whole byte)
        need = 2 * (-(-bound // 64) * 64) if self._split else bound
        if self._reuse and self._bufs is not None and need <= self._rows:
            bufs = self._bufs
        else:
            bufs = _column_buffers(need)
            if self._reuse:
                self._bufs, self._rows = bufs, need
        i64, i32, first_row, valid, chr_off, chr_data, root_off, root_data, chr_code, under_idx, root_rows = bufs
        rows = first_row.shape[0]
        rest_row = rows // 2 if self._split else 0

        cols = ffi.new("omdp_opra_arrow_cols_t*")
        keep = []  # cffi buffers must live through the call

        def p(ctype: str, arr: np.ndarray):
            b = ffi.from_buffer(arr)
            keep.append(b)
            return ffi.cast(ctype, b)

        cols.row_cap = rows
        cols.rest_row = rest_row
        cols.ts_ns, cols.block_seq, cols.msg_seq = (p("int64_t*", a) for a in i64[:3])
        cols.msg_index, cols.packet_messages, cols.packet_bytes = (p("int32_t*", a) for a in i32[:3])
        cols.expiry, cols.time, cols.root_id = (p("int32_t*", a) for a in i32[3:6])
        cols.root_first_row = p("uint32_t*", first_row)
        cols.root_off = p("int32_t*", root_off)
        cols.root_data = p("uint8_t*", root_data)
        cols.expiry_valid = p("uint8_t*", valid[0])
        cols.time_valid = p("uint8_t*", valid[9])
        for k in range(4):
            cols.price[k] = p("int64_t*", i64[3 + k])
            cols.qty[k] = p("int64_t*", i64[7 + k])
            cols.price_valid[k] = p("uint8_t*", valid[1 + k])
            cols.qty_valid[k] = p("uint8_t*", valid[5 + k])
            cols.chr_valid[k] = p("uint8_t*", valid[10 + k])
            if self._dictionary:  # codes only: no string per row
                cols.chr_code[k] = p("int32_t*", chr_code[k])
            else:
                cols.chr_off[k] = p("int32_t*", chr_off[k])
                cols.chr_data[k] = p("uint8_t*", chr_data[k])
        cols.roots_only = 1 if self._dictionary else 0  # dictionary: one root string per distinct root
        if self._count:
            if self._packet_rows.shape[0] < n:
                self._packet_rows = np.empty(max(n, 2 * self._packet_rows.shape[0]), np.int32)
                self._packet_seq = np.empty(self._packet_rows.shape[0], np.int64)
            cols.packet_rows = p("int32_t*", self._packet_rows)
            cols.packet_seq = p("int64_t*", self._packet_seq)
            cols.root_rows = p("uint32_t*", root_rows)
        before = self._totals.copy()
        status = self._feed.decode(
            p("uint8_t*", data if data.size else np.zeros(1, np.uint8)), p("uint64_t*", offsets),
            p("uint32_t*", lengths), p("int64_t*", ts_ns), n, first_packet_index, cols,
            self._errs, self._max_errors, self._c_counters, self._res,
        )
        res = self._res
        if status == CAPACITY:
            raise MemoryError(f"decode_arrow stopped at packet {first_packet_index + int(res.packets_done)}")
        errors = self._feed.errors(self._errs, min(int(res.errors), self._max_errors))
        counters = self._feed.counters(self._totals - before)
        rest = int(res.rest_rows)
        m = int(res.rows) - rest
        nroots = int(res.roots)
        counted = {"packet_rows": self._packet_rows[:n], "packet_seq": self._packet_seq[:n],
                   "root_quotes": root_rows[:nroots]} if self._count else {}
        if m + rest == 0:
            return ArrowDecoded(None, errors, counters, **counted)
        if self._dictionary:
            names = pa.Array.from_buffers(pa.string(), nroots, [None, _buf(root_off), _buf(root_data)],
                                          null_count=0).to_pylist()
            roots = _RootDictionaries(names, root_map)
        else:
            names = pa.Array.from_buffers(pa.string(), m, [None, _buf(root_off), _buf(root_data)],
                                          null_count=0).take(pa.array(first_row[:nroots])).to_pylist()
            roots = None
        batch = self._batch(bufs, 0, m, names, root_map, roots) if m else None
        other = self._batch(bufs, rest_row, rest, names, root_map, roots) if rest else None
        if self._count:
            counted["root_underlying"] = roots.underlying_of_roots()
        return ArrowDecoded(batch, errors, counters, other, **counted)

    def _batch(self, bufs: tuple, lo: int, m: int, names: list[str], root_map: dict[str, str],
               roots: "_RootDictionaries | None") -> pa.RecordBatch:
        """The batch of rows ``lo .. lo + m`` of the buffers (``lo`` a multiple of 8: a
        validity bitmap is then sliced at a whole byte), wrapped without a copy."""
        i64, i32, _, valid, chr_off, chr_data, root_off, root_data, chr_code, under_idx, _ = bufs
        rows = slice(lo, lo + m)
        v = valid[:, lo // 8:]

        def fixed(t: pa.DataType, values: np.ndarray, bits: np.ndarray | None = None) -> pa.Array:
            return pa.Array.from_buffers(t, m, [None if bits is None else _buf(bits), _buf(values[rows])],
                                         null_count=0 if bits is None else -1)

        def string(bits: np.ndarray | None, off: np.ndarray, d: np.ndarray) -> pa.Array:
            return pa.Array.from_buffers(pa.string(), m, [None if bits is None else _buf(bits), _buf(off), _buf(d)],
                                         null_count=0 if bits is None else -1)

        if roots is not None:
            chars = [pa.DictionaryArray.from_buffers(_DICT, m, [_buf(v[10 + k]), _buf(chr_code[k][rows])], _CHAR_DICT,
                                                     null_count=-1) for k in range(4)]
            root, underlying = roots.columns(i32[5][rows], under_idx[rows])
        else:
            root = string(None, root_off, root_data)
            chars = [string(v[10 + k], chr_off[k], chr_data[k]) for k in range(4)]
            under = pa.array([root_map.get(s) for s in names], pa.string())
            underlying = under.take(fixed(pa.int32(), i32[5]))
        i64t, i32t = pa.int64(), pa.int32()
        arrays = [
            fixed(i64t, i64[0]), fixed(i64t, i64[1]), fixed(i64t, i64[2]),
            fixed(i32t, i32[0]), fixed(i32t, i32[1]), fixed(i32t, i32[2]),
            chars[0], chars[1], chars[2],
            root, underlying,
            fixed(i32t, i32[3], v[0]),
            chars[3],
            fixed(i64t, i64[3], v[1]),  # strike_px
            fixed(i64t, i64[4], v[2]),  # bid_px
            fixed(i64t, i64[7], v[5]),  # bid_size
            fixed(i64t, i64[5], v[3]),  # offer_px
            fixed(i64t, i64[8], v[6]),  # offer_size
            fixed(i64t, i64[6], v[4]),  # premium_px
            fixed(i64t, i64[9], v[7]),  # volume
            fixed(i64t, i64[10], v[8]),  # open_interest
            fixed(i32t, i32[4], v[9]),  # time
        ]
        schema = TICK_FILE_DICT_SCHEMA if self._dictionary else TICK_FILE_SCHEMA
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _RootDictionaries:
    """root and underlying as dictionaries over one call's distinct roots (the decoder's
    root_id per row): no string per row, and the per-root work (the manifest lookups) once
    per call however many regions the call's rows are in. A root without an underlying is
    null."""

    def __init__(self, names: list[str], root_map: dict[str, str]) -> None:
        under = [root_map.get(n) for n in names]
        values = sorted({u for u in under if u is not None})
        pos = {u: i for i, u in enumerate(values)}
        self._names = pa.array(names, pa.string())
        self._values = pa.array(values, pa.string())
        self._per_root = np.array([pos.get(u, 0) if u is not None else 0 for u in under] or [0], np.int32)
        self._known = np.array([u is not None for u in under] or [True], np.uint8)
        self._all_known = bool(self._known.all())

    def underlying_of_roots(self) -> np.ndarray:
        """Per root id, its underlying's index in the dictionary (its length: none)."""
        return np.where(self._known.astype(bool), self._per_root, len(self._values))[:len(self._names)]

    def columns(self, ids: np.ndarray, out: np.ndarray) -> tuple[pa.DictionaryArray, pa.DictionaryArray]:
        """(root, underlying) for rows whose root ids are ``ids``; the underlying's indices
        are gathered into ``out`` (one pass, no temporary array per row); a validity bitmap
        is built only when some root has no underlying."""
        m = ids.shape[0]
        root = pa.DictionaryArray.from_buffers(_DICT, m, [None, _buf(ids)], self._names, null_count=0)
        idx = np.take(self._per_root, ids, out=out)
        validity = None if self._all_known else _buf(np.packbits(np.take(self._known, ids), bitorder="little"))
        indices = pa.Array.from_buffers(pa.int32(), m, [validity, _buf(idx)], null_count=-1 if validity else 0)
        return root, pa.DictionaryArray.from_arrays(indices, self._values)
