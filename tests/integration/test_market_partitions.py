"""Market statistics over several feed-handler partitions in a real pipeline
(opra_market_partitions: two handler partitions each with its own market_stats, two leaders
in partitions of their own, vega-shm between them). The merged windows equal, key for key,
the sequential computation over the same capture (the feed handler's own rules offline,
every line in one pass: ops.market.window_table), every window ended by both leaders and
complete. A handler partition killed mid-run fails the run, and the windows the leaders
ended before it stay in market_windows.parquet, each exact."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from ops.market.window_table import live_tables, merge_partials
from ops.spark.backtest.backtest_job import plan_day
from ops.spark.common.data_layout import DataLayout
from ops.spark.market.market_job import LineSpec, line_tables, run_line
from pipeline_support import CAPTURE_DATE, make_capture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
WINDOW_MS = 100


def _command(data: Path, rate: str) -> list[str]:
    return [sys.executable, "-P", "-m", "ops.cli.main", "run", "opra_market_partitions", "--data", str(data),
            "--capture-date", CAPTURE_DATE, "--rate", rate, "--no-loop", "-q",
            "--set", f"operators.ms.params.window_ms={WINDOW_MS}", "--set", f"operators.msink.params.window_ms={WINDOW_MS}",
            # a handler partition may lag the other by seconds of event time on a loaded host: the
            # leaders hold 64 windows (6.4 s) before forcing the oldest out incomplete
            "--set", "operators.mm.params.pending=64", "--set", "operators.mm.params.capacity=16384"]


def _sequential(data: Path):
    plan = plan_day(DataLayout(data), CAPTURE_DATE, 1)
    return merge_partials([line_tables(run_line(LineSpec(CAPTURE_DATE, lf, plan.routes, WINDOW_MS, 100))["partial"])
                           for lf in plan.lines], WINDOW_MS)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("market_partitions")
    make_capture(root, seconds=1.5, lines=4)
    return root


def test_two_handler_partitions_and_two_leaders_equal_the_sequential_windows(data: Path) -> None:
    before = set(data.glob("runs/*/*"))
    r = subprocess.run(_command(data, "4x"), capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (run_dir,) = set(data.glob("runs/*/*")) - before
    report = json.loads((run_dir / "report.json").read_text())
    table = pq.read_table(Path(report["run_dir"]) / "market_windows.parquet")
    ends = table.filter(pc.equal(table.column("kind"), "end"))
    aggs, counts, incomplete = live_tables(table)
    want_aggs, want_counts = _sequential(data)
    assert incomplete == 0 and counts.num_rows >= 10
    assert sorted(ends.column("leader_or_source").to_pylist()) == sorted([0, 1] * counts.num_rows)
    assert aggs.equals(want_aggs) and counts.equals(want_counts)
    # both handler partitions fed both leaders
    ops = {n: o for p in report_partitions(report["run_dir"]) for n, o in p.items()}
    assert all(ops[f"ms[{k}]"]["counted"] > 0 for k in (0, 1)) and all(ops[f"mm[{l}]"]["deltas"] > 0 for l in (0, 1))
    assert report["market"]["windows"] == report["market"]["complete"] == counts.num_rows


def report_partitions(run_dir: str) -> list[dict]:
    run = json.loads((Path(run_dir) / "run.json").read_text())
    return [(p["report"] or {}).get("operators", {}) for p in run["partitions"].values()]


def test_a_killed_handler_partition_leaves_exact_windows_before_it(data: Path) -> None:
    before = set(data.glob("runs/*/*"))
    proc = subprocess.Popen(_command(data, "0.5x"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    deadline = time.monotonic() + 120  # a hang guard: the kill waits for the leaders' third window
    run_dir = None
    while time.monotonic() < deadline and proc.poll() is None:
        new = set(data.glob("runs/*/*")) - before
        live = next(iter(new)) / "market_live.json" if new else None
        if live is not None and live.is_file() and len(json.loads(live.read_text())["windows"]) >= 3:
            run_dir = live.parent
            break
        time.sleep(0.05)
    assert run_dir is not None, "the leaders never ended three windows"
    pids = json.loads((run_dir / "processes.json").read_text())
    os.kill(pids["handlers[1]"]["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "partition handlers[1] died" in err
    aggs, counts, incomplete = live_tables(pq.read_table(run_dir / "market_windows.parquet"))
    want_aggs, want_counts = _sequential(data)
    kept = counts.column("window").to_pylist()
    assert len(kept) >= 3 and incomplete == 0 and len(kept) < want_counts.num_rows
    assert counts.equals(want_counts.slice(0, len(kept)))
    want = want_aggs.filter(pc.is_in(want_aggs.column("window"), counts.column("window")))
    assert aggs.equals(want)
