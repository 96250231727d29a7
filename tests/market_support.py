"""What the market statistics' pipeline tests share: the ``omdp run`` command of a market
topology with short windows, and the sequential windows of a capture (the feed handler's own
rules offline, every line in one pass: ops.market.window_table) to compare a run against."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa

from ops.market.window_table import merge_partials
from ops.spark.backtest.backtest_job import plan_day
from ops.spark.common.data_layout import DataLayout
from ops.spark.market.market_job import LineSpec, line_tables, run_line


def market_run_command(topology: str, data: Path, date: str, rate: str, window_ms: int, *extra: str) -> list[str]:
    """``omdp run TOPOLOGY`` over one lap of ``date``'s capture with ``window_ms`` windows.
    A feed-handler partition may lag another by seconds of event time on a loaded host: the
    leaders hold 64 windows before forcing the oldest out incomplete."""
    return [sys.executable, "-P", "-m", "ops.cli.main", "run", topology, "--data", str(data), "--capture-date", date,
            "--rate", rate, "--no-loop", "-q",
            "--set", f"operators.ms.params.window_ms={window_ms}", "--set", f"operators.msink.params.window_ms={window_ms}",
            "--set", "operators.mm.params.pending=64", "--set", "operators.mm.params.capacity=16384",
            *extra]


def sequential_windows(data: Path, date: str, window_ms: int) -> tuple[pa.Table, pa.Table]:
    """(aggregates, messages per window) of the whole capture, as live_tables gives a run's."""
    plan = plan_day(DataLayout(data), date, 1)
    return merge_partials([line_tables(run_line(LineSpec(date, lf, plan.routes, window_ms, 100))["partial"])
                           for lf in plan.lines], window_ms)
