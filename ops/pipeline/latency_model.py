"""Latency from intended as a queue predicts it: what a feed handler partition with a given
cost per packet makes of a capture's bursts at a rate, before any run.

Why: the sweep's verdict bounds p99 latency from ``intended`` (1 ms by default), and what
decides it is not the mean load but the capture's bursts - OPRA's 10 ms peaks run several
times the mean, and packets arriving in one queue behind each other. A partition is modelled
as one server taking its lines' packets in intended order (all lines merged by time, as the
replay schedules them) and spending on each packet the measured work per packet scaled by
the packet's messages (decode and engine work grow with messages; the per-packet rest is
small). Packet k, due at t_k with service s_k, waits
    W_k = max(0, W_{k-1} + s_{k-1} - (t_k - t_{k-1}))
(the Lindley recursion). With T_k the sum of s_i for i < k, W_k = x_k - min_{j<=k} x_j where
x_k = T_k - t_k: a running minimum, one numpy pass for millions of packets. A message's
latency from intended is its packet's wait plus its packet's service (its result leaves the
engine when the packet's batch is done); percentiles are over messages.

It is a model: the batches grow under load and cost less per message then, and the
transports and the collectors add a few microseconds; on the pipeline's own runs it is
compared with the measured figures in docs/benchmarks.md ("Capacity planner"). Intended
times follow the replay's schedule (ops/replay/schedule.py): recorded gaps scaled so that a
lap carries ``rate x 24,000`` packets/s.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from omdp.units import fmt_ns
from ops.capture.stats import LinePackets
from ops.pipeline.assemble import deal_blocks
from ops.replay.rates import PAPER_1X_PPS


@dataclass
class Arrivals:
    """A capture's packets merged by recorded time: times (ns from the first), messages,
    line; and the schedule's lap span (recorded span plus one mean gap, as the replay's)."""

    t_ns: np.ndarray
    msgs: np.ndarray
    line: np.ndarray
    lap_span_ns: float

    @classmethod
    def of(cls, packets: dict[int, LinePackets]) -> Arrivals:
        """Merge the lines of ``packets`` (``ops.capture.stats.capture_packets``)."""
        if not packets or not any(lp.ts_ns.shape[0] for lp in packets.values()):
            raise ValueError("the capture has no packets")
        lines = sorted(packets)
        ts = np.concatenate([packets[ln].ts_ns.astype(np.int64) for ln in lines])
        msgs = np.concatenate([packets[ln].msgs.astype(np.int64) for ln in lines])
        line = np.concatenate([np.full(packets[ln].ts_ns.shape[0], ln, dtype=np.int64) for ln in lines])
        order = np.lexsort((line, ts))
        ts, msgs, line = ts[order], msgs[order], line[order]
        n = ts.shape[0]
        span = float(ts[-1] - ts[0])
        gap = span / (n - 1) if n > 1 and span > 0 else 1e9 / PAPER_1X_PPS
        return cls((ts - ts[0]).astype(np.float64), msgs, line, max(1.0, round(span + gap)))

    @property
    def mean_msgs(self) -> float:
        """Messages per packet, mean over the capture."""
        return float(self.msgs.mean())

    def intended_ns(self, rate_x: float) -> np.ndarray:
        """Each packet's intended time (ns from the start) at ``rate_x`` (the replay's scale:
        one lap of n packets lasts n / (rate_x x 24,000) s)."""
        lap_ns = self.t_ns.shape[0] * 1e9 / (rate_x * PAPER_1X_PPS)
        return self.t_ns * (lap_ns / self.lap_span_ns)

    def partitions(self, handlers: int) -> list[np.ndarray]:
        """Which packets each of ``handlers`` feed handler partitions takes (boolean masks):
        lines dealt in consecutive blocks, as the pipeline deals them (ops/pipeline/assemble.py)."""
        lines = sorted(int(x) for x in np.unique(self.line))
        handler_of = deal_blocks(lines, min(handlers, len(lines)))
        owner = np.array([handler_of[int(x)] for x in lines])[np.searchsorted(lines, self.line)]
        return [owner == h for h in range(min(handlers, len(lines)))]


def sojourn_ns(intended_ns: np.ndarray, service_ns: np.ndarray) -> np.ndarray:
    """Each packet's time from its intended time to the end of its service in a FIFO
    single-server queue (the module docstring's recursion, in closed form)."""
    t = np.asarray(intended_ns, dtype=np.float64)
    s = np.asarray(service_ns, dtype=np.float64)
    if t.shape[0] == 0:
        return t
    before = np.empty_like(s)
    before[0] = 0.0
    np.cumsum(s[:-1], out=before[1:])
    x = before - t
    wait = x - np.minimum.accumulate(x)
    return wait + s


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """The smallest value that fraction q of the weight stays within, for each q."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order], dtype=np.float64)
    total = cum[-1]
    return [float(values[order][min(int(np.searchsorted(cum, q * total, side="left")), len(cum) - 1)]) for q in qs]


@dataclass
class Projection:
    """Latency from intended (ns) over messages, as the queueing model projects it."""

    rate_x: float
    handlers: int
    ns_per_packet: float
    p50_ns: float
    p99_ns: float
    max_ns: float


def project(arr: Arrivals, rate_x: float, ns_per_packet: float, handlers: int = 1) -> Projection:
    """Latency from intended at ``rate_x`` for ``handlers`` partitions each spending
    ``ns_per_packet`` on a packet of the capture's mean messages (scaled by messages)."""
    t = arr.intended_ns(rate_x)
    service = arr.msgs * (ns_per_packet / arr.mean_msgs)
    lat = np.empty_like(t)
    for mask in arr.partitions(handlers):
        lat[mask] = sojourn_ns(t[mask], service[mask])
    p50, p99 = _weighted_quantiles(lat, arr.msgs.astype(np.float64), (0.5, 0.99))
    return Projection(rate_x, handlers, ns_per_packet, p50, p99, float(lat.max()))


def _largest_within(within: Callable[[float], bool], hi: float, tolerance: float) -> float:
    """The largest x in [0, hi] with ``within(x)``, for a ``within`` true below some point
    and false above it (bisection to ``tolerance`` of ``hi``)."""
    lo = 0.0
    while hi - lo > tolerance * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if within(mid) else (lo, mid)
    return lo


def max_cost_for_bound(arr: Arrivals, rate_x: float, p99_bound_ns: float, handlers: int = 1,
                       tolerance: float = 0.005) -> float:
    """The largest work per packet whose projected p99 stays within ``p99_bound_ns`` at
    ``rate_x`` (the p99 grows with the cost). Above the start's upper end the mean load
    alone exceeds the partitions."""
    return _largest_within(lambda c: project(arr, rate_x, c, handlers).p99_ns <= p99_bound_ns,
                           1e9 / (rate_x * PAPER_1X_PPS) * handlers, tolerance)


def max_rate_for_bound(arr: Arrivals, ns_per_packet: float, p99_bound_ns: float, handlers: int = 1,
                       tolerance: float = 0.005) -> float:
    """The highest rate (x) whose projected p99 stays within ``p99_bound_ns`` at
    ``ns_per_packet`` (the p99 grows with the rate); 0 when even the service of one packet
    exceeds the bound."""
    if ns_per_packet * float(arr.msgs.max()) / arr.mean_msgs > p99_bound_ns:
        return 0.0
    return _largest_within(lambda r: project(arr, r, ns_per_packet, handlers).p99_ns <= p99_bound_ns,
                           1e9 / (ns_per_packet * PAPER_1X_PPS) * handlers, tolerance)


@dataclass
class LatencyOutlook:
    """What ``omdp capacity`` says of latency from intended: the measured layout and the
    proposed one at the planned rate, and the cost and rate that keep p99 within the bound."""

    bound_ns: float
    measured: Projection
    proposed: Projection
    max_ns_per_packet: float   # measured layout's partitions at the planned rate
    max_rate_x: float          # measured layout's partitions at the measured cost

    def to_dict(self) -> dict:
        """Plain JSON-able form."""
        return asdict(self)

    def text(self) -> str:
        """The lines the command prints."""
        def proj(p: Projection) -> str:
            return (f"{p.handlers} feed handler partition(s) at {p.rate_x:g}x: p50 {fmt_ns(p.p50_ns)}, "
                    f"p99 {fmt_ns(p.p99_ns)}, max {fmt_ns(p.max_ns)}")
        m = self.measured
        return "\n".join([
            f"  latency from intended, queueing model on the capture's packets ({m.ns_per_packet:,.0f} ns of work "
            f"per packet; ops/pipeline/latency_model.py):",
            f"    measured layout, {proj(m)}",
            f"    proposed layout, {proj(self.proposed)}",
            f"    p99 <= {fmt_ns(self.bound_ns)} with the measured layout: at {m.rate_x:g}x needs <= "
            f"{self.max_ns_per_packet:,.0f} ns per packet; at {m.ns_per_packet:,.0f} ns holds up to "
            f"{self.max_rate_x:.1f}x"])


def latency_outlook(arr: Arrivals, rate_x: float, ns_per_packet: float, measured_handlers: int,
                    proposed_handlers: int, bound_ns: float) -> LatencyOutlook:
    """The projections ``LatencyOutlook`` holds."""
    return LatencyOutlook(
        bound_ns,
        project(arr, rate_x, ns_per_packet, measured_handlers),
        project(arr, rate_x, ns_per_packet, proposed_handlers),
        max_cost_for_bound(arr, rate_x, bound_ns, measured_handlers),
        max_rate_for_bound(arr, ns_per_packet, bound_ns, measured_handlers))
