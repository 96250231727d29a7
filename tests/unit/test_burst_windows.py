"""The busiest 10 ms windows a run kept up with (omdp.metrics.burst_windows), from hand-built
intended and samples tables: every figure follows from the counts put in."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa

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


# Window 0: 30 messages (line 1 block 0 sent as A and B: counted once), on time.
# Window 1: 100 messages, the busiest; its B copy left 5 ms late but A on time: kept.
# Window 2: 60 messages, one packet 2 ms late: not kept.
# Window 3: 80 messages on time, but a sample of it 1.5 ms late: not kept.
# Window 4: nothing planned.  Window 5: 10 messages on time.
ROWS = [
    (1, 0, "A", T0, 10_000, 20), (1, 0, "B", T0, 12_000, 20), (2, 0, "A", T0 + 3 * MS, 0, 10),
    (1, 20, "A", T0 + 10 * MS, 0, 100), (1, 20, "B", T0 + 10 * MS, 5 * MS, 100),
    (1, 120, "A", T0 + 21 * MS, 2 * MS, 60),
    (2, 10, "A", T0 + 30 * MS, 0, 50), (2, 60, "A", T0 + 39 * MS, 0, 30),
    (1, 180, "B", T0 + 55 * MS, 100, 10),
]
SAMPLES = [(T0 + 1 * MS, 50_000), (T0 + 10 * MS, 900_000), (T0 + 31 * MS, 1_500_000), (T0 + 55 * MS, 20_000)]


def test_windows_count_messages_once_and_judge_each_window() -> None:
    w = burst_windows(intended(ROWS), samples(SAMPLES), BOUND_US, handler_cores=1)
    assert w is not None
    assert (w.windows, w.messages, w.kept) == (6, 280, 4)       # windows 0, 1, 5, and 4: nothing late in it
    rate = 1e9 / WINDOW_NS
    assert w.mean_msgs_per_s == 280 / 0.06
    assert (w.busiest_msgs_per_s, w.busiest_kept) == (100 * rate, True)
    assert w.busiest_kept_msgs_per_s == 100 * rate
    assert (w.top, w.top_kept, w.top_least_msgs_per_s) == (1, 1, 100 * rate)
    assert (w.late_sent, w.late_queued) == (1, 1)               # window 2 by its packet, 3 by its sample


def test_a_late_sample_or_packet_in_the_busiest_window_is_not_kept() -> None:
    late = [*SAMPLES, (T0 + 12 * MS, 1_000_001)]
    w = burst_windows(intended(ROWS), samples(late), BOUND_US, handler_cores=1)
    assert w is not None and not w.busiest_kept
    assert w.busiest_kept_msgs_per_s == 30 * 1e9 / WINDOW_NS    # window 0, the busiest left
    assert (w.kept, w.top_kept) == (3, 0)
    strict = burst_windows(intended(ROWS), samples(SAMPLES), 0.5, handler_cores=1)  # 0.5 us: every sample is late
    assert strict is not None and strict.kept == 1               # window 4, with nothing in it


def test_rates_per_core_divide_by_the_handler_cores(tmp_path: Path) -> None:
    write_run_file(tmp_path, "intended.parquet", intended(ROWS))
    w = read_burst_windows(tmp_path, BOUND_US, handler_cores=4)  # no samples.parquet: the send lag alone
    assert w is not None and w.kept == 5                        # window 3 was late only by its sample
    d = w.as_dict()
    assert d["busiest_kept_msgs_per_s_per_core"] == 100 * 1e9 / WINDOW_NS / 4
    assert d["mean_msgs_per_s_per_core"] == d["mean_msgs_per_s"] / 4
    assert "4 cores" in w.text()
    assert read_burst_windows(tmp_path / "none", BOUND_US, 1) is None
