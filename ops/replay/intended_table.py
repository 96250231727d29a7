"""The intended-time table in shared memory: for every line, the planned send time of its
recent packets keyed by block sequence (layout and seqlock protocol: omdp/replay.h).

Consumers on the same host (a feed handler stamping ``intended``, a latency collector) open
it by name and look packets up; the replay service creates it and its senders fill it.
"""
from __future__ import annotations

import numpy as np

from omdp.native import ffi, lib
from ops.replay.shm_segments import Segment


class IntendedTableError(ValueError):
    """The segment is not an intended-time table of this version, or is cut short."""


class IntendedTable:
    """A mapped intended-time table. ``lookup``/``lookup_many`` are safe while senders write."""

    def __init__(self, segment: Segment) -> None:
        self.segment = segment
        self.header = ffi.cast("omdp_replay_intended_header_t *", segment.base)
        try:
            self._check()
        except IntendedTableError:
            segment.close()
            raise

    def _check(self) -> None:
        segment = self.segment
        if segment.size < ffi.sizeof("omdp_replay_intended_header_t") or int(self.header.magic) != lib.OMDP_REPLAY_INTENDED_MAGIC:
            raise IntendedTableError(f"{segment.name}: not a replay intended-time table")
        if int(self.header.version) != lib.OMDP_REPLAY_VERSION:
            raise IntendedTableError(f"{segment.name}: version {int(self.header.version)}, this build reads {lib.OMDP_REPLAY_VERSION}")
        cap = int(self.header.capacity)
        if cap == 0 or cap & (cap - 1) or lib.omdp_replay_intended_size(self.header.max_line, cap) != segment.size:
            raise IntendedTableError(f"{segment.name}: header does not match the segment's size")

    @classmethod
    def create(cls, name: str, *, max_line: int, capacity: int, run_id: str, creator_pid: int) -> "IntendedTable":
        """A new, empty table (the replay service)."""
        seg = Segment.create(name, int(lib.omdp_replay_intended_size(max_line, capacity)))
        lib.omdp_replay_intended_init(ffi.cast("omdp_replay_intended_header_t *", seg.base), max_line, capacity,
                                      creator_pid, run_id.encode())
        return cls(seg)

    @classmethod
    def open(cls, name: str, writable: bool = False) -> "IntendedTable":
        """Map an existing table: read-only for a consumer, writable for a sender."""
        return cls(Segment.open(name, writable=writable))

    @property
    def name(self) -> str:
        return self.segment.name

    @property
    def capacity(self) -> int:
        """Block sequences kept per line."""
        return int(self.header.capacity)

    @property
    def run_id(self) -> str:
        return ffi.string(self.header.run_id).decode()

    def lookup(self, line: int, block_seq: int) -> int | None:
        """Intended send time (ns) of ``line``'s packet ``block_seq``, or None if the table
        does not hold it (never sent, or overwritten by a later one)."""
        out = self.lookup_many(np.array([line], np.uint16), np.array([block_seq], np.uint64))
        return int(out[0]) or None

    def lookup_many(self, lines: np.ndarray, block_seqs: np.ndarray) -> np.ndarray:
        """Intended times of many packets at once (0 where not held)."""
        lines = np.ascontiguousarray(lines, dtype=np.uint16)
        seqs = np.ascontiguousarray(block_seqs, dtype=np.uint64)
        if lines.shape != seqs.shape:
            raise ValueError("lines and block_seqs must have the same shape")
        out = np.zeros(lines.shape, dtype=np.int64)
        lib.omdp_replay_intended_lookup_many(self.header, ffi.from_buffer("uint16_t[]", lines),
                                             ffi.from_buffer("uint64_t[]", seqs),
                                             ffi.from_buffer("int64_t[]", out), lines.size)
        return out

    def close(self) -> None:
        self.segment.close()

    def unlink(self) -> None:
        self.segment.unlink()

    def __enter__(self) -> "IntendedTable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
