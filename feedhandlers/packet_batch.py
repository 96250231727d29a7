"""One batch decoder over both of OPRA's formats, for the passes that only need each
packet's records and message count (capture statistics, the capacity planner's queueing
model): FAST V2 packets through ``opra_batch.BatchDecoder``, OBI v6 blocks through
``opra_obi.ObiBatchDecoder``, chosen from a capture's first packet (``detect_feed``, as
``omdp decode --format auto`` does)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from feedhandlers.opra_batch import BatchDecoder
from feedhandlers.opra_obi import ObiBatchDecoder, detect_feed


@dataclass(frozen=True)
class PacketBatch:
    """One batch: every record of its good packets, each packet's message count (0 for a
    bad one) and how many were bad."""

    records: np.ndarray
    counts: np.ndarray
    bad: int


class PacketBatchDecoder:
    """Decodes batches of one format; ``feed`` is 'fast' or 'obi' (see ``for_packet``)."""

    def __init__(self, feed: str) -> None:
        if feed not in ("fast", "obi"):
            raise ValueError(f"feed must be 'fast' or 'obi', not {feed!r}")
        self.feed = feed
        self._fast = BatchDecoder() if feed == "fast" else None
        self._obi = ObiBatchDecoder() if feed == "obi" else None

    @classmethod
    def for_packet(cls, first: bytes | bytearray | memoryview) -> PacketBatchDecoder:
        """The decoder of the format ``first`` is in (FAST V2 when it is neither: its
        decoder then counts every packet bad)."""
        return cls(detect_feed(first) or "fast")

    def decode(self, buf: bytes | bytearray | memoryview | np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
               first_packet_index: int = 0) -> PacketBatch:
        if self._obi is not None:
            out = self._obi.decode(buf, offsets, lengths, first_packet_index)
            return PacketBatch(out.records, out.blocks["count"].astype(np.int64), int(out.counters.get("packets_bad", 0)))
        assert self._fast is not None
        fo = self._fast.decode(buf, offsets, lengths, first_packet_index)
        return PacketBatch(fo.records, fo.pkt_count.astype(np.int64), int(fo.counters.get("packets_bad", 0)))
