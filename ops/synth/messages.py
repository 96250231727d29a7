"""A batch of assembled messages on their way to the lines: records plus what the line
writer needs beside them (capture-relative time, line, ground-truth id, payloads)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ops.synth.records import as_records, as_void, empty_records, gather


@dataclass
class Messages:
    """Records with their times (ns, capture-relative), lines (1-based), ground-truth ids
    (-1 for none) and the variable parts of those that have one (``payload_index``
    positions into ``records``)."""

    records: np.ndarray
    time: np.ndarray
    line: np.ndarray
    gt: np.ndarray
    payload_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    payloads: list[bytes] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.records.shape[0])

    @staticmethod
    def empty() -> "Messages":
        """No messages."""
        z = np.zeros(0, dtype=np.int64)
        return Messages(empty_records(), z, z.copy(), z.copy())

    @staticmethod
    def one(record: np.ndarray, time: int, line: int, payload: bytes | None = None) -> "Messages":
        """A single message (a record array of length 1)."""
        has = payload is not None
        return Messages(record, np.array([time], dtype=np.int64), np.array([line], dtype=np.int64),
                        np.array([-1], dtype=np.int64), np.zeros(1 if has else 0, dtype=np.int64),
                        [payload] if has else [])

    @staticmethod
    def concat(parts: list["Messages"]) -> "Messages":
        """All parts back to back."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return Messages.empty()
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [len(p) for p in parts[:-1]])
        return Messages(
            as_records(np.concatenate([as_void(p.records) for p in parts])),
            np.concatenate([p.time for p in parts]),
            np.concatenate([p.line for p in parts]),
            np.concatenate([p.gt for p in parts]),
            np.concatenate([p.payload_index + o for p, o in zip(parts, offsets)]).astype(np.int64),
            [d for p in parts for d in p.payloads],
        )

    def slice(self, start: int, stop: int) -> "Messages":
        """Messages ``start`` to ``stop`` as views (no copy of the records)."""
        keep = (self.payload_index >= start) & (self.payload_index < stop)
        return Messages(self.records[start:stop], self.time[start:stop], self.line[start:stop], self.gt[start:stop],
                        self.payload_index[keep] - start, [d for d, k in zip(self.payloads, keep.tolist()) if k])

    def take(self, idx: np.ndarray) -> "Messages":
        """The messages at ``idx`` (in that order), payloads following their records."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.payloads:
            where = np.full(len(self), -1, dtype=np.int64)
            where[self.payload_index] = np.arange(len(self.payloads))
            moved = where[idx]
            keep = np.flatnonzero(moved >= 0)
            payload_index = keep
            payloads = [self.payloads[i] for i in moved[keep].tolist()]
        else:
            payload_index, payloads = np.zeros(0, dtype=np.int64), []
        return Messages(gather(self.records, idx), self.time[idx], self.line[idx], self.gt[idx], payload_index, payloads)
