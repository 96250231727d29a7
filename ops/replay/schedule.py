"""The merged schedule of a replay: every packet of the selected lines in time order, with
its offset on the schedule, built once with numpy.

A lap is the capture played once. Offsets are in *schedule units*: recorded nanoseconds
since the first packet for ``--rate``/``--speed`` (the recorded gaps shape the schedule), or
``PPS_UNIT`` per packet for ``--pps`` (evenly spaced in recorded order). The time map of the
C loop turns units into intended times: intended = anchor_ns + (off - anchor_off) * scale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from feedhandlers.captures import Capture
from ops.replay.copy_pairing import copy_blocks, pair_copies
from ops.replay.native_layout import PKT_CONTROL, PKT_DTYPE, PKT_ONLY_A, PKT_ONLY_B
from ops.replay.rates import PAPER_1X_PPS, RateError, RateSpec

PPS_UNIT = 1000
"""Schedule units per packet of a ``--pps`` schedule."""


@dataclass
class Schedule:
    """One lap of every selected line, merged in time order.

    ``pkts`` (PKT_DTYPE) has the sequence-reset control packets first (with ``loop``), then
    the data packets by recorded time (ties by line, then position in the line).
    ``sources[i]`` is the file packets with ``src == i`` come from; the control packets come
    from ``control_buf`` at source index ``len(sources)``.
    """

    pkts: np.ndarray
    sources: list[Path]
    control_buf: bytes
    lap_span: int
    recorded_timing: bool
    recorded_pps: float
    data_offsets: np.ndarray
    line_packets: dict[int, int]

    @property
    def n_data(self) -> int:
        """Data packets per lap (control packets not counted)."""
        return int(self.data_offsets.shape[0])

    @property
    def control_src(self) -> int:
        return len(self.sources)

    def scale_for(self, rate: RateSpec) -> float:
        """Nanoseconds per schedule unit that make this schedule run at ``rate``."""
        if rate.recorded_timing != self.recorded_timing:
            kind = "recorded timing (--rate, --speed)" if self.recorded_timing else "fixed pps (--pps)"
            raise ValueError(f"this schedule uses {kind}; {rate.describe()} needs the other kind")
        lap_ns = self.n_data * 1e9 / rate.check_target(self.recorded_pps)
        scale = lap_ns / self.lap_span
        if not (math.isfinite(scale) and scale > 0):
            raise RateError(f"{rate.describe()}: the pacing cannot represent it on this capture "
                            f"(ns per schedule unit {scale!r})")
        return scale

    def lines_subset(self, lines: list[int]) -> np.ndarray:
        """The packets of ``lines``, in schedule order (a sender's share)."""
        return self.pkts[np.isin(self.pkts["line"], np.asarray(lines, dtype=np.uint16))]

    def due(self, offset: float, loop: bool) -> int:
        """Data packets whose schedule offset is <= ``offset`` (counting every lap)."""
        if offset < 0:
            return 0
        laps, rest = divmod(offset, self.lap_span) if loop else (0, offset)
        n = int(np.searchsorted(self.data_offsets, rest, side="right"))
        return int(laps) * self.n_data + n


def _line_entries(line: int, caps: list[Capture], first_src: int, b_caps: list[Capture] | None,
                  b_first_src: int) -> tuple[np.ndarray, np.ndarray]:
    """A line's schedule entries and their recorded times: its A packets, each with its B
    twin's bytes when ``b_caps`` are given (``copy_pairing``), then the blocks only B has."""
    a = copy_blocks(caps, first_src, keyed=b_caps is not None)
    p = np.zeros(len(a), dtype=PKT_DTYPE)
    p["src_off"], p["len"], p["src"], p["line"] = a.offsets, a.lengths, a.src, line
    p["line_index"] = np.arange(len(a), dtype=np.uint32)
    ts = a.ts_ns
    if b_caps is None:
        return ts, p
    b = copy_blocks(b_caps, b_first_src)
    b_of_a, b_only = pair_copies(a, b)
    twin = b_of_a >= 0
    p["b_off"][twin], p["b_len"][twin], p["b_src"][twin] = (b.offsets[b_of_a[twin]], b.lengths[b_of_a[twin]],
                                                           b.src[b_of_a[twin]])
    p["flags"][~twin] = PKT_ONLY_A
    q = np.zeros(b_only.shape[0], dtype=PKT_DTYPE)
    q["src_off"], q["len"], q["src"], q["line"] = b.offsets[b_only], b.lengths[b_only], b.src[b_only], line
    q["line_index"] = np.arange(len(a), len(a) + b_only.shape[0], dtype=np.uint32)
    q["flags"] = PKT_ONLY_B
    return np.concatenate([ts, b.ts_ns[b_only]]), np.concatenate([p, q])


def build_schedule(captures: dict[int, list[Capture]], files: dict[int, list[Path]], *, recorded_timing: bool,
                   control_packets: dict[int, bytes] | None = None,
                   b_captures: dict[int, list[Capture]] | None = None,
                   b_files: dict[int, list[Path]] | None = None) -> Schedule:
    """Merge the lines' packets by time into one lap (see ``Schedule``). A line in
    ``b_captures`` (its B copy's files, ``b_files``) sends B's own blocks on copy B."""
    sources: list[Path] = []
    parts = []
    line_packets: dict[int, int] = {}
    b_captures = b_captures or {}
    for line in sorted(captures):
        first_src = len(sources)
        sources.extend(files[line])
        b_caps = b_captures.get(line)
        b_first = len(sources)
        if b_caps is not None:
            sources.extend((b_files or {})[line])
        t, p = _line_entries(line, captures[line], first_src, b_caps, b_first)
        parts.append((t, p))
        line_packets[line] = int(p.shape[0])
    ts = np.concatenate([t for t, _ in parts])
    data = np.concatenate([p for _, p in parts])
    order = np.lexsort((data["line_index"], data["line"], ts))
    data = data[order]
    ts = ts[order]
    n = data.shape[0]
    t0 = int(ts[0])
    span = int(ts[-1]) - t0
    gap = span / (n - 1) if n > 1 and span > 0 else 1e9 / PAPER_1X_PPS
    recorded_span = max(1, int(round(span + gap)))
    recorded_pps = n * 1e9 / recorded_span
    if recorded_timing:
        data["off"] = ts - t0
        lap_span = recorded_span
    else:
        data["off"] = np.arange(n, dtype=np.int64) * PPS_UNIT
        lap_span = n * PPS_UNIT

    control_buf = b""
    if control_packets:
        ctrl = np.zeros(len(control_packets), dtype=PKT_DTYPE)
        offset = 0
        for k, line in enumerate(sorted(control_packets)):
            pkt = control_packets[line]
            for name, v in (("src_off", offset), ("src", len(sources)), ("len", len(pkt)), ("line", line),
                            ("flags", PKT_CONTROL)):
                ctrl[name][k] = v
            offset += len(pkt)
        control_buf = b"".join(control_packets[line] for line in sorted(control_packets))
        data_offsets = data["off"].copy()
        pkts = np.concatenate([ctrl, data])
    else:
        data_offsets = data["off"].copy()
        pkts = data
    return Schedule(
        pkts=pkts,
        sources=sources,
        control_buf=control_buf,
        lap_span=int(lap_span),
        recorded_timing=recorded_timing,
        recorded_pps=float(recorded_pps),
        data_offsets=data_offsets,
        line_packets=line_packets,
    )


def assign_lines(line_packets: dict[int, int], senders: int) -> list[list[int]]:
    """Split lines among ``senders`` so each sends about as many packets (largest first, each
    to the least loaded). Never more senders than lines."""
    senders = max(1, min(senders, len(line_packets)))
    load = [0] * senders
    out: list[list[int]] = [[] for _ in range(senders)]
    for line in sorted(line_packets, key=lambda ln: (-line_packets[ln], ln)):
        k = min(range(senders), key=lambda i: (load[i], i))
        out[k].append(line)
        load[k] += line_packets[line]
    return [sorted(x) for x in out]
