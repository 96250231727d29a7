"""The ctl segment of a run (omdp/replay.h): the control block the service writes, one status
block and one sent log per sender, and the counters of every line.

The service creates it and reads it as numpy views; each sender maps it and passes the
pointers to the C loop. Writes that senders race with go through the C functions, which
carry the memory ordering.
"""
from __future__ import annotations

import numpy as np

from omdp.native import ffi, lib
from ops.replay.config import MAX_LINE
from ops.replay.native_layout import LINE_STATS_DTYPE, SENDER_STATUS_DTYPE, SENT_DTYPE
from ops.replay.shm_segments import Segment


class CtlSegment:
    """A mapped ctl segment for ``n_senders`` senders with logs of ``log_capacity`` entries."""

    def __init__(self, segment: Segment) -> None:
        self.segment = segment
        self.control = ffi.cast("omdp_replay_control_t *", segment.base)
        if segment.size < ffi.sizeof("omdp_replay_control_t") or int(self.control.magic) != lib.OMDP_REPLAY_CTL_MAGIC:
            segment.close()
            raise ValueError(f"{segment.name}: not a replay ctl segment")
        self.n_senders = int(self.control.n_senders)
        first_log = ffi.cast("omdp_replay_log_t *", self._at(lib.omdp_replay_ctl_log_offset(self.n_senders, 1024, 0)))
        self.log_capacity = int(first_log.capacity) if self.n_senders else 0
        if lib.omdp_replay_ctl_size(self.n_senders, self.log_capacity) != segment.size:
            segment.close()
            raise ValueError(f"{segment.name}: layout does not match the segment's size")
        buf = segment.buffer()
        self.senders = np.frombuffer(buf, SENDER_STATUS_DTYPE, self.n_senders, int(lib.omdp_replay_ctl_sender_offset(0)))
        self.lines = np.frombuffer(buf, LINE_STATS_DTYPE, MAX_LINE + 1, int(lib.omdp_replay_ctl_lines_offset(self.n_senders)))

    def _at(self, offset: int) -> object:
        return ffi.cast("uint8_t *", self.segment.base) + offset

    @classmethod
    def create(cls, name: str, *, n_senders: int, log_capacity: int, creator_pid: int) -> "CtlSegment":
        seg = Segment.create(name, int(lib.omdp_replay_ctl_size(n_senders, log_capacity)))
        lib.omdp_replay_ctl_init(seg.base, n_senders, log_capacity, creator_pid)
        return cls(seg)

    @classmethod
    def open(cls, name: str) -> "CtlSegment":
        return cls(Segment.open(name, writable=True))

    @property
    def name(self) -> str:
        return self.segment.name

    def sender_ptr(self, i: int) -> object:
        return ffi.cast("omdp_replay_sender_status_t *", self._at(lib.omdp_replay_ctl_sender_offset(i)))

    def lines_ptr(self) -> object:
        return ffi.cast("omdp_replay_line_stats_t *", self._at(lib.omdp_replay_ctl_lines_offset(self.n_senders)))

    def log_ptr(self, i: int) -> object:
        return ffi.cast("omdp_replay_log_t *", self._at(lib.omdp_replay_ctl_log_offset(self.n_senders, self.log_capacity, i)))

    def set_map(self, anchor_ns: int, anchor_off: int, scale: float) -> None:
        """Replace the time map (the service is its only writer)."""
        lib.omdp_replay_control_set_map(self.control, anchor_ns, anchor_off, scale)

    def get_map(self) -> tuple[int, int, float]:
        an = ffi.new("int64_t *")
        ao = ffi.new("int64_t *")
        sc = ffi.new("double *")
        lib.omdp_replay_control_get_map(self.control, an, ao, sc)
        return int(an[0]), int(ao[0]), float(sc[0])

    def start(self, start_ns: int, end_ns: int) -> None:
        lib.omdp_replay_control_start(self.control, start_ns, end_ns)

    def stop(self) -> None:
        lib.omdp_replay_control_stop(self.control)

    @property
    def start_ns(self) -> int:
        return int(self.control.start_ns)

    @property
    def end_ns(self) -> int:
        return int(self.control.end_ns)

    def drain_log(self, i: int, out: np.ndarray | None = None) -> np.ndarray:
        """Take sent packets from sender i's log into ``out`` (SENT_DTYPE; a new array of
        65,536 when None), as many as fit; returns the filled part."""
        if out is None:
            out = np.empty(1 << 16, dtype=SENT_DTYPE)
        if out.dtype != SENT_DTYPE or not out.flags.c_contiguous:
            raise ValueError("drain_log needs a contiguous SENT_DTYPE array")
        n = lib.omdp_replay_log_drain(self.log_ptr(i), ffi.cast("omdp_replay_sent_t *", ffi.from_buffer(out)), out.shape[0])
        return out[: int(n)]

    def close(self) -> None:
        self.senders = None  # type: ignore[assignment]
        self.lines = None  # type: ignore[assignment]
        self.segment.close()

    def unlink(self) -> None:
        self.segment.unlink()
