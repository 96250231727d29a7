"""Statistics of a capture, per line and over all lines (``omdp capture stats``).

Definitions (docs/manifest.md "Capture statistics"):
- span: last packet timestamp minus first; mean rates are counts over the span.
- peak over a window W (100 ms, 10 ms): the most packets (messages) whose timestamps fall
  in any [t, t + W) starting at a packet, divided by W - an exact sliding-window maximum.
- messages per packet from the decoded packets, bytes per packet = the OPRA packet (UDP
  payload) length; category mix from the C batch decoder over every packet.
Every number comes from array passes and one C decode call per batch of packets.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from feedhandlers.captures import read_pcap
from feedhandlers.packet_batch import PacketBatchDecoder
from ops.capture.locate import capture_lines

WINDOWS_NS = {"100ms": 100_000_000, "10ms": 10_000_000}
DECODE_BATCH = 1 << 15
CATEGORY_NAMES = {"k": "quote", "a": "last sale", "d": "open interest", "f": "summary", "Y": "underlying value",
                  "C": "admin", "H": "control", "R": "series mapping", "?": "default"}


@dataclass
class RateStats:
    """Counts, rates and shapes of one line's (or all lines') packets."""

    packets: int
    messages: int
    payload_bytes: int
    span_s: float
    packets_per_s: float
    messages_per_s: float
    peak_packets_per_s: dict[str, float]
    peak_messages_per_s: dict[str, float]
    messages_per_packet: dict[str, float]
    bytes_per_packet: dict[str, float]
    categories: dict[str, int] = field(default_factory=dict)
    bad_packets: int = 0
    """Malformed packets, truncated ones included."""
    truncated_packets: int = 0
    """Packet records cut off by the end of a file (``feedhandlers.captures.pcap.TruncatedTail``)."""
    truncated: list[str] = field(default_factory=list)
    """Where each truncation is (``TruncatedTail.describe()``)."""
    malformed_frames: list[str] = field(default_factory=list)
    """Per file, its frames cut short or with a bad IPv4/UDP header (``MalformedFrames.describe()``)."""

    def to_dict(self) -> dict:
        """Plain JSON-able form."""
        return asdict(self)


@dataclass
class CaptureStats:
    """Per-line and total statistics of a capture."""

    source: str
    lines: dict[int, RateStats]
    total: RateStats

    def to_dict(self) -> dict:
        """Plain JSON-able form."""
        return {"source": self.source, "lines": {str(k): v.to_dict() for k, v in self.lines.items()},
                "total": self.total.to_dict()}


def peak_rate(ts: np.ndarray, weight_cum: np.ndarray, window_ns: int) -> float:
    """Largest weight in any window [t_i, t_i + W) over sorted ``ts``, per second.

    ``weight_cum`` is the cumulative weight with a leading 0 (length len(ts) + 1).
    """
    if ts.shape[0] == 0:
        return 0.0
    end = np.searchsorted(ts, ts + window_ns, side="left")
    best = (weight_cum[end] - weight_cum[:-1]).max()
    return float(best) * 1e9 / window_ns


def _shape(values: np.ndarray) -> dict[str, float]:
    if values.shape[0] == 0:
        return {"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    p50, p99 = np.percentile(values, [50, 99])
    return {"mean": round(float(values.mean()), 3), "p50": float(p50), "p99": float(p99), "max": float(values.max())}


def rate_stats(ts: np.ndarray, msgs: np.ndarray, sizes: np.ndarray, categories: dict[str, int] | None = None,
               bad_packets: int = 0) -> RateStats:
    """Statistics of packets at times ``ts`` (ns, any order) with ``msgs`` messages and
    ``sizes`` bytes each."""
    order = np.argsort(ts, kind="stable")
    ts, msgs, sizes = ts[order].astype(np.int64), msgs[order].astype(np.int64), sizes[order].astype(np.int64)
    n = int(ts.shape[0])
    span = (int(ts[-1]) - int(ts[0])) / 1e9 if n > 1 else 0.0
    ones = np.zeros(n + 1, dtype=np.int64)
    ones[1:] = np.arange(1, n + 1)
    mcum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(msgs, out=mcum[1:])
    return RateStats(
        packets=n,
        messages=int(msgs.sum()),
        payload_bytes=int(sizes.sum()),
        span_s=round(span, 9),
        packets_per_s=n / span if span > 0 else 0.0,
        messages_per_s=float(msgs.sum()) / span if span > 0 else 0.0,
        peak_packets_per_s={k: peak_rate(ts, ones, w) for k, w in WINDOWS_NS.items()},
        peak_messages_per_s={k: peak_rate(ts, mcum, w) for k, w in WINDOWS_NS.items()},
        messages_per_packet=_shape(msgs),
        bytes_per_packet=_shape(sizes),
        categories=dict(sorted((categories or {}).items())),
        bad_packets=bad_packets,
    )


def _line_arrays(files: list[Path], truncated: list[str],
                 malformed: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Packet times, message counts and sizes of a line's files; category counts. A file
    cut inside a packet adds its ``TruncatedTail`` to ``truncated`` and one bad packet; its
    frames cut short or with a bad IPv4/UDP header add their ``MalformedFrames`` to
    ``malformed`` and their count. The line's first packet tells its format (FAST V2 or OBI v6)."""
    decoder: PacketBatchDecoder | None = None
    ts, msgs, sizes = [], [], []
    cats = np.zeros(256, dtype=np.int64)
    bad = 0
    for f in files:
        cap = read_pcap(f)
        if cap.meta.get("truncated_tail") is not None:
            truncated.append(cap.meta["truncated_tail"].describe())
            bad += int(cap.meta.get("truncated_packets", 1))
        if cap.meta.get("malformed_frames") is not None:
            malformed.append(cap.meta["malformed_frames"].describe())
            bad += int(cap.meta["malformed_packets"])
        if decoder is None and len(cap):
            decoder = PacketBatchDecoder.for_packet(cap.payload(0))
        for s in range(0, len(cap), DECODE_BATCH):
            e = min(len(cap), s + DECODE_BATCH)
            assert decoder is not None
            out = decoder.decode(cap.buf, cap.offsets[s:e], cap.lengths[s:e], s)
            cats += np.bincount(out.records["category"], minlength=256)
            msgs.append(out.counts.copy())
            bad += out.bad
        ts.append(cap.ts_ns)
        sizes.append(cap.lengths.astype(np.int64))
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)  # noqa: E731
    return cat(ts), cat(msgs), cat(sizes), cats, bad


def _category_dict(counts: np.ndarray) -> dict[str, int]:
    return {chr(c): int(counts[c]) for c in np.flatnonzero(counts)}


@dataclass
class LinePackets:
    """One line's packets as arrays (file order): recorded times (ns), messages and bytes of
    each, and what the pass counted besides."""

    ts_ns: np.ndarray
    msgs: np.ndarray
    sizes: np.ndarray
    categories: dict[str, int]
    bad_packets: int
    truncated: list[str]
    malformed: list[str] = field(default_factory=list)


def capture_packets(path: str | Path, copy: str = "a", progress: bool = False) -> dict[int, LinePackets]:
    """Every packet of the capture at ``path`` (a capture directory or one pcap), per line:
    the one decoding pass that the statistics and the capacity planner's queueing model
    (ops/pipeline/latency_model.py) are computed from."""
    out: dict[int, LinePackets] = {}
    for ln, files in tqdm(sorted(capture_lines(path, copy).items()), desc="lines", unit="line", disable=not progress,
                          leave=False):
        truncated: list[str] = []
        malformed: list[str] = []
        ts, msgs, sizes, cats, bad = _line_arrays(files, truncated, malformed)
        out[ln] = LinePackets(ts, msgs, sizes, _category_dict(cats), bad, truncated, malformed)
    return out


def stats_of(source: str, packets: dict[int, LinePackets]) -> CaptureStats:
    """Per-line and total statistics of ``packets`` (``capture_packets``)."""
    per_line: dict[int, RateStats] = {}
    for ln, lp in packets.items():
        per_line[ln] = rate_stats(lp.ts_ns, lp.msgs, lp.sizes, lp.categories, lp.bad_packets)
        per_line[ln].truncated_packets, per_line[ln].truncated = len(lp.truncated), lp.truncated
        per_line[ln].malformed_frames = lp.malformed
    cats: dict[str, int] = {}
    for lp in packets.values():
        for c, n in lp.categories.items():
            cats[c] = cats.get(c, 0) + n
    lps = list(packets.values())
    total = rate_stats(np.concatenate([lp.ts_ns for lp in lps]), np.concatenate([lp.msgs for lp in lps]),
                       np.concatenate([lp.sizes for lp in lps]), cats, sum(lp.bad_packets for lp in lps))
    truncated = [t for lp in lps for t in lp.truncated]
    total.truncated_packets, total.truncated = len(truncated), truncated
    total.malformed_frames = [m for lp in lps for m in lp.malformed]
    return CaptureStats(source, per_line, total)


def capture_stats(path: str | Path, copy: str = "a", progress: bool = False) -> CaptureStats:
    """Statistics of the capture at ``path`` (a capture directory or one pcap)."""
    return stats_of(str(path), capture_packets(path, copy, progress))


def format_stats(stats: CaptureStats) -> str:
    """A readable report: one row per line and a total, then the category mix."""
    head = (f"{'line':>5} {'packets':>10} {'messages':>11} {'pkt/s':>9} {'msg/s':>10} {'pk100ms':>10} {'pk10ms':>10} "
            f"{'msg/pkt':>7} {'p99':>4} {'B/pkt':>6} {'p99':>5}")
    unit = "  (pk100ms / pk10ms: peak messages/s over any 100 ms / 10 ms window)"
    rows = [head]
    def row(name: str, s: RateStats) -> str:
        return (f"{name:>5} {s.packets:>10,} {s.messages:>11,} {s.packets_per_s:>9,.0f} {s.messages_per_s:>10,.0f} "
                f"{s.peak_messages_per_s['100ms']:>10,.0f} {s.peak_messages_per_s['10ms']:>10,.0f} "
                f"{s.messages_per_packet['mean']:>7.2f} {s.messages_per_packet['p99']:>4.0f} "
                f"{s.bytes_per_packet['mean']:>6.1f} {s.bytes_per_packet['p99']:>5.0f}")
    for ln, s in stats.lines.items():
        rows.append(row(str(ln), s))
    t = stats.total
    rows.append(row("all", t))
    rows.append(unit)
    rows.append(f"span {t.span_s:.3f} s; peak packets/s: 100 ms {t.peak_packets_per_s['100ms']:,.0f}, "
                f"10 ms {t.peak_packets_per_s['10ms']:,.0f}; malformed packets: {t.bad_packets}"
                + (f" ({t.truncated_packets} truncated)" if t.truncated_packets else ""))
    rows += [f"truncated: {where}" for where in t.truncated]
    rows += [f"malformed: {where}" for where in t.malformed_frames]
    total_msgs = max(sum(t.categories.values()), 1)
    mix = ", ".join(f"{c} {CATEGORY_NAMES.get(c, '?')} {n:,} ({100.0 * n / total_msgs:.3f}%)"
                    for c, n in sorted(t.categories.items(), key=lambda kv: -kv[1]))
    rows.append(f"categories: {mix}")
    return "\n".join(rows)
