"""numpy twins of the replay structs of ``native/include/omdp/replay.h``.

The service builds schedules and reads the shared status through these; the layout test
(tests/unit/test_replay_layout.py) pins every offset to the C structs.
"""
from __future__ import annotations

import numpy as np

COPIES = 2
HIST_BUCKETS = 1184
HIST_SUB_BITS = 5
ERROR_LEN = 256

PKT_DTYPE = np.dtype(
    [
        ("off", "<i8"),
        ("src_off", "<u8"),
        ("line_index", "<u4"),
        ("src", "<u2"),
        ("len", "<u2"),
        ("line", "<u2"),
        ("flags", "<u2"),
        ("reserved", "<u4"),
    ],
    align=True,
)
"""One packet of a sender's lap (omdp_replay_pkt_t)."""

CONTROL_DTYPE = np.dtype(
    [
        ("magic", "<u8"),
        ("version", "<u4"),
        ("n_senders", "<u4"),
        ("command", "<u4"),
        ("reserved", "<u4"),
        ("start_ns", "<i8"),
        ("end_ns", "<i8"),
        ("map_seq", "<u8"),
        ("anchor_ns", "<i8"),
        ("anchor_off", "<i8"),
        ("scale", "<f8"),
        ("creator_pid", "<i8"),
        ("creator_start_time", "<u8"),
        ("pad", "u1", (40,)),
    ],
    align=True,
)

SENDER_STATUS_DTYPE = np.dtype(
    [
        ("pid", "<i8"),
        ("state", "<u4"),
        ("cpu", "<i4"),
        ("lap", "<u8"),
        ("position", "<u8"),
        ("packets_done", "<u8"),
        ("control_done", "<u8"),
        ("next_intended_ns", "<i8"),
        ("last_sent_ns", "<i8"),
        ("last_intended_ns", "<i8"),
        ("heartbeat_ns", "<i8"),
        ("batches", "<u8"),
        ("behind_batches", "<u8"),
        ("source_errors", "<u8"),
        ("pacing_count", "<u8"),
        ("pacing_max_ns", "<i8"),
        ("pacing_sum_ns", "<u8"),
        ("log_overruns", "<u8"),
        ("cpu_ns", "<i8"),
        ("preemptions", "<u8"),
        ("policy", "<i4"),
        ("rt_priority", "<i4"),
        ("rt_requested", "<u4"),
        ("memory_locked", "<u4"),
        ("rt_errno", "<i4"),
        ("mlock_errno", "<i4"),
        ("rests", "<u8"),
        ("rest_ns", "<i8"),
        ("sink_waits", "<u8"),
        ("sink_wait_ns", "<i8"),
        ("pad", "u1", (48,)),
        ("error", "S256"),
        ("pacing_hist", "<u8", (HIST_BUCKETS,)),
    ],
    align=True,
)

LINE_STATS_DTYPE = np.dtype(
    [
        ("packets", "<u8", (COPIES,)),
        ("messages", "<u8", (COPIES,)),
        ("bytes", "<u8", (COPIES,)),
        ("dropped", "<u8", (COPIES,)),
        ("send_errors", "<u8", (COPIES,)),
        ("control_packets", "<u8"),
        ("intended_messages", "<u8"),
        ("intended_end_seq", "<u8"),
        ("lost_packets", "<u8"),
        ("lost_messages", "<u8"),
        ("pad", "u1", (8,)),
    ],
    align=True,
)

SENT_DTYPE = np.dtype(
    [
        ("intended_ns", "<i8"),
        ("sent_ns", "<i8", (COPIES,)),
        ("block_seq", "<u8"),
        ("line", "<u2"),
        ("messages", "<u2"),
        ("reserved", "<u4"),
    ],
    align=True,
)
"""One packet as sent, from a sender's log (omdp_replay_sent_t)."""

INTENDED_HEADER_DTYPE = np.dtype(
    [
        ("magic", "<u8"),
        ("version", "<u4"),
        ("max_line", "<u4"),
        ("capacity", "<u8"),
        ("creator_pid", "<i8"),
        ("run_id", "S48"),
        ("creator_start_time", "<u8"),
        ("pad", "u1", (40,)),
    ],
    align=True,
)

INTENDED_ENTRY_DTYPE = np.dtype([("tag", "<u8"), ("intended_ns", "<i8")], align=True)

FRAME_DTYPE = np.dtype(
    [
        ("intended_ns", "<i8"),
        ("sent_ns", "<i8"),
        ("line", "<u2"),
        ("copy", "u1"),
        ("flags", "u1"),
        ("length", "<u2"),
        ("reserved", "<u2"),
    ],
    align=True,
)
"""Header of a packet in a Vega ring (omdp_replay_frame_t); the packet's bytes follow."""

PKT_CONTROL = 0x1

SENDER_LOADING, SENDER_READY, SENDER_RUNNING, SENDER_DONE, SENDER_FAILED = range(5)
SENDER_STATES = ("loading", "ready", "running", "done", "failed")


def hist_bucket_bounds() -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds (ns, upper exclusive) of every pacing-histogram bucket, by the
    formula of ``omdp_replay_hist_index`` in replay.h."""
    sub = 1 << HIST_SUB_BITS
    idx = np.arange(HIST_BUCKETS, dtype=np.int64)
    lower = idx.copy()
    upper = idx + 1
    big = idx >= sub
    e = (idx[big] - sub) // sub + HIST_SUB_BITS
    m = (idx[big] - sub) % sub
    lower[big] = (sub + m) << (e - HIST_SUB_BITS)
    upper[big] = lower[big] + (np.int64(1) << (e - HIST_SUB_BITS))
    return lower, upper
