"""The A and B copies of one OBI line, paired block by block, so a replay sends each copy's
own bytes (its own gaps and bad checksums) rather than the A file twice.

OPRA sends the same blocks on both streams; a copy may lack a block (lost on its way) or
carry it damaged. Two blocks are the same block when their header says so: the same
message sequence, message count and block time (opra-binary.md 4.1: bytes 6-9, 10, 11-18),
which a damaged checksum (bytes 19-20) or a lost neighbour does not change. Vectorized over
the header bytes; a block too short to have a header keys as all zeros and so pairs only
with another such block.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from feedhandlers.captures import Capture

OBI_HEADER = 21
"""Bytes of an OBI block header (opra-binary.md 4.1)."""


@dataclass(frozen=True)
class CopyBlocks:
    """One copy of a line, its files' packets concatenated: the source index and byte offset,
    length and capture time of each, and the two integers that key a block."""

    src: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    ts_ns: np.ndarray
    key_seq: np.ndarray
    key_time: np.ndarray

    def __len__(self) -> int:
        return int(self.src.shape[0])


def _header_bytes(cap: Capture, at: int, width: int) -> np.ndarray:
    """Bytes [at, at + width) of every packet's header as a big-endian integer (0 where the
    packet is shorter than the header)."""
    out = np.zeros(len(cap), dtype=np.uint64)
    ok = cap.lengths.astype(np.int64) >= OBI_HEADER
    base = cap.offsets.astype(np.int64)[ok]
    buf = np.asarray(cap.buf, dtype=np.uint8)
    val = np.zeros(base.shape[0], dtype=np.uint64)
    for k in range(width):
        val = (val << np.uint64(8)) | buf[base + at + k].astype(np.uint64)
    out[ok] = val
    return out


def copy_blocks(caps: list[Capture], first_src: int, keyed: bool = True) -> CopyBlocks:
    """The packets of a copy's files (sources ``first_src``, ``first_src + 1``, ...) with their
    keys (``keyed``; else zeros: a copy that is not paired need not be read)."""
    src, offs, lens, ts, kseq, ktime = [], [], [], [], [], []
    for k, cap in enumerate(caps):
        n = len(cap)
        src.append(np.full(n, first_src + k, dtype=np.uint16))
        offs.append(cap.offsets.astype(np.uint64))
        lens.append(cap.lengths.astype(np.uint16))
        ts.append(cap.ts_ns.astype(np.int64))
        if keyed:
            kseq.append((_header_bytes(cap, 6, 4) << np.uint64(8)) | _header_bytes(cap, 10, 1))
            ktime.append(_header_bytes(cap, 11, 8))
        else:
            kseq.append(np.zeros(n, dtype=np.uint64))
            ktime.append(np.zeros(n, dtype=np.uint64))
    return CopyBlocks(*(np.concatenate(x) for x in (src, offs, lens, ts, kseq, ktime)))


def pair_copies(a: CopyBlocks, b: CopyBlocks) -> tuple[np.ndarray, np.ndarray]:
    """For each block of A, the index of the same block in B (-1: B lacks it); and the
    indices of B's blocks that A lacks. A key repeated within one copy pairs once (A's last
    with B's first); the others stay unpaired."""
    na = len(a)
    tag = np.concatenate([np.zeros(na, dtype=np.int8), np.ones(len(b), dtype=np.int8)])
    pos = np.concatenate([np.arange(na), np.arange(len(b))])
    k_seq = np.concatenate([a.key_seq, b.key_seq])
    k_time = np.concatenate([a.key_time, b.key_time])
    order = np.lexsort((pos, tag, k_time, k_seq))
    ks, kt, tg = k_seq[order], k_time[order], tag[order]
    same = (ks[1:] == ks[:-1]) & (kt[1:] == kt[:-1]) & (tg[:-1] == 0) & (tg[1:] == 1)
    # Within a key all of A's entries sort before B's, so a pair is A's last and B's first, and
    # two pairs never share an entry.
    first = np.flatnonzero(same)
    b_of_a = np.full(na, -1, dtype=np.int64)
    b_of_a[pos[order[first]]] = pos[order[first + 1]]
    paired_b = np.zeros(len(b), dtype=bool)
    paired_b[pos[order[first + 1]]] = True
    return b_of_a, np.flatnonzero(~paired_b)
