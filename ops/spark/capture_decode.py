"""Executor side of the feeds job: decode one capture file into tick batches with the C
batch decoder, a chunk of packets per call (never a Python call per message), and report
how the file went.

A file may be 256 MB: it is memory-mapped by the pcap reader and decoded ``chunk_packets``
packets at a time, so a task holds one chunk's records, not the file's.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from ops.spark.data_layout import CaptureFile
from ops.spark.tick_table import ticks_batch

DEFAULT_CHUNK_PACKETS = 16_384


@dataclass
class FileOutcome:
    """How decoding one capture file went (a row of ``feeds_files``)."""

    path: str
    line: int
    copy: str
    part: int
    bytes: int
    packets: int = 0
    messages: int = 0
    bad_packets: int = 0
    frames_skipped: int = 0
    status: str = "ok"
    error: str = ""

    def as_dict(self) -> dict:
        """The fields, for an accumulator (plain data crosses process boundaries)."""
        return asdict(self)


def decode_capture(
    capture: CaptureFile,
    date: str,
    root_map: dict[str, str],
    outcome: FileOutcome,
    chunk_packets: int = DEFAULT_CHUNK_PACKETS,
) -> Iterator[pa.RecordBatch]:
    """Yield the tick batches of ``capture``, filling ``outcome`` as it goes. A file that is
    not a readable pcap yields nothing (status "skipped"); a file cut short or failing part
    way keeps what was decoded before (status "partly skipped"); bad packets are counted."""
    from feedhandlers.captures import PcapError, read_pcap
    from feedhandlers.opra_fast import decode_batch

    try:
        cap = read_pcap(capture.path)
    except (PcapError, OSError, ValueError) as exc:
        outcome.status, outcome.error = "skipped", str(exc)
        return
    outcome.frames_skipped = int(cap.skipped)
    if cap.meta.get("truncated"):
        outcome.status = "partly skipped"
        outcome.error = "file ends inside a packet record (cut short); the packets before it were read"
    n = len(cap)
    for start in range(0, n, chunk_packets):
        end = min(n, start + chunk_packets)
        offsets = cap.offsets[start:end]
        lengths = cap.lengths[start:end]
        try:
            batch = decode_batch(cap.buf, offsets, lengths)
        except (OSError, ValueError) as exc:
            outcome.status = "partly skipped"
            outcome.error = f"packets {start}..{n - 1} not decoded: {exc}"
            return
        counts = np.asarray(batch.pkt_count, dtype=np.int64)
        outcome.packets += end - start
        outcome.bad_packets += int(batch.counters["packets_bad"])
        outcome.messages += int(batch.records.shape[0])
        if batch.records.shape[0] == 0:
            continue
        # Records come back to back in packet order; bad packets have count 0.
        pkt = np.repeat(np.arange(end - start), counts)
        yield ticks_batch(
            batch.records,
            ts_ns=cap.ts_ns[start:end][pkt],
            packet_messages=counts[pkt],
            packet_bytes=np.asarray(lengths, dtype=np.int64)[pkt],
            date=date,
            line=capture.line,
            root_map=root_map,
        )
