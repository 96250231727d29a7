"""numpy dtypes of the replay structs of ``native/include/omdp/replay.h``.

The service builds schedules and reads the shared status through these; each is read from
the compiled C struct (omdp.c_layout), so it cannot disagree with the header.
"""
from __future__ import annotations

import numpy as np

from omdp.c_layout import c_dtype
from omdp.native import lib

COPIES = int(lib.OMDP_REPLAY_COPIES)
HIST_BUCKETS = int(lib.OMDP_REPLAY_HIST_BUCKETS)
HIST_SUB_BITS = int(lib.OMDP_REPLAY_HIST_SUB_BITS)
ERROR_LEN = int(lib.OMDP_REPLAY_ERROR_LEN)

PKT_DTYPE = c_dtype("omdp_replay_pkt_t")
"""One packet of a sender's lap (omdp_replay_pkt_t)."""

CONTROL_DTYPE = c_dtype("omdp_replay_control_t")

SENDER_STATUS_DTYPE = c_dtype("omdp_replay_sender_status_t")

LINE_STATS_DTYPE = c_dtype("omdp_replay_line_stats_t")

SENT_DTYPE = c_dtype("omdp_replay_sent_t")
"""One packet as sent, from a sender's log (omdp_replay_sent_t)."""

INTENDED_HEADER_DTYPE = c_dtype("omdp_replay_intended_header_t")

INTENDED_ENTRY_DTYPE = c_dtype("omdp_replay_intended_entry_t")

FRAME_DTYPE = c_dtype("omdp_replay_frame_t")
"""Header of a packet in a Vega ring (omdp_replay_frame_t); the packet's bytes follow."""

PKT_CONTROL = int(lib.OMDP_REPLAY_PKT_CONTROL)
PKT_ONLY_A = int(lib.OMDP_REPLAY_PKT_ONLY_A)
PKT_ONLY_B = int(lib.OMDP_REPLAY_PKT_ONLY_B)

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
