"""One line of today's feed: messages numbered (spec 9.1: Start of Day H C with block_seq 0
first, then MSN 1, 2, ...), cut into blocks and encoded by C (``omdp_obi_synth_encode_stream``,
a chunk per call), written to the A copy and (with ``b_copy``) the B copy, with the faults
the ground truth lists injected per copy:

- ``gap``: the block is left out of copy a, b or both (``ab``: lost on both streams; a
  or b alone: the other stream fills it);
- ``checksum``: the block's checksum is wrong in copy a or b (a receiver drops the block).

The block holding Start of Day is never faulted.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from feedhandlers.captures import PcapWriter
from feedhandlers.opra_obi import MAX_BLOCK_BYTES
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib
from ops.synth.today.lines import obi_line_address

BLOCK_DELAY_NS = 20_000
"""A block's time: its last message's plus this (OPRA's processing)."""
WANTED_POOL = 1 << 12


@dataclass
class LineTotals:
    """What a line carried (the A copy before faults: every block made)."""

    packets: int = 0
    messages: int = 0
    payload_bytes: int = 0
    categories: Counter = field(default_factory=Counter)
    first_seq: int = 0
    last_seq: int = 0


@dataclass
class Faults:
    """Injected faults, one row each."""

    rows: list[dict] = field(default_factory=list)


def encode_line(recs: np.ndarray, side: bytes, ts_ns: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blocks of ``recs`` (msg_seq set): (buffer, offsets, lengths, first record of each)."""
    n = recs.shape[0]
    cap_blocks = n + 1
    cap = n * 96 + 4096
    recs = np.ascontiguousarray(recs)
    side_arr = np.frombuffer(side, dtype=np.uint8) if side else np.zeros(1, np.uint8)
    ts = np.ascontiguousarray(ts_ns, dtype=np.int64)
    want = np.ascontiguousarray(wanted, dtype=np.uint32)
    while True:
        out = np.empty(cap, dtype=np.uint8)
        offsets = np.empty(cap_blocks, dtype=np.uint64)
        lengths = np.empty(cap_blocks, dtype=np.uint32)
        first = np.empty(cap_blocks, dtype=np.uint64)
        err = ffi.new("omdp_obi_error_t*")
        nb = lib.omdp_obi_synth_encode_stream(
            ffi.from_buffer("omdp_opra_msg_t[]", recs), n, ffi.from_buffer("uint8_t[]", side_arr), len(side),
            ffi.from_buffer("int64_t[]", ts), ffi.from_buffer("uint32_t[]", want), want.shape[0],
            ffi.from_buffer("uint8_t[]", out), cap, ffi.from_buffer("uint64_t[]", offsets),
            ffi.from_buffer("uint32_t[]", lengths), ffi.from_buffer("uint64_t[]", first), cap_blocks, err)
        if nb == lib.OMDP_OBI_E_CAPACITY:
            cap *= 2
            continue
        if nb < 0:
            raise RuntimeError(f"OBI encoder refused record {int(err.packet_index)}: "
                               f"{ffi.string(lib.omdp_obi_error_name(int(nb))).decode()}")
        return out, offsets[:nb], lengths[:nb], first[:nb]


class ObiLineWriter:
    """Writes one line: A (and B) pcaps, rotated at ``rotate_bytes``."""

    def __init__(self, line: int, out_dir: Path, mean_per_block: float, rng: np.random.Generator, b_copy: bool,
                 rotate_bytes: int) -> None:
        self.line = line
        self.rng = rng
        self.next_seq = 0
        self.started = False
        p = 2.0 / (2.0 + max(mean_per_block - 1.0, 0.0))
        self.wanted = np.minimum(1 + rng.negative_binomial(2, p, WANTED_POOL), 255).astype(np.uint32)
        self.wanted_at = 0
        self.totals = LineTotals()
        self.copies = ("a", "b") if b_copy else ("a",)
        self.writers: dict[str, PcapWriter] = {}
        for copy in self.copies:
            addr = obi_line_address(line, copy)
            name = f"line{line:02d}{'-b' if copy == 'b' else ''}.pcap"
            self.writers[copy] = PcapWriter(out_dir / name, dst_ip=addr.group, dst_port=addr.port, src_ip=addr.source,
                                            src_port=addr.source_port, max_bytes=rotate_bytes)

    def write(self, recs: np.ndarray, epoch_ns: np.ndarray, side: bytes, n_gaps: int, n_checksums: int,
              faults: Faults) -> np.ndarray:
        """Number, encode and write a chunk's records (time order); returns their MSNs."""
        n = recs.shape[0]
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        seq = self.next_seq + np.arange(n, dtype=np.int64)
        if not self.started:  # Start of Day: block_seq 0, the first message after it is 1
            if recs["category"][0] != ord("H"):
                raise ValueError("a line's first record must be its Start of Day")
            self.started = True
        recs["msg_seq"] = seq.astype(np.uint64)
        wanted = np.take(self.wanted, np.arange(self.wanted_at, self.wanted_at + min(n + 1, WANTED_POOL)), mode="wrap")
        buf, offsets, lengths, first = encode_line(recs, side, epoch_ns + BLOCK_DELAY_NS, wanted)
        nb = offsets.shape[0]
        self.wanted_at = (self.wanted_at + nb) % WANTED_POOL
        last = np.append(first[1:], n).astype(np.int64) - 1
        ts = epoch_ns[last] + BLOCK_DELAY_NS
        counts = np.diff(np.append(first, n)).astype(np.int64)
        keep = {c: np.ones(nb, dtype=bool) for c in self.copies}
        bufs = {c: buf for c in self.copies}
        eligible = np.flatnonzero(recs["category"][first.astype(np.int64)] != ord("H"))
        picks = self.rng.permutation(eligible)[: n_gaps + n_checksums]
        for k, b in enumerate(picks.tolist()):
            kind = "gap" if k < n_gaps else "checksum"
            if kind == "gap":
                copy = self.rng.choice(["a", "b", "ab"]) if len(self.copies) == 2 else "a"
                for c in copy:
                    keep[c][b] = False
            else:
                copy = self.rng.choice(list(self.copies))
                bufs[copy] = bufs[copy].copy() if bufs[copy] is buf else bufs[copy]
                at = int(offsets[b]) + 19
                bufs[copy][at] ^= 0x5A
            faults.rows.append({"kind": kind, "line": self.line, "copy": str(copy), "block_seq": int(seq[first[b]]),
                                "msg_count": int(counts[b]), "ts_ns": int(ts[b])})
        for c, w in self.writers.items():
            m = keep[c]
            w.write(bufs[c], offsets[m], lengths[m], ts[m])
        t = self.totals
        t.packets += nb
        t.messages += n
        t.payload_bytes += int(lengths.sum())
        cats, cnt = np.unique(recs["category"], return_counts=True)
        wire_short = (recs["wire"] & 2) != 0
        for c, k in zip(cats.tolist(), cnt.tolist()):
            t.categories[chr(c)] += k
        q = int(wire_short.sum())
        if q:
            t.categories["k"] -= q
            t.categories["q"] += q
        self.next_seq = int(seq[-1]) + 1
        t.last_seq = int(seq[-1])
        return seq

    def close(self) -> dict[str, list[str]]:
        """Close the files; returns each copy's file names in order."""
        out = {}
        for copy, w in self.writers.items():
            w.close()
            out[copy] = [p.name for p in w.paths]
        return out
