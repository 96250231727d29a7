"""The stats segment across processes: a reader in another process never sees a torn
snapshot while a writer keeps updating every block, and no segment outlives its run
(normal close, interpreter exit without close, SIGKILL of the writer + ``omdp shm clean``)."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.stats_cleanup import clean_stats_segments, list_stats_segments, pid_alive
from omdp.metrics.stats_segment import StatsReader, StatsWriter, stats_segment_name
from omdp.native import lib
from omdp.record import STAMPS_DTYPE
from ops.cli.main import cli

CTX = mp.get_context("fork")
HOP_NS = {"fh": 100, "to_de": 200, "de": 300, "to_mc": 400, "e2e": 1000, "e2e_intended": 1500}


@pytest.fixture
def run_id() -> Iterator[str]:
    rid = f"mp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield rid
    lib.omdp_stats_unlink(rid.encode())
    assert not Path("/dev/shm", stats_segment_name(rid)).exists()


def _writer(run_id: str, ready: mp.Event, stop: mp.Event) -> None:
    """Update every block as fast as possible; each update keeps the invariants the reader checks."""
    w = StatsWriter.attach(run_id)
    c = LatencyCollector(stats=w, publish_interval_ms=0)
    op = w.register_operator("writer", "operator", [f"c{i}" for i in range(8)])
    stamps = np.zeros(64, dtype=STAMPS_DTYPE)
    i = 0
    ready.set()
    while not stop.is_set():
        i += 1
        t = time.time_ns()
        stamps["intended"] = t - 1500
        stamps["fh_in"] = t - 1000
        stamps["fh_out"] = t - 900
        stamps["de_in"] = t - 700
        stamps["de_out"] = t - 400
        stamps["mc_in"] = t
        c.collect_rows(stamps)
        c.publish(t)
        op.publish([i] * 8)
        w.publish_line(7, **{k: i for k in ("packets_received", "messages_received", "messages_missed",
                                              "packets_duplicate", "decode_errors")})
        w.set_run_info(target_pps=float(i), achieved_pps=float(i), sample_every=i, knobs={"i": i, "pad": "x" * (i % 900)})
        w.push_signal("check", f"S{i}", float(i), engine=i % 7)
    c.close()
    w.close()


def test_reader_in_another_process_never_sees_torn_snapshots(run_id: str) -> None:
    owner = StatsWriter.create(run_id)
    ready, stop = CTX.Event(), CTX.Event()
    proc = CTX.Process(target=_writer, args=(run_id, ready, stop))
    proc.start()
    try:
        assert ready.wait(20), "writer did not start"
        r = StatsReader(run_id)
        seen = {"latency": set(), "ops": set(), "lines": set(), "run": set(), "signals": 0}
        # read until many distinct versions of every block were seen while the writer changed
        # them (the count drives the test; the deadline only stops a hang)
        deadline = time.monotonic() + 120.0
        while not (all(len(seen[k]) > 20 for k in ("latency", "ops", "lines", "run")) and seen["signals"] > 100):
            assert time.monotonic() < deadline, {k: v if isinstance(v, int) else len(v) for k, v in seen.items()}
            hists = r.latency_histograms(None)  # raises if a copy is not self-consistent
            counts = {hists[k].count for k in HOP_KEYS}
            assert len(counts) == 1, counts
            for k in HOP_KEYS:
                h = hists[k]
                assert h.sum_ns == h.count * HOP_NS[k] and (h.count == 0 or h.max_ns == HOP_NS[k])
            seen["latency"].add(counts.pop())
            window = r.latency_histograms(5)
            assert len({window[k].count for k in HOP_KEYS}) == 1
            for o in r.operators():
                if o["name"] == "writer":
                    assert len(set(o["counters"].values())) == 1, o
                    seen["ops"].add(o["counters"]["c0"])
            for line in r.ingest():
                vals = {line[k] for k in ("packets_received", "messages_received", "messages_missed",
                                          "packets_duplicate", "decode_errors")}
                assert len(vals) == 1, line
                seen["lines"].add(vals.pop())
            info = r.run_info()
            if info["target_pps"]:  # the writer's loop sets these three together
                i = info["sample_every"]
                assert info["target_pps"] == info["achieved_pps"] == i
                assert info["knobs"] == {"i": i, "pad": "x" * (i % 900)}
                seen["run"].add(i)
            for s in r.signals(50):
                assert s["series"] == f"S{int(s['value'])}" and s["engine"] == int(s["value"]) % 7
                seen["signals"] += 1
        r.close()
    finally:
        stop.set()
        proc.join(20)
        owner.close()
    assert proc.exitcode == 0  # the reads raced real updates, and none was torn


def _own_and_wait(run_id: str, ready: mp.Event) -> None:
    w = StatsWriter.create(run_id)
    w.publish_line(1, messages_received=1)
    ready.set()
    time.sleep(60)


def test_sigkill_leaves_a_segment_that_clean_removes(run_id: str) -> None:
    ready = CTX.Event()
    proc = CTX.Process(target=_own_and_wait, args=(run_id, ready))
    proc.start()
    assert ready.wait(20)
    path = Path("/dev/shm", stats_segment_name(run_id))
    live = {s.run_id: s for s in list_stats_segments()}
    assert not live[run_id].stale and live[run_id].pid == proc.pid
    assert run_id not in {s.run_id for s in clean_stats_segments()}  # a live run is left alone
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(20)
    assert path.exists()
    assert not pid_alive(proc.pid)
    status = {s.run_id: s for s in list_stats_segments()}[run_id]
    assert status.stale and "gone" in status.reason
    assert clean_stats_segments(run="some-other-run") == []
    dry = CliRunner().invoke(cli, ["shm", "clean", "--run", run_id, "--dry-run"])
    assert dry.exit_code == 0 and f"would remove {path.name}" in dry.output and path.exists()
    res = CliRunner().invoke(cli, ["shm", "clean", "--run", run_id])
    # `omdp shm clean` without --run (another test session on this host) may have removed it
    # since the dry run; then this one has nothing of the run's left to remove
    assert res.exit_code == 0 and (f"removed {path.name}" in res.output or "0 stale" in res.output), res.output
    assert not path.exists()


def test_interpreter_exit_without_close_unlinks(run_id: str) -> None:
    code = (
        "from omdp.metrics.stats_segment import StatsWriter\n"
        f"w = StatsWriter.create({run_id!r})\n"
        "w.publish_line(2, messages_received=3)\n"
        "print(w.name)\n"
    )
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == stats_segment_name(run_id)
    assert not Path("/dev/shm", out.stdout.strip()).exists()


def test_clean_ignores_other_omdp_segments(run_id: str) -> None:
    other = Path("/dev/shm", f"omdp-{run_id}-fh0-de1")
    other.write_bytes(b"vega ring")
    try:
        assert all(s.name != other.name for s in list_stats_segments())
        # scoped to this test's run: a forced clean of every run would unlink the stats
        # segments of runs live on this host (another user's, a soak's)
        clean_stats_segments(force=True, run=run_id)
        assert other.exists()
    finally:
        other.unlink()
    json.dumps([s.__dict__ for s in list_stats_segments()])  # statuses are plain data
