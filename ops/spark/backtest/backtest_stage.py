"""The staged records between the backtest's two stages (docs/analytics.md "Backtest").

The day x line decode stage (``backtest_feed.decode_line``) writes, per underlying bucket,
the accepted records of its line in arrival order to
``backtest/date=D/_stage/b<bucket>/line<NN>.stage`` (raw STAGE_DTYPE records, appended a
chunk at a time) and, once per line, the line's series and appendage tables
(``_stage/line<NN>.series``, ``.extra``) that the records index; the day x bucket engine
stage (``read_bucket``) maps its bucket's file of every line with the lines' tables and
merges them in time order - capture time, then line, then the line's own order: the order
the live engines see - expanding them a chunk at a time in the same C pass
(``StagedBucket.merged``).

A record is staged in the C ``omdp_fh_staged_t`` (``native/include/omdp/feed_stage.h``,
64 bytes: what the engine, the backtest's tables and the reconciliation read of the 256-byte
OPRA record, the series - root, expiry, strike, put/call, underlying - as an index into
the line's series table, the rare best bid/offer appendage as an index into its appendage
table), so a day stages a quarter of the bytes of its records (half of the earlier
128-byte form: the staging writes were half of a decode task). Packing and expanding are
one C pass each, with the split by bucket folded in as a gather order and the merge by
time into the expanding (numpy's field-by-field copies of structured arrays cost 30 ns per
field per record: more than decoding).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from feedhandlers.opra_record import NO_UNDERLYING, OPRA_MSG_DTYPE
from omdp.c_layout import c_dtype
from omdp.native import ffi, lib

STAGE_DIR = "_stage"

STAGE_DTYPE = c_dtype("omdp_fh_staged_t")
"""``omdp_fh_staged_t`` (feed_stage.h), 64 bytes."""

SERIES_DTYPE = c_dtype("omdp_fh_stage_series_t")
"""``omdp_fh_stage_series_t``, 24 bytes: a line's series table entry."""

EXTRA_DTYPE = c_dtype("omdp_fh_stage_extra_t")
"""``omdp_fh_stage_extra_t``, 32 bytes: a line's appendage table entry."""

NO_EXTRA = int(lib.OMDP_FH_STAGE_NO_EXTRA)


class StageTables:
    """A line's series and appendage tables, built in C while its records are packed."""

    def __init__(self) -> None:
        ptr = lib.omdp_fh_stage_tables_new()
        if ptr == ffi.NULL:
            raise MemoryError("omdp_fh_stage_tables_new: out of memory")
        self._ptr = ffi.gc(ptr, lib.omdp_fh_stage_tables_free)

    def _table(self, fn, ctype: str, dtype: np.dtype) -> np.ndarray:
        n = ffi.new("uint64_t *")
        ptr = fn(self._ptr, n)
        if not n[0]:
            return np.zeros(0, dtype)
        return np.frombuffer(ffi.buffer(ffi.cast(ctype, ptr), int(n[0]) * dtype.itemsize), dtype).copy()

    def series(self) -> np.ndarray:
        """The series so far (SERIES_DTYPE, a copy), indexed by the records' ``series``."""
        return self._table(lib.omdp_fh_stage_tables_series, "omdp_fh_stage_series_t *", SERIES_DTYPE)

    def extras(self) -> np.ndarray:
        """The appendages so far (EXTRA_DTYPE, a copy), indexed by the records' ``extra``."""
        return self._table(lib.omdp_fh_stage_tables_extras, "omdp_fh_stage_extra_t *", EXTRA_DTYPE)

    def routes(self) -> np.ndarray:
        """Per series (uint32, a copy): the route word it was staged with, its bucket in the
        low 24 bits (``NO_ROUTE``: entered by ``pack``, which routes nothing)."""
        return self._table(lib.omdp_fh_stage_tables_routes, "uint32_t *", np.dtype("<u4"))


NO_ROUTE = int(lib.OMDP_FH_STAGE_NO_ROUTE)


@dataclass(frozen=True)
class BucketSizes:
    """What each bucket's engine must hold for a line: its series, and its (underlying,
    expiry) groups - the engine's two tables. Summed over a day's lines
    (``backtest_job.bucket_needs``) they bound what a bucket's engine meets (an underlying
    quoted on two lines counts its groups twice)."""

    series: tuple[int, ...]
    groups: tuple[int, ...]

    @classmethod
    def of(cls, series: np.ndarray, routes: np.ndarray, buckets: int) -> "BucketSizes":
        """From a line's series table and their routes; a series with no route (``pack``'s)
        counts in every bucket."""
        routed = routes != NO_ROUTE
        bucket = (routes[routed] & 0xFFFFFF).astype(np.int64)
        if len(bucket) and int(bucket.max()) >= buckets:
            raise ValueError(f"a series was staged to bucket {int(bucket.max())} of {buckets}")
        group = (series["underlying_id"].astype(np.uint64) << np.uint64(32)) | series["expiry"].astype(np.uint64)
        distinct, number = np.unique(group[routed], return_inverse=True)
        pairs = np.unique(bucket * len(distinct) + number)     # each (bucket, group) once
        n_series = np.bincount(bucket, minlength=buckets) + int((~routed).sum())
        n_groups = np.bincount(pairs // max(1, len(distinct)), minlength=buckets) + len(np.unique(group[~routed]))
        return cls(tuple(int(n) for n in n_series), tuple(int(n) for n in n_groups))


def _order(order: np.ndarray | None):
    """The C view of a gather order (NULL: none) and the array that holds it."""
    if order is None:
        return ffi.NULL, None
    o = np.ascontiguousarray(order, dtype=np.uint64)
    return ffi.cast("const uint64_t *", ffi.from_buffer(o)), o


def pack(records: np.ndarray, tables: StageTables, order: np.ndarray | None = None,
         out: np.ndarray | None = None) -> np.ndarray:
    """OPRA records (gathered by ``order`` when given) -> STAGE_DTYPE, their series and
    appendages entered in ``tables``, into ``out`` (a reused buffer, at least as long)
    when given. Returns the staged records."""
    records = np.ascontiguousarray(records)
    n = len(records) if order is None else len(order)
    if out is None:
        out = np.empty(n, STAGE_DTYPE)
    elif out.dtype != STAGE_DTYPE or len(out) < n or not out.flags.c_contiguous:
        raise ValueError(f"pack: out must be a contiguous staged record array of at least {n}")
    optr, _keep = _order(order)  # _keep holds the order array through the call
    rc = lib.omdp_fh_stage_pack(tables._ptr, ffi.cast("const omdp_opra_msg_t *", ffi.from_buffer(records)),
                                len(records), optr, n, ffi.cast("omdp_fh_staged_t *", ffi.from_buffer(out)))
    if rc == -3:
        raise MemoryError("omdp_fh_stage_pack: the line's series table cannot grow")
    if rc < 0:
        raise ValueError("omdp_fh_stage_pack: an order entry is out of range or a record's flags exceed a byte")
    return out[:n]


REGION_RECORDS = 16_384
"""Staged records per decode-stage C call, over all buckets (1 MB, reused, within a core's
L2 cache: with 4 MB, a task of one bucket spent 0.5-0.6 CPU-s appending a 30 s day's
regions against 0.18 with 1 MB)."""


def bucket_dir(day_dir: str | Path, bucket: int) -> Path:
    """Where a bucket's staged files go."""
    return Path(day_dir) / STAGE_DIR / f"b{bucket:03d}"


def stage_path(day_dir: str | Path, bucket: int, line: int) -> Path:
    """A line's staged records of a bucket."""
    return bucket_dir(day_dir, bucket) / f"line{line:02d}.stage"


def table_path(day_dir: str | Path, line: int, kind: str) -> Path:
    """A line's series (``kind`` "series") or appendage ("extra") table, shared by its
    parts of every bucket."""
    return Path(day_dir) / STAGE_DIR / f"line{line:02d}.{kind}"


def _replace_all(pairs: list[tuple[Path, Path]], ok: bool) -> None:
    for tmp, final in pairs:
        if ok:
            tmp.replace(final)
        else:
            tmp.unlink(missing_ok=True)


class BucketWriter:
    """One line's staged files, one per bucket, appended a chunk at a time, and the line's
    tables, written when it is done. Every bucket gets a file, empty or not (a missing one
    is a lost task); each is written under a temporary name and renamed into place when the
    line is done (the tables first), so a failed or retried task never leaves a part where
    the engine stage reads."""

    def __init__(self, day_dir: str | Path, line: int, buckets: int) -> None:
        self.day_dir, self.line, self.buckets = day_dir, line, buckets
        self._final = [stage_path(day_dir, b, line) for b in range(buckets)]
        self._tmp = [p.with_name(f".{p.name}.{os.getpid()}") for p in self._final]
        for p in self._final:
            p.parent.mkdir(parents=True, exist_ok=True)
        self._files = [open(p, "wb") for p in self._tmp]
        self.tables = StageTables()
        self._buf = np.empty(0, STAGE_DTYPE)  # reused: fresh pages for every chunk cost more than packing it
        self._regions = None
        self.sizes: BucketSizes | None = None   # set when the line is done

    def offline_stage(self):
        """The ``omdp_fh_offline_stage_t`` that packs into this writer's per-bucket regions
        (``REGION_RECORDS`` records in all, reused; ``flush`` writes and empties them)."""
        if self._regions is None:
            cap = max(REGION_RECORDS // self.buckets, 2 * int(lib.OMDP_OPRA_MAX_MESSAGES))
            self._region_buf = np.empty((self.buckets, cap), STAGE_DTYPE)
            self._regions = ffi.new("omdp_fh_stage_region_t[]", self.buckets)
            for b in range(self.buckets):
                self._regions[b].out = ffi.cast("omdp_fh_staged_t *", ffi.from_buffer(self._region_buf[b]))
                self._regions[b].cap = cap
            self._stage = ffi.new("omdp_fh_offline_stage_t *", {"tables": self.tables._ptr, "regions": self._regions,
                                                                "n_regions": self.buckets})
        return self._stage

    def flush(self) -> int:
        """Append every region's records to its bucket's file and empty it; returns how many."""
        total = 0
        for b, f in enumerate(self._files):
            n = int(self._regions[b].n)
            if n:
                f.write(memoryview(self._region_buf[b, :n]).cast("B"))
                self._regions[b].n = 0
                total += n
        return total

    def write(self, records: np.ndarray, engines: np.ndarray) -> None:
        """Stage a chunk of the line's records (arrival order) by their engines."""
        counts = np.bincount(engines, minlength=self.buckets)
        if len(counts) > self.buckets:
            raise ValueError(f"line {self.line}: a record routed to engine {len(counts) - 1} of {self.buckets}")
        if len(self._buf) < len(records):
            self._buf = np.empty(len(records), STAGE_DTYPE)
        order = None if self.buckets == 1 else np.argsort(engines, kind="stable")
        staged = pack(records, self.tables, order, out=self._buf)
        start = 0
        for b, f in enumerate(self._files):
            n = int(counts[b])
            if n:
                f.write(memoryview(staged[start:start + n]).cast("B"))
            start += n

    def __enter__(self) -> "BucketWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        for f in self._files:
            f.close()
        ok = exc_type is None
        tables: list[tuple[Path, Path]] = []
        if ok:
            series = self.tables.series()
            self.sizes = BucketSizes.of(series, self.tables.routes(), self.buckets)
            for kind, arr in (("series", series), ("extra", self.tables.extras())):
                final = table_path(self.day_dir, self.line, kind)
                tmp = final.with_name(f".{final.name}.{os.getpid()}")
                arr.tofile(tmp)
                tables.append((tmp, final))
        _replace_all(tables, ok)
        _replace_all(list(zip(self._tmp, self._final)), ok)


def _map(path: Path, dtype: np.dtype) -> np.ndarray:
    """A file of whole ``dtype`` records, mapped read-only (an empty one cannot be mapped).
    Raises ValueError naming a file that is not whole records."""
    size = path.stat().st_size
    if size % dtype.itemsize:
        raise ValueError(f"{path}: {size} bytes, not whole records of {dtype.itemsize}")
    return np.memmap(path, dtype, mode="r") if size else np.empty(0, dtype)


@dataclass
class StagedPart:
    """One line's part of a bucket with the line's tables."""

    line: int
    recs: np.ndarray       # STAGE_DTYPE, time order
    series: np.ndarray     # SERIES_DTYPE
    extras: np.ndarray     # EXTRA_DTYPE

    def __len__(self) -> int:
        return len(self.recs)

    def c(self):
        """The part as an ``omdp_fh_stage_part_t`` (the arrays must outlive its use)."""
        p = ffi.new("omdp_fh_stage_part_t *")
        _fill(p, self)
        return p

    def fields(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """line, msg_seq, root, expiry, strike_px, put_call and participant of the records
        at ``idx`` (their series looked up; an index past the table raises ValueError)."""
        r = self.recs[idx]
        if len(r) and int(r["series"].max()) >= len(self.series):
            raise ValueError(f"line {self.line}: a staged record's series is past the line's table")
        s = self.series[r["series"]]
        return {"line": np.full(len(r), self.line, np.int64), "msg_seq": r["msg_seq"], "root": s["root"],
                "expiry": s["expiry"], "strike_px": s["strike_px"], "put_call": s["put_call"],
                "participant": r["participant"]}


def _ptr(arr: np.ndarray, ctype: str):
    return ffi.cast(ctype, ffi.from_buffer(arr)) if len(arr) else ffi.NULL


def _fill(c, part: StagedPart) -> None:
    for arr, dtype in ((part.recs, STAGE_DTYPE), (part.series, SERIES_DTYPE), (part.extras, EXTRA_DTYPE)):
        if arr.dtype != dtype or not arr.flags.c_contiguous:
            raise ValueError(f"line {part.line}: expected a contiguous {dtype.itemsize}-byte record array")
    c.recs, c.n = _ptr(part.recs, "const omdp_fh_staged_t *"), len(part.recs)
    c.series, c.n_series = _ptr(part.series, "const omdp_fh_stage_series_t *"), len(part.series)
    c.extras, c.n_extras = _ptr(part.extras, "const omdp_fh_stage_extra_t *"), len(part.extras)
    c.line = part.line


class StagedBucket:
    """A bucket's staged parts, one per line in line order, each mapped read-only from its
    file with its line's tables (no copy: a read into fresh memory cost a bucket 0.6 s of
    page faults and copying)."""

    def __init__(self, parts: list[StagedPart], paths: list[Path]) -> None:
        self.parts, self.paths = parts, paths

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def merged(self, out: np.ndarray, counts: "CountSlots | None" = None) -> Iterator[np.ndarray]:
        """Every part's records in time order (capture time, then line, then the line's
        order: what a stable sort of the parts by capture time gives), expanded to OPRA
        records into ``out`` (reused: each chunk is valid until the next is asked for), one
        C call per chunk, each record also counted into ``counts`` when given. Raises
        ValueError naming a part that is not in time order, whose records index past its
        line's tables, or (with counts) whose underlying has no slot."""
        if out.dtype != OPRA_MSG_DTYPE or not len(out) or not out.flags.c_contiguous:
            raise ValueError("merged: out must be a contiguous, non-empty OPRA record array")
        parts = ffi.new("omdp_fh_stage_part_t[]", max(1, len(self.parts)))
        for i, p in enumerate(self.parts):
            _fill(parts[i], p)
        cursor = ffi.new("uint64_t[]", max(1, len(self.parts)))
        dst = ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out))
        cc = counts.c if counts is not None else ffi.NULL
        while True:
            n = lib.omdp_fh_stage_merge_counted(parts, len(self.parts), cursor, dst, len(out), cc)
            if n == -4:
                bad = [str(path) for i, (path, p) in enumerate(zip(self.paths, self.parts)) if cursor[i] < len(p)]
                raise ValueError(f"a staged record's underlying is past the counts' table: one of {', '.join(bad)}")
            if n == -2:
                bad = [str(path) for i, (path, p) in enumerate(zip(self.paths, self.parts))
                       if 0 < cursor[i] < len(p) and p.recs["ts_ns"][cursor[i]] < p.recs["ts_ns"][cursor[i] - 1]]
                raise ValueError(f"staged records out of time order: {', '.join(bad)}")
            if n == -3:
                bad = [str(path) for i, (path, p) in enumerate(zip(self.paths, self.parts)) if cursor[i] < len(p)
                       and lib.omdp_fh_stage_unpack_one(ffi.addressof(parts[i]), cursor[i], dst) != 0]
                raise ValueError(f"staged records index past their line's tables: {', '.join(bad)}")
            if n < 0:
                raise ValueError("omdp_fh_stage_merge: bad arguments")
            if n == 0:
                return
            yield out[:n]


def read_bucket(day_dir: str | Path, bucket: int, lines: list[int]) -> StagedBucket:
    """The bucket's staged parts of every line, in line order, with the lines' tables
    (``StagedBucket.merged`` gives them in time order). Raises FileNotFoundError naming a
    missing file, ValueError for one that is not whole records."""
    parts, paths = [], []
    for ln in sorted(lines):
        path = stage_path(day_dir, bucket, ln)
        parts.append(StagedPart(ln, _map(path, STAGE_DTYPE), _map(table_path(day_dir, ln, "series"), SERIES_DTYPE),
                                _map(table_path(day_dir, ln, "extra"), EXTRA_DTYPE)))
        paths.append(path)
    return StagedBucket(parts, paths)


def quote_hits(part: StagedPart, strikes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Indices of the part's records whose strike is in ``strikes`` and whose quote key
    (``backtest_score.quote_hash``) is in ``keys``: one C pass, the strike filter once per
    series of the line."""
    strikes = np.ascontiguousarray(np.unique(strikes), dtype=np.int64)
    keys = np.ascontiguousarray(np.unique(keys), dtype=np.uint64)
    c = part.c()
    out = np.empty(64, np.uint64)
    while True:
        n = lib.omdp_fh_stage_quote_hits(c, _ptr(strikes, "const int64_t *"), len(strikes),
                                         _ptr(keys, "const uint64_t *"), len(keys),
                                         ffi.cast("uint64_t *", ffi.from_buffer(out)), len(out))
        if n == -3:
            raise ValueError(f"line {part.line}: a staged record's series is past the line's table")
        if n < 0:
            raise ValueError("omdp_fh_stage_quote_hits: bad arguments")
        if n <= len(out):
            return out[:n].astype(np.int64)
        out = np.empty(n, np.uint64)


DENSE_IDS = 1 << 22
"""Underlying ids below this are counted in C through a dense table (routing gives
0..N-1); others through a sort."""


@dataclass(frozen=True)
class UnderlyingCounts:
    """Per underlying among a bucket's records (ids ascending, NO_UNDERLYING last)."""

    ids: np.ndarray          # uint32
    messages: np.ndarray     # int64 each
    quotes: np.ndarray
    first_ns: np.ndarray
    last_ns: np.ndarray


class CountSlots:
    """The dense per-underlying table (``omdp_fh_stage_counts_t``) a bucket's counts are
    added into: by ``StagedBucket.merged`` as it expands the records (no second pass over
    them), or a part at a time by ``underlying_counts``. ``for_parts`` gives None when an
    underlying id is too large for a dense table."""

    def __init__(self, top: int) -> None:
        n = top + 2                                                    # the last slot: NO_UNDERLYING
        self.arrays = [np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, np.iinfo(np.int64).max),
                       np.full(n, np.iinfo(np.int64).min)]
        self.c = ffi.new("omdp_fh_stage_counts_t *", {"n_slots": n})
        self.c.messages, self.c.quotes, self.c.first_ns, self.c.last_ns = (
            ffi.cast("int64_t *", ffi.from_buffer(a)) for a in self.arrays)

    @classmethod
    def for_parts(cls, parts: list[StagedPart]) -> "CountSlots | None":
        top = max((lib.omdp_fh_stage_max_underlying(p.c()) for p in parts), default=-1)
        return None if top >= DENSE_IDS else cls(top)

    def result(self) -> UnderlyingCounts:
        """The underlyings counted so far."""
        present = self.arrays[0] > 0
        ids = np.flatnonzero(present).astype(np.uint32)
        if present[-1]:
            ids[-1] = NO_UNDERLYING
        return UnderlyingCounts(ids, *(a[present] for a in self.arrays))


def underlying_counts(parts: list[StagedPart]) -> UnderlyingCounts:
    """Messages, quotes and capture-time span per underlying over staged parts: one C pass
    per part (numpy's bincounts and ufunc.at over gathered fields cost half a second a
    bucket), or, for ids too large for a dense table, a sort. The engine task takes them
    from its merge instead (``StagedBucket.merged`` with ``CountSlots``)."""
    slots = CountSlots.for_parts(parts)
    if slots is None:
        for p in parts:
            if len(p) and int(p.recs["series"].max()) >= len(p.series):
                raise ValueError(f"line {p.line}: a staged record's series is past the line's table")
        uid = np.concatenate([p.series["underlying_id"][p.recs["series"]] for p in parts])
        ts = np.concatenate([p.recs["ts_ns"] for p in parts])
        cat = np.concatenate([p.recs["category"] for p in parts])
        ids, inv = np.unique(uid, return_inverse=True)
        first = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(first, inv, ts)
        np.maximum.at(last, inv, ts)
        return UnderlyingCounts(ids, np.bincount(inv, minlength=len(ids)),
                                np.bincount(inv, weights=cat == ord("k"), minlength=len(ids)).astype(np.int64),
                                first, last)
    c = slots.c
    for p in parts:
        rc = lib.omdp_fh_stage_underlying_counts(p.c(), c.n_slots, c.messages, c.quotes, c.first_ns, c.last_ns)
        if rc == -3:
            raise ValueError(f"line {p.line}: a staged record's series is past the line's table")
        if rc < 0:
            raise ValueError("omdp_fh_stage_underlying_counts: bad arguments")
    return slots.result()
