"""One OPRA line's output: messages merged in time order, numbered, cut into packets by the
C encoder and written to the line's pcap (and its B copy).

Messages reach a line chunk by chunk, and a chunk's messages may run past its end (an
exchange requotes a moment after the tick). The writer holds back every message at or
after the cut time until the next chunk, so each line's messages, sequence numbers and
packet times only go forward.

Packets take a number of messages drawn from ``1 + NegativeBinomial(2, mean - 1)`` (mean
``messages_per_packet``, a long tail of full packets; a pool per line used in turn), fewer
when the encoder closes one at 1,456 bytes or where the spec needs a new packet. A packet is stamped with the time of
its last message plus ``PACKET_DELAY_NS`` (the line's packing and sending).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from feedhandlers.captures import PcapWriter
from feedhandlers.opra_fast import MAX_PACKET_BYTES, encode_stream
from ops.synth.calendar import CaptureClock
from ops.synth.ground_truth import GroundTruth
from ops.synth.lines import line_address
from ops.synth.messages import Messages
from ops.synth.records import RECORD_VOID, as_records, as_void
from ops.synth.stage_timer import StageTimer

PACKET_DELAY_NS = 20_000
MAX_WANTED = 120
WANTED_POOL = 1 << 16
"""Packet sizes drawn per line up front and used in turn."""


def wanted_counts(rng: np.random.Generator, n: int, mean: float) -> np.ndarray:
    """``n`` packet sizes (messages) with the given mean, at least 1."""
    p = 2.0 / (2.0 + (mean - 1.0))
    return np.minimum(1 + rng.negative_binomial(2, p, n), MAX_WANTED).astype(np.uint32)


@dataclass
class LineTotals:
    """What a line carried."""

    packets: int = 0
    messages: int = 0
    payload_bytes: int = 0
    categories: Counter = field(default_factory=Counter)
    first_seq: int = 0
    last_seq: int = 0


def merge_by_time(sorted_msgs: Messages, few: Messages) -> Messages:
    """``sorted_msgs`` (time order) with ``few`` (any order) inserted by time, each after
    the messages of equal time; one pass over the records."""
    if len(few) == 0:
        return sorted_msgs
    few = few.take(np.argsort(few.time, kind="stable"))
    if len(sorted_msgs) == 0:
        return few
    n = len(sorted_msgs) + len(few)
    pos = np.searchsorted(sorted_msgs.time, few.time, side="right") + np.arange(len(few))
    rest = np.ones(n, dtype=bool)
    rest[pos] = False
    items = np.empty(n, dtype=RECORD_VOID)
    items[pos] = as_void(few.records)
    items[rest] = as_void(sorted_msgs.records)
    out = Messages(as_records(items), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
    for name in ("time", "line", "gt"):
        col = getattr(out, name)
        col[pos] = getattr(few, name)
        col[rest] = getattr(sorted_msgs, name)
    where = np.flatnonzero(rest)
    out.payload_index = np.concatenate([where[sorted_msgs.payload_index], pos[few.payload_index]]).astype(np.int64)
    out.payloads = sorted_msgs.payloads + few.payloads
    return out


class LineWriter:
    """Writes one line: pcap A (and B), rotated at ``rotate_bytes``."""

    def __init__(self, line: int, out_dir: Path, clock: CaptureClock, first_seq: int, mean_per_packet: float,
                 rng: np.random.Generator, b_copy: bool, rotate_bytes: int) -> None:
        self.line = line
        self.clock = clock
        self.next_seq = first_seq
        self.wanted = wanted_counts(rng, WANTED_POOL, mean_per_packet)
        self.wanted_at = 0
        self.pending = Messages.empty()
        self.totals = LineTotals(first_seq=first_seq, last_seq=first_seq - 1)
        self.writers: dict[str, PcapWriter] = {}
        for copy in ("a", "b") if b_copy else ("a",):
            addr = line_address(line, copy)
            name = f"line{line:02d}{'-b' if copy == 'b' else ''}.pcap"
            self.writers[copy] = PcapWriter(out_dir / name, dst_ip=addr.group, dst_port=addr.port, src_ip=addr.source,
                                            src_port=addr.source_port, max_bytes=rotate_bytes)

    def feed(self, quotes: Messages, others: Messages, cut: int | None, truth: GroundTruth, timer: StageTimer) -> None:
        """Add this line's messages of a chunk - ``quotes`` in time order, ``others`` in any
        order - and write out everything before ``cut`` (everything when ``cut`` is None)."""
        with timer.stage("merge"):
            merged = merge_by_time(quotes, Messages.concat([self.pending, others]))
            if len(merged) == 0:
                return
            n_ready = len(merged) if cut is None else int(np.searchsorted(merged.time, cut, side="left"))
            self.pending = merged.take(np.arange(n_ready, len(merged)))
        if n_ready:
            self._write(merged.slice(0, n_ready), truth, timer)

    def _write(self, ready: Messages, truth: GroundTruth, timer: StageTimer) -> None:
        n = len(ready)
        recs = ready.records
        seq = self.next_seq + np.arange(n, dtype=np.uint64)
        recs["msg_seq"] = seq
        side = bytearray()
        for i, data in zip(ready.payload_index.tolist(), ready.payloads):
            side += b"\0" * (-len(side) % 8)
            recs["var_off"][i] = len(side)
            recs["var_len"][i] = len(data)
            side += data
        with timer.stage("encode"):
            need = min(n + 1, WANTED_POOL)
            wanted = np.take(self.wanted, np.arange(self.wanted_at, self.wanted_at + need), mode="wrap")
            buf, offsets, lengths, first = encode_stream(recs, bytes(side), wanted, MAX_PACKET_BYTES)
            self.wanted_at = (self.wanted_at + int(offsets.shape[0])) % WANTED_POOL
        last = np.append(first[1:], n) - 1
        ts = self.clock.epoch(ready.time[last]) + PACKET_DELAY_NS
        with timer.stage("pcap"):
            for w in self.writers.values():
                w.write(buf, offsets, lengths, ts)
        placed = np.flatnonzero(ready.gt >= 0)
        if placed.size:
            truth.place(ready.gt[placed], self.line, seq[placed], recs["time"][placed], self.clock.epoch(ready.time[placed]))
        t = self.totals
        t.packets += int(offsets.shape[0])
        t.messages += n
        t.payload_bytes += int(lengths.sum())
        cats, counts = np.unique(recs["category"], return_counts=True)
        for c, k in zip(cats.tolist(), counts.tolist()):
            t.categories[chr(c)] += k
        self.next_seq += n
        t.last_seq = self.next_seq - 1

    def close(self) -> dict[str, list[str]]:
        """Close the files; returns each copy's file names in order."""
        out = {}
        for copy, w in self.writers.items():
            w.close()
            out[copy] = [p.name for p in w.paths]
        return out
