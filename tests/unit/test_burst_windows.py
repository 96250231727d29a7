"""The busiest 10 ms windows a run kept up with (omdp.metrics.burst_windows), from hand-built
intended and samples tables: every figure follows from the counts put in."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from omdp.metrics.burst_windows import WINDOW_NS, burst_windows, read_burst_windows
from omdp.metrics.run_files import to_table, write_run_file

T0 = 1_800_000_000_000_000_000
MS = 1_000_000
BOUND_US = 1000.0


def intended(rows: list[tuple[int, int, str, int, int, int]]) -> pa.Table:
    """(line, block_seq, copy, intended_ns, sent lag ns, messages) as intended.parquet rows."""
    return to_table("intended.parquet", [
        {"line": ln, "block_seq": seq, "copy": c, "intended_ns": t, "sent_ns": t + lag, "messages": n}
        for ln, seq, c, t, lag, n in rows])


def samples(rows: list[tuple[int, int]]) -> pa.Table:
    """(intended, latency from intended) as the two columns the windows read."""
    return pa.table({"intended": [t for t, _ in rows], "mc_in": [t + d for t, d in rows]})


# A block every 30 ms; a 10 ms window starts every 1 ms, from 0 to 110 ms: 111 windows, each
# holding at most one block.
# 0 ms: 20 messages, line 1 block 0 sent as A and B (counted once), on time: window 0.
# 30 ms: 100 messages, the busiest; its B copy left 5 ms late but A on time: windows 21-30, kept.
# 60 ms: 60 messages, 2 ms late: windows 51-60 not kept (sent late).
# 90 ms: 50 messages on time; a sample planned at 91 ms arrived 1.5 ms late: windows 82-91 not
#        kept (queued), window 81 (90 but not 91) kept.
# 119 ms: 10 messages on time: window 110.
ROWS = [
    (1, 0, "A", T0, 10_000, 20), (1, 0, "B", T0, 12_000, 20),
    (1, 20, "A", T0 + 30 * MS, 0, 100), (1, 20, "B", T0 + 30 * MS, 5 * MS, 100),
    (1, 120, "A", T0 + 60 * MS, 2 * MS, 60),
    (2, 10, "A", T0 + 90 * MS, 0, 50),
    (1, 180, "B", T0 + 119 * MS, 100, 10),
]
SAMPLES = [(T0 + 1 * MS, 50_000), (T0 + 30 * MS, 900_000), (T0 + 91 * MS, 1_500_000), (T0 + 119 * MS, 20_000)]
RATE = 1e9 / WINDOW_NS  # a window's messages -> msgs/s


def test_windows_count_messages_once_and_judge_each_window() -> None:
    w = burst_windows(intended(ROWS), samples(SAMPLES), BOUND_US, handler_cores=1)
    assert w is not None
    assert (w.windows, w.messages, w.kept) == (111, 240, 91)
    assert (w.late_sent, w.late_queued) == (10, 10)
    assert w.mean_msgs_per_s == 240 / 0.120                     # over the 120 ms the packets span
    assert (w.busiest_msgs_per_s, w.busiest_kept) == (100 * RATE, True)
    assert w.busiest_kept_msgs_per_s == 100 * RATE
    assert (w.top, w.top_kept, w.top_least_msgs_per_s) == (2, 2, 100 * RATE)


def test_a_late_sample_in_the_busiest_windows_is_not_kept() -> None:
    late = [*SAMPLES, (T0 + 30 * MS + 1, 1_000_001)]
    w = burst_windows(intended(ROWS), samples(late), BOUND_US, handler_cores=1)
    assert w is not None and not w.busiest_kept
    assert w.busiest_kept_msgs_per_s == 50 * RATE               # window 81
    assert (w.kept, w.top_kept, w.late_queued) == (81, 0, 20)
    strict = burst_windows(intended(ROWS), samples(SAMPLES), 0.5, handler_cores=1)  # 0.5 us: every sample is late
    assert strict is not None and strict.kept == 111 - 33       # 0-1, 21-30, 51-60, 82-91, 110


def test_rates_per_core_divide_by_the_handler_cores(tmp_path: Path) -> None:
    write_run_file(tmp_path, "intended.parquet", intended(ROWS))
    w = read_burst_windows(tmp_path, BOUND_US, handler_cores=4)  # no samples.parquet: the send lag alone
    assert w is not None and (w.kept, w.late_queued) == (101, 0)
    d = w.as_dict()
    assert d["busiest_kept_msgs_per_s_per_core"] == 100 * RATE / 4
    assert d["mean_msgs_per_s_per_core"] == d["mean_msgs_per_s"] / 4
    assert "4 cores" in w.text()
    assert read_burst_windows(tmp_path / "none", BOUND_US, 1) is None
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(pa.table({"line": pa.array([1], pa.uint16())}), other / "intended.parquet")
    assert read_burst_windows(other, BOUND_US, 1) is None       # not the run file's schema
