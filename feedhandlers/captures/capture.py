"""A capture held as arrays: the packets of one file (or several) as one byte buffer plus
per-packet offsets, lengths, timestamps and destinations.

Readers return this shape and writers take its parts, so millions of packets move between
files, the codec's batch decoder and the replayer without a Python object per packet.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Capture:
    """Packets as arrays over one buffer.

    ``buf`` is usually a read-only memory map of the file; ``offsets[i]``/``lengths[i]``
    locate packet i's UDP payload (the OPRA packet) in it. ``ts_ns`` is the capture time in
    nanoseconds since the epoch (0 where the format has none, as in SIAC test files);
    ``dst_ip``/``dst_port`` the UDP destination (0 where the format has none).
    """

    buf: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    ts_ns: np.ndarray
    dst_ip: np.ndarray
    dst_port: np.ndarray
    skipped: int = 0
    """Frames in the file that carried no IPv4/UDP payload (ARP, fragments, ...)."""
    source: str = ""
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    def payload(self, i: int) -> bytes:
        """The bytes of packet ``i`` (a copy)."""
        off = int(self.offsets[i])
        return bytes(self.buf[off : off + int(self.lengths[i])])

    def payloads(self) -> list[bytes]:
        """Every packet as bytes: for tests and small captures, not for hot paths."""
        return [self.payload(i) for i in range(len(self))]

    def contiguous(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The payloads packed back to back: ``(buf, offsets, lengths)`` with offsets starting
        at 0, the form the batch decoder and the writers like best."""
        return pack_payloads(self.buf, self.offsets, self.lengths)


def pack_payloads(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gather variable-length slices of ``buf`` into one contiguous array, vectorized.

    Returns ``(packed, new_offsets, lengths)``. Already-contiguous input is returned as a view.
    """
    buf = np.asarray(buf, dtype=np.uint8).reshape(-1)
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = offsets.shape[0]
    new_off = np.zeros(n, dtype=np.int64)
    if n:
        np.cumsum(lengths[:-1], out=new_off[1:])
    total = int(lengths.sum()) if n else 0
    if n == 0:
        return np.zeros(0, np.uint8), new_off, lengths.astype(np.uint32)
    if np.array_equal(offsets, new_off + offsets[0]):
        start = int(offsets[0])
        return buf[start : start + total], new_off, lengths.astype(np.uint32)
    out = np.empty(total, dtype=np.uint8)
    chunk = 1 << 16
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        lens = lengths[s:e]
        size = int(lens.sum())
        # Each output byte's source: its packet's source offset plus its rank inside the packet.
        src = np.repeat(offsets[s:e] - (new_off[s:e] - new_off[s]), lens) + np.arange(size, dtype=np.int64)
        out[new_off[s] : new_off[s] + size] = buf[src]
    return out, new_off, lengths.astype(np.uint32)
