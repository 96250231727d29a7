"""The offline replay's feed side, run inside a Spark task: one day's capture files ->
the OPRA message records of one underlying bucket, in time order.

Per line the A and B files (each in rotation order) are merged into arrival order - capture
time, then A before B, then position: the order the replayer sends them in - and handed to
the feed handler's own C rules (``native/include/omdp/feed_offline.h``): the pre-decode
duplicate check by block sequence, the decode, the per-message arbitration, routing by
root with the routing table the live pipeline builds (``feedhandlers.routing``). Only the
accepted messages of the task's bucket (the engine index of the routing table) are kept;
the lines are then merged by capture time (stable: line order within a tick), which is the
order one feed handler hands them on in a fused run.

A file that cannot be read is reported (``ReplayProblem``) and the line goes on with the
files that can: a line whose A file is corrupt is replayed from its B copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from feedhandlers.captures import PcapError, read_capture
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib

COUNT_NAMES: tuple[str, ...] = tuple(name for name, _ in ffi.typeof("omdp_fh_offline_counts_t").fields)
"""The per-line counters of ``omdp_fh_offline_counts_t`` (``packets`` is two: A and B)."""


@dataclass(frozen=True)
class LineFiles:
    """The capture files of one line: A and B copies, each in rotation order."""

    line: int
    a: tuple[str, ...] = ()
    b: tuple[str, ...] = ()


@dataclass(frozen=True)
class Routes:
    """The routing table as parallel lists (``feedhandlers.routing.RoutingTable``'s fields)."""

    engines: int
    roots: tuple[str, ...]
    underlying_ids: tuple[int, ...]
    root_engines: tuple[int, ...]


@dataclass
class BucketFeed:
    """What one task decoded: its bucket's records in time order and how every line went."""

    records: np.ndarray                    # OPRA_MSG_DTYPE
    line_counts: dict[int, dict[str, int]]
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (path, action, error)
    files_decoded: int = 0


class OfflineFeedHandler:
    """``omdp_fh_offline_*``: the feed handler's arbitration, decode and routing over files."""

    def __init__(self, routes: Routes, default_engine: int = 0) -> None:
        n = len(routes.roots)
        arr = ffi.new("omdp_fh_route_t[]", max(n, 1))
        for i, (root, uid, eng) in enumerate(zip(routes.roots, routes.underlying_ids, routes.root_engines)):
            raw = root.encode("ascii")
            ffi.memmove(arr[i].root, raw, len(raw))
            arr[i].underlying_id = uid
            arr[i].engine = eng
        err = ffi.new("char[256]")
        ptr = lib.omdp_fh_offline_new(arr, n, routes.engines, default_engine, err, 256)
        if ptr == ffi.NULL:
            raise ValueError(f"routing table: {ffi.string(err).decode(errors='replace')}")
        self._ptr = ffi.gc(ptr, lib.omdp_fh_offline_free)

    def line(self, line: int, buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, copies: np.ndarray,
             ts_ns: np.ndarray, want_engine: int | None) -> np.ndarray:
        """Arbitrate, decode and route one line's packets (arrival order); return the accepted
        records of ``want_engine`` (None: every engine's)."""
        n = len(offsets)
        offsets = np.ascontiguousarray(offsets, dtype=np.uint64)
        lengths = np.ascontiguousarray(lengths, dtype=np.uint32)
        copies = np.ascontiguousarray(copies, dtype=np.uint8)
        ts_ns = np.ascontiguousarray(ts_ns, dtype=np.int64)
        # room for about a packet's bytes / 16 messages, at most 2^19 (128 MB) per call
        cap = min(int(lengths.sum()) // 16 + 1, 1 << 19) + int(lib.OMDP_OPRA_MAX_MESSAGES)
        want = lib.OMDP_FH_OFFLINE_ALL if want_engine is None else int(want_engine)
        parts = []
        n_out = ffi.new("uint64_t *")
        done = 0
        buf_c = ffi.from_buffer("uint8_t[]", buf)
        while True:
            out = np.empty(cap, dtype=OPRA_MSG_DTYPE)
            engines = np.empty(cap, dtype=np.uint16)
            n_out[0] = 0
            used = lib.omdp_fh_offline_line(
                self._ptr, line, buf_c, len(buf),
                ffi.from_buffer("uint64_t[]", offsets[done:]), ffi.from_buffer("uint32_t[]", lengths[done:]),
                ffi.from_buffer("uint8_t[]", copies[done:]), ffi.from_buffer("int64_t[]", ts_ns[done:]),
                n - done, want, ffi.from_buffer("omdp_opra_msg_t[]", out), ffi.from_buffer("uint16_t[]", engines),
                cap, n_out)
            if used < 0:
                raise ValueError(f"line {line}: outside 1..{lib.OMDP_FH_MAX_LINE}")
            kept = int(n_out[0])
            parts.append(out[:kept] if kept * 2 > cap else out[:kept].copy())
            done += used
            if done >= n:
                break
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def counts(self, line: int) -> dict[str, int]:
        """The line's counters so far (``packets`` split into ``packets_a``/``packets_b``)."""
        c = ffi.new("omdp_fh_offline_counts_t *")
        lib.omdp_fh_offline_line_counts(self._ptr, line, c)
        out = {name: int(getattr(c, name)) for name in COUNT_NAMES if name != "packets"}
        out["packets_a"], out["packets_b"] = int(c.packets[0]), int(c.packets[1])
        return out


def _read_copy(paths: tuple[str, ...], copy: int, problems: list[tuple[str, str, str]]):
    """The packets of one copy's files, concatenated: (buf, offsets, lengths, ts, copy, pos)."""
    bufs, offs, lens, ts = [], [], [], []
    base = 0
    for path in paths:
        try:
            cap = read_capture(path)
        except (PcapError, OSError, ValueError) as exc:
            problems.append((path, "skipped", str(exc)))
            continue
        if cap.meta.get("truncated"):
            problems.append((path, "partly skipped",
                             f"{cap.meta['truncated_tail'].describe()}; the packets before it were read"))
        buf, o, ln = cap.contiguous()
        bufs.append(np.asarray(buf, dtype=np.uint8))
        offs.append(o.astype(np.uint64) + base)
        lens.append(ln.astype(np.uint32))
        ts.append(cap.ts_ns.astype(np.int64))
        base += len(buf)
    if not bufs:
        return None
    n = sum(len(o) for o in offs)
    return (np.concatenate(bufs) if len(bufs) > 1 else bufs[0], np.concatenate(offs), np.concatenate(lens),
            np.concatenate(ts), np.full(n, copy, dtype=np.uint8), np.arange(n, dtype=np.int64))


def merge_copies(a, b):
    """A and B packets in arrival order: capture time, then A before B, then position."""
    if a is None or b is None:
        return a if b is None else b
    buf = np.concatenate([a[0], b[0]])
    offs = np.concatenate([a[1], b[1] + np.uint64(len(a[0]))])
    lens, ts, copies, pos = (np.concatenate([a[k], b[k]]) for k in (2, 3, 4, 5))
    order = np.lexsort((pos, copies, ts))
    return buf, offs[order], lens[order], ts[order], copies[order], pos[order]


def decode_bucket(lines: list[LineFiles], routes: Routes, bucket: int | None) -> BucketFeed:
    """Every line of a day through the feed handler's rules; the records of ``bucket`` (None:
    all), merged across lines by capture time."""
    fh = OfflineFeedHandler(routes)
    parts: list[np.ndarray] = []
    problems: list[tuple[str, str, str]] = []
    counts: dict[int, dict[str, int]] = {}
    files = 0
    for lf in lines:
        a = _read_copy(lf.a, 0, problems)
        b = _read_copy(lf.b, 1, problems)
        files += len(lf.a) + len(lf.b)
        merged = merge_copies(a, b)
        if merged is None:
            continue
        buf, offs, lens, ts, copies, _ = merged
        parts.append(fh.line(lf.line, buf, offs, lens, copies, ts, bucket))
        counts[lf.line] = fh.counts(lf.line)
    records = np.concatenate(parts) if parts else np.zeros(0, OPRA_MSG_DTYPE)
    if len(parts) > 1:
        order = np.argsort(records["hdr"]["stamps"]["fh_in"], kind="stable")
        records = records[order]
    return BucketFeed(records, counts, problems, files)
