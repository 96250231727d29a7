"""The queueing floor of a schedule: the pacing error a sender with a fixed cost per packet
cannot avoid, however well it is scheduled.

A sender that needs ``cost`` ns per packet and sends each packet at its intended time, or
as soon as the one before it is done, starts packet k at
    S_k = max(t_k, S_{k-1} + cost)
(the Lindley recursion of a single-server queue). Its pacing error S_k - t_k is zero only
while the schedule leaves ``cost`` between packets; a recorded capture is bursty at the
microsecond scale (OPRA packets come in microbursts), so at a high rate the packets of a burst
queue behind each other. With u_k = S_k - k * cost the recursion reads u_k = max(t_k - k *
cost, u_{k-1}): a running maximum, so numpy computes it for millions of packets in one pass.

Comparing a measured pacing error with this floor, for the cost the same sender showed flat
out, tells a sender that is late (preempted, waiting, slow) from a schedule that asks more than
the sink can take.
"""
from __future__ import annotations

import numpy as np

from ops.replay.schedule import Schedule

FLOOR_MARGIN_NS = 10_000
"""A measured p99 within the floor's p99 plus this (or plus FLOOR_MARGIN_FRACTION of it, the
larger) is explained by the schedule: the sender's own lateness adds no more."""
FLOOR_MARGIN_FRACTION = 0.25


def lindley_errors(intended_ns: np.ndarray, cost_ns: float) -> np.ndarray:
    """Pacing error (ns, float64) of each packet for a sender that needs ``cost_ns`` per
    packet, sending packets due at ``intended_ns`` (non-decreasing) in order."""
    t = np.asarray(intended_ns, dtype=np.float64)
    if t.shape[0] == 0:
        return t
    k = np.arange(t.shape[0], dtype=np.float64) * float(cost_ns)
    start = np.maximum.accumulate(t - k)
    start += k
    start -= t
    return start


def floor_percentiles(intended_ns: np.ndarray, cost_ns: float, quantiles: tuple[float, ...] = (0.5, 0.99)) -> list[float]:
    """The floor's pacing error at ``quantiles`` (each the smallest error that many packets
    stay within, as the measured percentiles are)."""
    err = lindley_errors(intended_ns, cost_ns)
    if err.shape[0] == 0:
        return [0.0 for _ in quantiles]
    return [float(v) for v in np.quantile(err, quantiles, method="higher")]


def run_intended_ns(schedule: Schedule, scale: float, count: int, *, loop: bool,
                    lines: list[int] | None = None) -> np.ndarray:
    """Intended times (ns from the start) of the first ``count`` packets a sender of
    ``lines`` (None: every line) sends, control packets and laps included: the schedule a
    run with one time map asked for."""
    pkts = schedule.pkts if lines is None else schedule.lines_subset(lines)
    n = pkts.shape[0]
    if n == 0 or count <= 0:
        return np.zeros(0, dtype=np.float64)
    laps = -(-count // n) if loop else 1
    off = pkts["off"].astype(np.float64)
    if laps > 1:
        off = (off[None, :] + np.arange(laps, dtype=np.float64)[:, None] * float(schedule.lap_span)).ravel()
    return off[:count] * scale


def within_floor(measured_ns: float | None, floor_ns: float | None) -> bool | None:
    """True when a measured percentile is explained by the floor (see FLOOR_MARGIN_NS)."""
    if measured_ns is None or floor_ns is None:
        return None
    return measured_ns <= floor_ns + max(FLOOR_MARGIN_NS, FLOOR_MARGIN_FRACTION * floor_ns)
