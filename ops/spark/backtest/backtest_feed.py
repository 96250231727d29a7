"""The backtest's feed side, run inside a day x line Spark task: one line's capture
files -> its accepted OPRA message records, staged per underlying bucket.

The packets of the line's A and B files (memory-mapped, read in place) are put in arrival
order - capture time, then A before B, then position: the order the replayer sends them
in - and handed to the feed handler's own C rules (``native/include/omdp/feed_offline.h``)
in one pass: the pre-decode duplicate check by block sequence, the decode, the per-message
arbitration, routing by root with the routing table the live pipeline builds
(``feedhandlers.routing``). Arbitration is per line, so a line's two copies are all it
needs. The accepted records are packed in C straight into their engine's (underlying bucket's) region
in the staged form (``backtest_stage``) for the day x bucket engine tasks, which merge every line's part in time
order.

A file that cannot be read is reported (path, action, error) and the line goes on with the
files that can: a line whose A file is corrupt is read from its B copy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from feedhandlers.captures import PcapError, read_capture
from feedhandlers.feed_handler import FEED_FORMATS
from feedhandlers.opra_obi import feed_format
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.c_layout import c_dtype
from omdp.native import ffi, lib
from ops.spark.backtest.backtest_stage import BucketSizes, BucketWriter

_RAW = np.dtype((np.void, OPRA_MSG_DTYPE.itemsize))
"""A record as 256 opaque bytes: numpy copies, gathers and joins these with memcpy, where
the structured dtype goes field by field."""


PKT_DTYPE = c_dtype("omdp_fh_offline_pkt_t")
"""``omdp_fh_offline_pkt_t`` (feed_offline.h), 24 bytes."""

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


ROUTE_DTYPE = c_dtype("omdp_fh_route_t")
"""``omdp_fh_route_t`` (feed_handler.h), 16 bytes."""


def route_array(routes: Routes) -> np.ndarray:
    """The routing table as ``omdp_fh_route_t`` entries (one zeroed entry when empty), built in
    numpy: a cffi field assignment per root cost a decode task 6 ms for the day's 8,500
    roots. Raises ValueError naming a root that is not ASCII or is too long."""
    n = len(routes.roots)
    arr = np.zeros(max(n, 1), ROUTE_DTYPE)
    if not n:
        return arr
    width = ROUTE_DTYPE["root"].itemsize
    bad = next((r for r in routes.roots if len(r) > width or not r.isascii()), None)
    if bad is not None:
        raise ValueError(f"routing table: root {bad!r} is not ASCII of at most {width} characters")
    arr["root"][:n] = routes.roots
    arr["underlying_id"][:n] = routes.underlying_ids
    arr["engine"][:n] = routes.root_engines
    return arr


class OfflineFeedHandler:
    """``omdp_fh_offline_*``: the feed handler's arbitration, decode and routing over files."""

    def __init__(self, routes: Routes, default_engine: int = 0, feed_format: str = "opra-fast-v2") -> None:
        """``feed_format``: the packets' format (a capture manifest's ``feed_format``)."""
        arr = route_array(routes)
        err = ffi.new("char[256]")
        ptr = lib.omdp_fh_offline_new(ffi.cast("omdp_fh_route_t *", ffi.from_buffer(arr)), len(routes.roots), routes.engines,
                                      default_engine, err, 256)
        if ptr == ffi.NULL:
            raise ValueError(f"routing table: {ffi.string(err).decode(errors='replace')}")
        self._ptr = ffi.gc(ptr, lib.omdp_fh_offline_free)
        lib.omdp_fh_offline_set_format(self._ptr, FEED_FORMATS[feed_format])

    @staticmethod
    def _sources(sources: list[np.ndarray]):
        srcs = ffi.new("omdp_fh_offline_src_t[]", max(1, len(sources)))
        keep = [ffi.from_buffer("uint8_t[]", s) for s in sources]
        for k, (s, c) in enumerate(zip(sources, keep)):
            srcs[k].buf = c
            srcs[k].len = len(s)
        return srcs, keep

    def run(self, sources: list[np.ndarray], pkts: np.ndarray, want_engine: int | None) -> np.ndarray:
        """Arbitrate, decode and route ``pkts`` (PKT_DTYPE, arrival order) read from
        ``sources``; return the accepted records of ``want_engine`` (None: every engine's),
        in packet order."""
        if pkts.dtype != PKT_DTYPE or not pkts.flags.c_contiguous:
            raise TypeError("pkts must be a contiguous PKT_DTYPE array")
        srcs, _keep = self._sources(sources)
        n = len(pkts)
        # One output array for all of it, sized by the packets' header counts (an upper bound
        # of what is accepted): only the pages written are ever touched, and nothing is joined
        # or copied afterwards. Fresh pages cost the kernel a clear each (most of this task's
        # time when records went through several arrays).
        cap = max(header_messages(sources, pkts), 1) + int(lib.OMDP_OPRA_MAX_MESSAGES)
        want = lib.OMDP_FH_OFFLINE_ALL if want_engine is None else int(want_engine)
        parts = []
        n_out = ffi.new("uint64_t *")
        done = 0
        engines = np.empty(cap, dtype=np.uint16)
        while done < n:
            out = np.empty(cap, dtype=OPRA_MSG_DTYPE)
            n_out[0] = 0
            used = lib.omdp_fh_offline_run(
                self._ptr, srcs, len(sources), ffi.cast("omdp_fh_offline_pkt_t *", pkts[done:].ctypes.data),
                n - done, want, ffi.from_buffer("omdp_opra_msg_t[]", out), ffi.from_buffer("uint16_t[]", engines),
                cap, n_out)
            if used < 0:
                raise ValueError("omdp_fh_offline_run: bad argument")
            parts.append(out[: int(n_out[0])])
            done += used
        if not parts:
            return np.zeros(0, OPRA_MSG_DTYPE)
        return parts[0] if len(parts) == 1 else join(parts)

    def stage(self, sources: list[np.ndarray], pkts: np.ndarray, writer: BucketWriter) -> int:
        """``run``'s rules over every engine, each accepted message packed in C straight into
        its bucket's region of ``writer`` (no full record is written, no split afterwards),
        the regions appended to the bucket files whenever one fills. Returns the messages
        staged."""
        if pkts.dtype != PKT_DTYPE or not pkts.flags.c_contiguous:
            raise TypeError("pkts must be a contiguous PKT_DTYPE array")
        srcs, _keep = self._sources(sources)
        st = writer.offline_stage()
        n, done, messages = len(pkts), 0, 0
        while done < n:
            used = lib.omdp_fh_offline_stage(self._ptr, srcs, len(sources),
                                             ffi.cast("omdp_fh_offline_pkt_t *", pkts[done:].ctypes.data), n - done, st)
            if used == -3:
                raise MemoryError(f"line {writer.line}: the staged series table cannot grow")
            if used < 0:
                raise ValueError(f"omdp_fh_offline_stage: bad argument (line {writer.line}, {writer.buckets} buckets)")
            done += used
            messages += writer.flush()
        return messages

    def counts(self, line: int) -> dict[str, int]:
        """The line's counters so far (``packets`` split into ``packets_a``/``packets_b``)."""
        c = ffi.new("omdp_fh_offline_counts_t *")
        lib.omdp_fh_offline_line_counts(self._ptr, line, c)
        out = {name: int(getattr(c, name)) for name in COUNT_NAMES if name != "packets"}
        out["packets_a"], out["packets_b"] = int(c.packets[0]), int(c.packets[1])
        return out


def packets_format(sources: list[np.ndarray], pkts: np.ndarray) -> str:
    """The feed format of a line's packets, told from the first one's bytes (as ``omdp
    decode --format auto`` does): "obi-v6" or "opra-fast-v2"."""
    if not len(pkts):
        return "opra-fast-v2"
    p = pkts[0]
    first = sources[int(p["src"])][int(p["off"]) : int(p["off"]) + int(p["len"])]
    return feed_format(first.tobytes())


def header_messages(sources: list[np.ndarray], pkts: np.ndarray) -> int:
    """The sum of the packets' header message counts (three ASCII digits at bytes 12-14 of
    a FAST V2 packet, byte 10 of an OBI block; a packet too short to have them counts 0)."""
    total = 0
    for k, src in enumerate(sources):
        p = pkts[pkts["src"] == k]
        if len(p) and len(src) > int(p["off"][0]) and src[int(p["off"][0])] == lib.OMDP_OBI_VERSION:
            ok = (p["len"] >= lib.OMDP_OBI_HEADER_SIZE) & (p["off"] + np.uint64(11) <= np.uint64(len(src)))
            total += int(src[p["off"][ok].astype(np.int64) + 10].astype(np.int64).sum())
            continue
        ok = (p["len"] >= 15) & (p["off"] + np.uint64(15) <= np.uint64(len(src)))
        off = p["off"][ok].astype(np.int64)
        if not len(off):
            continue
        digits = [src[off + j].astype(np.int64) - 48 for j in (12, 13, 14)]
        valid = (digits[0] >= 0) & (digits[0] <= 9) & (digits[1] >= 0) & (digits[1] <= 9) & (digits[2] >= 0) & (digits[2] <= 9)
        total += int((digits[0] * 100 + digits[1] * 10 + digits[2])[valid].sum())
    return total


def join(parts: list[np.ndarray]) -> np.ndarray:
    """Concatenate record arrays (as raw bytes)."""
    return np.concatenate([p.view(_RAW) for p in parts]).view(OPRA_MSG_DTYPE)


def read_packets(lines: list[LineFiles], problems: list[tuple[str, str, str]]) -> tuple[list[np.ndarray], np.ndarray, int]:
    """Every line's A and B files as sources and one PKT_DTYPE array in arrival order:
    capture time, then line, then A before B, then position in the copy (the replayer's
    order). Returns (sources, packets, files read)."""
    sources: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    files = 0
    for lf in lines:
        for copy, paths in ((0, lf.a), (1, lf.b)):
            pos = 0
            for path in paths:
                try:
                    cap = read_capture(path)
                except (PcapError, OSError, ValueError) as exc:
                    problems.append((path, "skipped", str(exc)))
                    continue
                files += 1
                if cap.meta.get("truncated"):
                    problems.append((path, "partly skipped",
                                     f"{cap.meta['truncated_tail'].describe()}; the packets before it were read"))
                if cap.meta.get("malformed_frames") is not None:
                    problems.append((path, "partly skipped", cap.meta["malformed_frames"].describe()))
                n = len(cap)
                p = np.empty(n, dtype=PKT_DTYPE)
                p["off"] = cap.offsets
                p["len"] = cap.lengths
                p["src"] = len(sources)
                p["line"] = lf.line
                p["copy"] = copy
                p["ts_ns"] = cap.ts_ns
                parts.append((p, np.arange(pos, pos + n, dtype=np.int64)))
                sources.append(np.asarray(cap.buf, dtype=np.uint8).reshape(-1))  # the memory map, read in place
                pos += n
    if not parts:
        return sources, np.zeros(0, PKT_DTYPE), files
    if len(parts) == 1 and not (np.diff(parts[0][0]["ts_ns"]) < 0).any():
        return sources, parts[0][0], files  # one file in capture order (a line without B): already arrival order
    pkts = np.concatenate([p for p, _ in parts])
    pos = np.concatenate([q for _, q in parts])
    order = np.lexsort((pos, pkts["copy"], pkts["line"], pkts["ts_ns"]))
    return sources, np.ascontiguousarray(pkts[order]), files


@dataclass
class LineFeed:
    """What one day x line decode task did: how the line went, what it could not read."""

    line: int
    messages: int
    counts: dict[str, int]
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (path, action, error)
    files_decoded: int = 0
    sizes: BucketSizes | None = None      # per bucket: the line's series and groups staged there


def decode_line(lf: LineFiles, routes: Routes, day_dir: str) -> LineFeed:
    """One line's A and B files through the feed handler's rules in arrival order; the
    accepted records staged per underlying bucket (``backtest_stage.BucketWriter``), a chunk
    at a time; with what each bucket's engine must hold of the line."""
    problems: list[tuple[str, str, str]] = []
    sources, pkts, files = read_packets([lf], problems)
    fh = OfflineFeedHandler(routes, feed_format=packets_format(sources, pkts))
    with BucketWriter(day_dir, lf.line, routes.engines) as writer:
        messages = fh.stage(sources, pkts, writer)
    return LineFeed(lf.line, messages, fh.counts(lf.line), problems, files, writer.sizes)
