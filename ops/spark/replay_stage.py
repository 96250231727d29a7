"""The staged records between the replay's two stages (docs/analytics.md "Replay").

The day x line decode stage (``replay_feed.decode_line``) writes, per underlying bucket,
the accepted records of its line in arrival order to
``replay/date=D/_stage/b<bucket>/line<NN>.stage`` (raw STAGE_DTYPE records, appended a
chunk at a time); the day x bucket engine stage (``read_bucket``) maps its bucket's file of
every line and merges them in time order - capture time, then line, then the line's own
order: the order the live engines see - expanding them a chunk at a time in the same C
pass (``StagedBucket.merged``).

A record is staged in the C ``omdp_fh_staged_t`` (``native/include/omdp/feed_stage.h``,
128 bytes: the fields of the 256-byte OPRA record that the engine, the replay's tables and
the reconciliation read), so a day stages half the bytes of its records. Packing and
expanding are one C pass each, with the split by bucket folded in as a gather order and
the merge by time into the expanding (numpy's field-by-field copies of structured arrays cost 30 ns per field per
record: more than decoding).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from feedhandlers.opra_record import NO_UNDERLYING, OPRA_MSG_DTYPE
from omdp.native import ffi, lib

STAGE_DIR = "_stage"

STAGE_DTYPE = np.dtype(
    [("ts_ns", "<i8"), ("block_seq", "<u8"), ("msg_seq", "<u8"), ("strike_px", "<i8"), ("bid_px", "<i8"),
     ("offer_px", "<i8"), ("premium_px", "<i8"), ("best_bid_px", "<i8"), ("best_offer_px", "<i8"),
     ("flags", "<u4"), ("time", "<u4"), ("expiry", "<u4"), ("underlying_id", "<u4"), ("volume", "<u4"),
     ("bid_size", "<u4"), ("offer_size", "<u4"), ("best_bid_size", "<u4"), ("best_offer_size", "<u4"),
     ("line", "<u2"), ("index", "<u2"), ("category", "u1"), ("msg_type", "u1"), ("participant", "u1"),
     ("put_call", "u1"), ("bbo_ind", "u1"), ("best_bid_part", "u1"), ("best_offer_part", "u1"), ("session", "u1"),
     ("root_len", "u1"), ("root", "S6"), ("reserved", "u1")]
)
"""``omdp_fh_staged_t`` (feed_stage.h), 128 bytes."""


def _order(order: np.ndarray | None):
    """The C view of a gather order (NULL: none) and the array that holds it."""
    if order is None:
        return ffi.NULL, None
    o = np.ascontiguousarray(order, dtype=np.uint64)
    return ffi.cast("const uint64_t *", ffi.from_buffer(o)), o


def pack(records: np.ndarray, order: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """OPRA records (gathered by ``order`` when given) -> STAGE_DTYPE, into ``out`` (a
    reused buffer, at least as long) when given. Returns the staged records."""
    records = np.ascontiguousarray(records)
    n = len(records) if order is None else len(order)
    if out is None:
        out = np.empty(n, STAGE_DTYPE)
    elif out.dtype != STAGE_DTYPE or len(out) < n or not out.flags.c_contiguous:
        raise ValueError(f"pack: out must be a contiguous staged record array of at least {n}")
    optr, _keep = _order(order)  # _keep holds the order array through the call
    rc = lib.omdp_fh_stage_pack(ffi.cast("const omdp_opra_msg_t *", ffi.from_buffer(records)), len(records), optr, n,
                                ffi.cast("omdp_fh_staged_t *", ffi.from_buffer(out)))
    if rc < 0:
        raise ValueError("omdp_fh_stage_pack: an order entry is out of range")
    return out[:n]


def bucket_dir(day_dir: str | Path, bucket: int) -> Path:
    """Where a bucket's staged files go."""
    return Path(day_dir) / STAGE_DIR / f"b{bucket:03d}"


def stage_path(day_dir: str | Path, bucket: int, line: int) -> Path:
    """A line's staged records of a bucket."""
    return bucket_dir(day_dir, bucket) / f"line{line:02d}.stage"


class BucketWriter:
    """One line's staged files, one per bucket, appended a chunk at a time. Every bucket
    gets a file, empty or not (a missing one is a lost task); each is written under a
    temporary name and renamed into place when the line is done, so a failed or retried
    task never leaves a part where the engine stage reads."""

    def __init__(self, day_dir: str | Path, line: int, buckets: int) -> None:
        self.line, self.buckets = line, buckets
        self._final = [stage_path(day_dir, b, line) for b in range(buckets)]
        self._tmp = [p.with_name(f".{p.name}.{os.getpid()}") for p in self._final]
        for p in self._final:
            p.parent.mkdir(parents=True, exist_ok=True)
        self._files = [open(p, "wb") for p in self._tmp]
        self._buf = np.empty(0, STAGE_DTYPE)  # reused: fresh pages for every chunk cost more than packing it

    def write(self, records: np.ndarray, engines: np.ndarray) -> None:
        """Stage a chunk of the line's records (arrival order) by their engines."""
        counts = np.bincount(engines, minlength=self.buckets)
        if len(counts) > self.buckets:
            raise ValueError(f"line {self.line}: a record routed to engine {len(counts) - 1} of {self.buckets}")
        if len(self._buf) < len(records):
            self._buf = np.empty(len(records), STAGE_DTYPE)
        staged = pack(records, np.argsort(engines, kind="stable"), out=self._buf)
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
        for tmp, final in zip(self._tmp, self._final):
            if exc_type is None:
                tmp.replace(final)
            else:
                tmp.unlink(missing_ok=True)


class StagedBucket:
    """A bucket's staged parts, one per line in line order, each mapped read-only from its
    file (no copy: a read into fresh memory cost a bucket 0.6 s of page faults and copying)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self.parts: list[np.ndarray] = []
        for p in paths:
            size = p.stat().st_size
            if size % STAGE_DTYPE.itemsize:
                raise ValueError(f"{p}: {size} bytes, not whole staged records of {STAGE_DTYPE.itemsize}")
            # an empty file cannot be mapped
            self.parts.append(np.memmap(p, STAGE_DTYPE, mode="r") if size else np.empty(0, STAGE_DTYPE))

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def merged(self, out: np.ndarray) -> Iterator[np.ndarray]:
        """Every part's records in time order (capture time, then line, then the line's
        order: what a stable sort of the parts by capture time gives), expanded to OPRA
        records into ``out`` (reused: each chunk is valid until the next is asked for), one
        C call per chunk. Raises ValueError naming a part that is not in time order."""
        if out.dtype != OPRA_MSG_DTYPE or not len(out) or not out.flags.c_contiguous:
            raise ValueError("merged: out must be a contiguous, non-empty OPRA record array")
        ptrs = ffi.new("const omdp_fh_staged_t *[]", [_staged_ptr(p) for p in self.parts])
        lens = ffi.new("uint64_t[]", [len(p) for p in self.parts])
        cursor = ffi.new("uint64_t[]", len(self.parts))
        dst = ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out))
        while True:
            n = lib.omdp_fh_stage_merge(ptrs, lens, len(self.parts), cursor, dst, len(out))
            if n == -2:
                bad = [str(path) for i, (path, p) in enumerate(zip(self.paths, self.parts))
                       if 0 < cursor[i] < len(p) and p["ts_ns"][cursor[i]] < p["ts_ns"][cursor[i] - 1]]
                raise ValueError(f"staged records out of time order: {', '.join(bad)}")
            if n < 0:
                raise ValueError("omdp_fh_stage_merge: bad arguments")
            if n == 0:
                return
            yield out[:n]


def read_bucket(day_dir: str | Path, bucket: int, lines: list[int]) -> StagedBucket:
    """The bucket's staged parts of every line, in line order (``StagedBucket.merged`` gives
    them in time order). Raises FileNotFoundError naming a missing part, ValueError for a
    part that is not whole records."""
    return StagedBucket([stage_path(day_dir, bucket, ln) for ln in sorted(lines)])

def _staged_ptr(staged: np.ndarray):
    """The C view of a staged array; the caller holds the array through the call."""
    if staged.dtype != STAGE_DTYPE or not staged.flags.c_contiguous:
        raise ValueError("expected a contiguous STAGE_DTYPE array")
    return ffi.cast("const omdp_fh_staged_t *", ffi.from_buffer(staged))


def quote_hits(staged: np.ndarray, strikes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Indices of the staged records whose strike is in ``strikes`` and whose quote key
    (``replay_score.quote_hash``) is in ``keys``: one C pass, where numpy gathered the
    records of every listed strike (half a bucket) to hash them."""
    strikes = np.ascontiguousarray(np.unique(strikes), dtype=np.int64)
    keys = np.ascontiguousarray(np.unique(keys), dtype=np.uint64)
    ptr = _staged_ptr(staged)
    out = np.empty(64, np.uint64)
    while True:
        n = lib.omdp_fh_stage_quote_hits(ptr, len(staged), ffi.cast("const int64_t *", ffi.from_buffer(strikes)),
                                         len(strikes), ffi.cast("const uint64_t *", ffi.from_buffer(keys)), len(keys),
                                         ffi.cast("uint64_t *", ffi.from_buffer(out)), len(out))
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


def underlying_counts(parts: list[np.ndarray]) -> UnderlyingCounts:
    """Messages, quotes and capture-time span per underlying over staged parts: one C pass
    per part (numpy's bincounts and ufunc.at over gathered fields cost half a second a
    bucket)."""
    top = max((lib.omdp_fh_stage_max_underlying(_staged_ptr(p), len(p)) for p in parts), default=-1)
    if top >= DENSE_IDS:
        staged = np.concatenate(parts)
        ids, inv = np.unique(staged["underlying_id"], return_inverse=True)
        first = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(first, inv, staged["ts_ns"])
        np.maximum.at(last, inv, staged["ts_ns"])
        return UnderlyingCounts(ids, np.bincount(inv, minlength=len(ids)),
                                np.bincount(inv, weights=staged["category"] == ord("k"),
                                            minlength=len(ids)).astype(np.int64), first, last)
    slots = [np.zeros(top + 2, np.int64), np.zeros(top + 2, np.int64),   # the last slot: NO_UNDERLYING
             np.full(top + 2, np.iinfo(np.int64).max), np.full(top + 2, np.iinfo(np.int64).min)]
    ptrs = [ffi.cast("int64_t *", ffi.from_buffer(a)) for a in slots]
    for p in parts:
        if lib.omdp_fh_stage_underlying_counts(_staged_ptr(p), len(p), top + 2, *ptrs) < 0:
            raise ValueError("omdp_fh_stage_underlying_counts: bad arguments")
    present = slots[0] > 0
    ids = np.flatnonzero(present).astype(np.uint32)
    if present[-1]:
        ids[-1] = NO_UNDERLYING
    return UnderlyingCounts(ids, *(a[present] for a in slots))
