"""What a replay reports while it runs and after: rates, per-line counts, pacing error.

Built from the ctl segment's counters (numpy views, never the senders' time) by the
service; the HTTP API and the command line show the same model.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel

from omdp.metrics.definitions import DEFAULT_RULE
from ops.replay.native_layout import hist_bucket_bounds

ReplayState = Literal["idle", "starting", "running", "finished", "stopped", "failed"]

LAG_WARN_NS = 1_000_000
"""A sender more than this far behind its schedule is not achieving the target rate."""
SINK_WAIT_WARN_SHARE = 0.001
"""Waits for room in a ring are always counted; they are warned about once they add up to
this share of the run's time (a consumer that costs the schedule more than noise)."""
SUSTAINED_FRACTION = DEFAULT_RULE.min_achieved_fraction
"""docs/architecture.md "sustainable": >= 99.99% of the schedule kept (omdp.metrics.definitions)."""

_, _UPPER = hist_bucket_bounds()


class PacingStatus(BaseModel):
    """Pacing error (actual - intended send time) over the packets sent. Percentiles are
    rounded up to their histogram bucket (<= 3.2%) and are None (n/a) with fewer than
    10 / (1 - p) samples (docs/architecture.md)."""

    count: int = 0
    mean_ns: float | None = None
    p50_ns: float | None = None
    p90_ns: float | None = None
    p99_ns: float | None = None
    p999_ns: float | None = None
    max_ns: int | None = None


class LineStatus(BaseModel):
    """One line's counts, per copy."""

    line: int
    packets: dict[str, int]
    messages: dict[str, int]
    bytes: dict[str, int]
    dropped: dict[str, int]
    send_errors: dict[str, int]
    control_packets: int
    """Control packets sent (sequence resets, one per lap), beside the data packets."""
    messages_intended: int = 0
    """Data messages the line was meant to carry: sent on some copy or dropped on purpose."""
    intended_end_seq: int = 0
    """Sequence after the last data message handled (a receiver expecting less missed the tail)."""
    packets_dropped: int = 0
    """Data packets deliberately sent on no copy (--drop hit every copy): lost, not sent."""
    messages_dropped: int = 0
    """Their messages: messages_intended = messages sent (on some copy) + messages_dropped."""


class SenderStatus(BaseModel):
    """One sender process."""

    index: int
    pid: int
    cpu: int | None
    state: str
    lines: list[int]
    lap: int
    packets_done: int
    lag_ns: int
    batches: int
    behind_batches: int
    source_errors: int
    log_overruns: int
    cpu_s: float
    """CPU time the sender's loop has used (its load on its core: cpu_s / elapsed)."""
    preemptions: int
    """Times another task took the sender's CPU: each costs the packets due meanwhile a
    pacing error of up to a scheduler slice (milliseconds)."""
    policy: str = "other"
    """Scheduling policy of its loop: 'fifo' when real-time (--realtime), 'other' otherwise."""
    realtime: bool = False
    rt_priority: int = 0
    memory_locked: bool = False
    forced_rests: int = 0
    """Sleeps the real-time rest budget forced on the loop (it ran more than 8/9 of a CPU)."""
    forced_rest_s: float = 0.0
    ring_full_waits: int = 0
    """Times the sender found the ring full and waited for its consumer (back-pressure)."""
    ring_full_wait_s: float = 0.0
    ring_full_wait_rest_s: float = 0.0
    """Of that wait, the time a real-time loop slept between its slices: rest its budget counts."""
    error: str


class ReplayStatus(BaseModel):
    """The replay as a whole."""

    state: ReplayState
    run_id: str | None = None
    run_dir: str | None = None
    capture_dir: str | None = None
    target: str | None = None
    copies: list[str] = []
    loop: bool = False
    realtime_requested: bool = False
    realtime: bool = False
    """Every sender's loop runs real-time (SCHED_FIFO); see the warnings when one was refused."""
    rate: str | None = None
    target_pps: float | None = None
    target_x: float | None = None
    achieved_pps: float | None = None
    achieved_x: float | None = None
    achieved_fraction: float | None = None
    """Schedule progress over wall time (1.0: on schedule); below 0.9999 the rate is not met."""
    recent_pps: float | None = None
    """Packets/s over the last one to two seconds, while running (recorded bursts included)."""
    packets_sent: int = 0
    """Data packets sent on some copy, control packets aside (packets_dropped not included)."""
    packets_dropped: int = 0
    """Data packets deliberately sent on no copy (--drop); packets_sent + packets_dropped are
    the data packets handled."""
    messages_dropped: int = 0
    """Messages of those packets."""
    control_packets: int = 0
    """Control packets sent (sequence resets), not in packets_sent."""
    packets_due: int = 0
    packets_total: int | None = None
    """Data packets of the whole replay (None with --loop)."""
    messages_sent: int = 0
    messages_per_packet: float | None = None
    laps: int = 0
    started_ns: int | None = None
    ended_ns: int | None = None
    elapsed_s: float = 0.0
    pacing: PacingStatus = PacingStatus()
    lines: list[LineStatus] = []
    senders: list[SenderStatus] = []
    warnings: list[str] = []
    intended_table: str | None = None
    intended_parquet: str | None = None
    error: str | None = None


def pacing_from_hist(hist: np.ndarray, count: int, total_ns: int, max_ns: int) -> PacingStatus:
    """Percentiles of a pacing histogram (sum of the senders')."""
    if count <= 0:
        return PacingStatus()
    cum = np.cumsum(hist)

    def pct(p: float) -> float | None:
        if count < 10 / (1 - p):
            return None
        k = int(np.searchsorted(cum, math.ceil(p * count), side="left"))
        k = min(k, hist.shape[0] - 1)
        return float(min(_UPPER[k] - 1, max_ns)) if k < hist.shape[0] - 1 else float(max_ns)

    return PacingStatus(
        count=count,
        mean_ns=total_ns / count,
        p50_ns=pct(0.5),
        p90_ns=pct(0.9),
        p99_ns=pct(0.99),
        p999_ns=pct(0.999),
        max_ns=max_ns,
    )
