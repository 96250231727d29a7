"""Market statistics over several feed-handler partitions in a real pipeline
(opra_market_partitions: two handler partitions each with its own market_stats, two leaders
in partitions of their own, vega-shm between them). The merged windows equal, key for key,
the sequential computation over the same capture (the feed handler's own rules offline,
every line in one pass: ops.market.window_table), every window ended by both leaders and
complete. A handler partition killed mid-run fails the run, but the others go on to the
end of the capture: the windows it had passed are exact, every later one is marked
incomplete naming it, none is missing."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from ops.dashboard.app import create_app
from ops.dashboard.finished_source import FinishedRunSource
from ops.dashboard.serve import start_dashboard
from ops.market.oracle import leader_of
from ops.market.records import DIMS
from ops.market.window_table import live_tables
from market_support import market_run_command, sequential_windows
from pipeline_support import CAPTURE_DATE, make_capture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
WINDOW_MS = 100
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _command(data: Path, rate: str) -> list[str]:
    return market_run_command("opra_market_partitions", data, CAPTURE_DATE, rate, WINDOW_MS)


def _sequential(data: Path) -> tuple[pa.Table, pa.Table]:
    return sequential_windows(data, CAPTURE_DATE, WINDOW_MS)


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


def _ends_by_window(table) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for e in table.filter(pc.equal(table.column("kind"), "end")).to_pylist():
        out.setdefault(e["window"], []).append(e)
    return out


def test_a_killed_handler_partition_marks_every_window_after_it_incomplete(data: Path, tmp_path: Path) -> None:
    """handlers[1] killed by SIGKILL once the leaders ended three windows: the run goes on
    without it (on_death = "continue") and fails, naming it; every window of the capture is
    in the file, those handlers[1] had passed complete and equal to the sequential windows,
    every later one incomplete with source 1 missing - in the file, the run's JSON, the API."""
    report = data / "killed.json"
    k = _killed_run(data, "handlers[1]", "--json", str(report))
    run_dir, out, aggs, counts, want_aggs, want_counts, windows, ends, complete = (
        k.run_dir, k.out, k.aggs, k.counts, k.want_aggs, k.want_counts, k.windows, k.ends, k.complete)
    assert all(sorted(e["leader_or_source"] for e in ends[w]) == [0, 1] for w in windows)
    assert all(e["missing_sources"] == 0b10 for w in windows[len(complete):] for e in ends[w])
    done = pa.array(complete, pa.int64())
    assert counts.filter(pc.is_in(counts.column("window"), done)).equals(want_counts.slice(0, len(complete)))
    assert aggs.filter(pc.is_in(aggs.column("window"), done)).equals(
        want_aggs.filter(pc.is_in(want_aggs.column("window"), done)))

    # the leaders heard of the death (its source no longer held windows back) and forced none out
    leaders = {n: o for p in report_partitions(str(run_dir)) for n, o in p.items() if n.startswith("mm[")}
    assert all((o["sources_gone"], o["forced"], o["stale"]) == (1, 0, 0) for o in leaders.values()), leaders
    market = json.loads(report.read_text())["market"]
    assert (market["windows"], market["complete"], market["incomplete"], market["missing_sources"]) == \
           (len(windows), len(complete), len(windows) - len(complete), 0b10)
    assert (f"market windows: {len(windows):,} ({len(complete):,} complete, {len(windows) - len(complete):,} "
            "incomplete, sources missing 0x2)") in out
    live = TestClient(create_app(FinishedRunSource(run_dir))).get("/api/v1/market", params={"windows": 60}).json()
    shown = {w["window"]: (w["complete"], w["missing_sources"]) for w in live["windows"]}
    assert shown == {w: (w in complete, 0 if w in complete else 0b10) for w in windows[-60:]}
    if CHROMIUM:  # the dashboard's market panel in a real browser: the newest five windows, each marked
        rows = _market_panel_rows(run_dir, tmp_path)
        assert len(rows) == 5 and all("(incomplete: source 1 missing)" in r for r in rows[:len(windows) - len(complete)])
        assert not any("incomplete" in r for r in rows[len(windows) - len(complete):])


def test_a_killed_leader_partition_leaves_its_keys_windows_incomplete(data: Path, tmp_path: Path) -> None:
    """leaders[1] killed once three windows are out: the handlers drop what they send it,
    the sink's input from it ends, and the sink gives every window leaders[1] never ended an
    END for it, incomplete - so every window of the capture is in the file, those before the
    death complete and exact, the later ones incomplete and exact for leader 0's keys."""
    k = _killed_run(data, "leaders[1]")
    run_dir, aggs, want_aggs, windows, ends, complete = k.run_dir, k.aggs, k.want_aggs, k.windows, k.ends, k.complete
    for w in windows[len(complete):]:
        assert sorted((e["leader_or_source"], e["incomplete"]) for e in ends[w]) == [(0, False), (1, True)]
    done = pa.array(complete, pa.int64())
    assert aggs.filter(pc.is_in(aggs.column("window"), done)).equals(
        want_aggs.filter(pc.is_in(want_aggs.column("window"), done)))
    # after the death: exactly leader 0's keys, exact
    later = pa.array(windows[len(complete):], pa.int64())
    want_later = want_aggs.filter(pc.is_in(want_aggs.column("window"), later))
    dims = np.array([DIMS.index(d) for d in want_later.column("dim").to_pylist()])
    keys = want_later.column("key").to_numpy()
    mine = np.zeros(len(keys), dtype=bool)
    for d in range(len(DIMS)):
        mine[dims == d] = leader_of(d, keys[dims == d], 2) == 0
    assert aggs.filter(pc.is_in(aggs.column("window"), later)).equals(want_later.filter(pa.array(mine)))
    report = [p for p in report_partitions(str(run_dir)) if "msink" in p]
    assert report[0]["msink"]["leader_lost"] == len(windows) - len(complete)
    if CHROMIUM:
        rows = _market_panel_rows(run_dir, tmp_path)
        assert len(rows) == 5 and all("(incomplete: a leader missing)" in r for r in rows[:len(windows) - len(complete)])


@dataclass
class _Killed:
    """A run with one partition killed, its windows read back beside the sequential ones."""

    run_dir: Path
    out: str
    aggs: pa.Table
    counts: pa.Table
    want_aggs: pa.Table
    want_counts: pa.Table
    windows: list[int]
    ends: dict[int, list[dict]]
    complete: list[int]


def _killed_run(data: Path, victim: str, *extra: str) -> _Killed:
    """Run at 0.5x, SIGKILL ``victim`` once the leaders ended three windows, and check what
    every death leaves: the run fails naming it, no window of the capture is missing, the
    complete ones come first (three or more) and the rest are counted incomplete."""
    before = set(data.glob("runs/*/*"))
    proc = subprocess.Popen([*_command(data, "0.5x"), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)
    run_dir = _wait_for_windows(proc, data, before, 3)
    os.kill(json.loads((run_dir / "processes.json").read_text())[victim]["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and f"partition {victim} died: killed by SIGKILL" in err, err[-3000:]

    table = pq.read_table(run_dir / "market_windows.parquet")
    aggs, counts, incomplete = live_tables(table)
    want_aggs, want_counts = _sequential(data)
    windows = counts.column("window").to_pylist()
    assert windows == want_counts.column("window").to_pylist()  # none missing
    ends = _ends_by_window(table)
    complete = [w for w in windows if not any(e["incomplete"] for e in ends[w])]
    assert len(complete) >= 3 and complete == windows[:len(complete)] and incomplete == len(windows) - len(complete) > 0
    return _Killed(run_dir, out, aggs, counts, want_aggs, want_counts, windows, ends, complete)


def _wait_for_windows(proc: subprocess.Popen, data: Path, before: set[Path], n: int) -> Path:
    """The new run's directory once the sink has shown ``n`` windows (a hang guard of 120 s)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        new = set(data.glob("runs/*/*")) - before
        live = next(iter(new)) / "market_live.json" if new else None
        if live is not None and live.is_file() and len(json.loads(live.read_text())["windows"]) >= n:
            return live.parent
        time.sleep(0.05)
    raise AssertionError(f"the leaders never ended {n} windows")


def _market_panel_rows(run_dir: Path, tmp_path: Path) -> list[str]:
    """The text of each row of the dashboard's market table, as headless Chromium shows it."""
    with start_dashboard(run_dir, port=0) as server:
        r = subprocess.run([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
                            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=8000", "--dump-dom",
                            server.url], capture_output=True, timeout=90, check=False, cwd=tmp_path, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    body = r.stdout.split('id="market-table"', 1)[1].split("</tbody>", 1)[0]
    return [re.sub(r"<[^>]+>", " ", row) for row in body.split("<tr>")[2:]]
