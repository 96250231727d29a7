"""The dashboard's API on a finished run: the run directory a real short live run left
(tests/dashboard_support.py), checked against its records - ``Breakdown.from_run_dir`` for
the whole run, numpy over samples.parquet for windows and history, ingest.parquet,
signals.parquet and run.json - plus /metrics and ``omdp dashboard --run`` as a process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from cli_child_support import start_background_job, stop_job
from dashboard_support import LiveFeed, assert_hop_matches, expected_hop
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from omdp.metrics.breakdown import Breakdown
from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.run_files import read_meta, read_run_file
from ops.dashboard.app import create_app
from ops.dashboard.finished_source import FinishedRunSource
from ops.dashboard.serve import parse_address

pytestmark = pytest.mark.full  # a 3.2 s live run first


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    feed = LiveFeed(tmp_path_factory.mktemp("finished") / "run", pps=1200.0).start()
    time.sleep(3.2)
    feed.stop()
    return feed.run_dir


@pytest.fixture(scope="module")
def client(run_dir: Path) -> Iterator[TestClient]:
    source = FinishedRunSource(run_dir)
    yield TestClient(create_app(source))
    source.close()


def sample_rows(run_dir: Path) -> dict[str, np.ndarray]:
    t = read_run_file(run_dir, "samples.parquet")
    return {c: t.column(c).to_numpy() for c in t.column_names}


def test_whole_run_is_the_runs_breakdown(run_dir: Path, client: TestClient) -> None:
    body = client.get("/api/v1/latency", params={"window": "all"}).json()
    b = Breakdown.from_run_dir(run_dir)
    assert body["source"] == "finished" and body["window_s"] is None and body["sample_every"] == b.sample_every
    for hop in body["hops"]:
        want = b.hops[hop["hop"]]
        assert {k: hop[k] for k in want} == dict(want), hop["hop"]
        assert hop["missing"] == 0
    assert body["hops"][HOP_KEYS.index("e2e")]["count"] > 1000


def test_windows_and_history_from_samples(run_dir: Path, client: TestClient) -> None:
    rows = sample_rows(run_dir)
    end = int(read_meta(run_dir)["ended_ns"])
    second = rows["mc_in"] // 1_000_000_000
    body = client.get("/api/v1/latency", params={"window": "2s"}).json()
    assert body["at_ns"] == end
    keep = (second > end // 10**9 - 2) & (second <= end // 10**9)
    assert 0 < keep.sum() < len(second)
    for hop in body["hops"]:
        assert_hop_matches(hop, expected_hop({c: v[keep] for c, v in rows.items()}, hop["hop"]))
    hist = client.get("/api/v1/latency/history", params={"seconds": 5}).json()
    assert [p["second"] for p in hist["points"]] == list(range(end // 10**9 - 4, end // 10**9 + 1))
    for p in hist["points"]:
        one = second == p["second"]
        for hop in HOP_KEYS:
            assert_hop_matches(p["hops"][hop], expected_hop({c: v[one] for c, v in rows.items()}, hop))
    at = int(rows["mc_in"].min()) + 1_000_000_000
    early = client.get("/api/v1/latency", params={"window": "1s", "at": at}).json()
    assert early["hops"][0]["count"] == int(np.count_nonzero(second == at // 10**9))


def test_ingest_operators_signals_run(run_dir: Path, client: TestClient) -> None:
    ingest = read_run_file(run_dir, "ingest.parquet").to_pylist()
    last = {}
    for row in ingest:
        last[row["line"]] = row
    body = client.get("/api/v1/ingest").json()
    for row in body["lines"]:
        want = last[row["line"]]
        assert {k: row[k] for k in want if k not in ("ts_ns", "line")} == {k: v for k, v in want.items()
                                                                             if k not in ("ts_ns", "line")}
        assert row["messages_per_s"] is not None and row["messages_per_s"] >= 0
    meta = read_meta(run_dir)
    assert body["totals"]["messages_missed"] == meta["messages_missed"] > 0
    ops = {o["name"]: o for o in client.get("/api/v1/operators").json()["operators"]}
    run_json = json.loads((run_dir / "run.json").read_text())
    report = run_json["partitions"]["app"]["report"]
    assert {c["name"]: c["value"] for c in ops["de"]["counters"]} == report["operators"]["de"]
    assert ops["de->mc @ app"]["kind"] == "channel" and ops["de->mc @ app"]["peer_state"] == "attached"
    signals = read_run_file(run_dir, "signals.parquet")
    sig = client.get("/api/v1/signals", params={"limit": 3}).json()
    assert sig["total"] == signals.num_rows > 0
    assert sig["signals"][0]["ts_ns"] == max(signals.column("ts_ns").to_pylist())
    assert sig["signals"][0]["series"].split()[1] == "20080322"
    run = client.get("/api/v1/run").json()
    assert run["state"] == "ended" and run["source"] == "finished" and run["target_pps"] == 1200.0
    assert run["uptime_s"] == pytest.approx((meta["ended_ns"] - meta["started_ns"]) / 1e9)
    assert run["achieved_fraction"] == pytest.approx(meta["achieved_pps"] / 1200.0)


def test_ingest_history_per_interval(run_dir: Path, client: TestClient) -> None:
    t = read_run_file(run_dir, "ingest.parquet").group_by("ts_ns").aggregate([("packets_received", "sum")]).sort_by("ts_ns")
    ts, packets = t.column("ts_ns").to_pylist(), t.column("packets_received_sum").to_pylist()
    meta = read_meta(run_dir)
    started, ended = meta["started_ns"], meta["ended_ns"]
    points = client.get("/api/v1/ingest/history").json()["points"]
    assert [p["ts_ns"] for p in points] == ts
    expect = [(b - a) / ((tb - ta) / 1e9) for a, b, ta, tb in zip([0, *packets], packets, [started, *ts], ts)]
    assert [p["packets_per_s"] for p in points] == pytest.approx(expect)
    lines = client.get("/api/v1/ingest").json()["lines"]
    span_s = (min(ts[-1], ended) - started) / 1e9
    assert lines[0]["packets_per_s"] == pytest.approx(lines[0]["packets_received"] / span_s)


def test_line_rates_leave_out_the_drain_after_the_replay_ended(run_dir: Path, tmp_path: Path) -> None:
    """The collector's last rows come after the replay's end (the pipeline drains and stops):
    a line's average is over the replay's span, or a run that kept its schedule reads short."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    late = tmp_path / "run"
    shutil.copytree(run_dir, late)
    meta = read_meta(late)
    ingest = read_run_file(late, "ingest.parquet")
    last = ingest.slice(ingest.num_rows - 1)
    tail = last.set_column(last.schema.get_field_index("ts_ns"), "ts_ns",
                           pa.array([meta["ended_ns"] + 2_000_000_000], last.schema.field("ts_ns").type))
    pq.write_table(pa.concat_tables([ingest, tail]), late / "ingest.parquet")
    source = FinishedRunSource(late)
    try:
        row = next(r for r in source.lines() if r["line"] == last.column("line")[0].as_py())
    finally:
        source.close()
    span_s = (meta["ended_ns"] - meta["started_ns"]) / 1e9
    assert row["packets_per_s"] == pytest.approx(row["packets_received"] / span_s)


def test_finished_metrics(client: TestClient, run_dir: Path) -> None:
    fams = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    b = Breakdown.from_run_dir(run_dir)
    count = next(s.value for s in fams["omdp_latency_seconds"].samples
                 if s.name == "omdp_latency_seconds_count" and s.labels["hop"] == "e2e")
    assert count == b.hops["e2e"]["count"]
    info = fams["omdp_run_info"].samples[0].labels
    assert info["source"] == "finished" and info["state"] == "ended"


def test_windows_longer_than_the_run_are_refused(client: TestClient) -> None:
    r = client.get("/api/v1/latency", params={"window": "1m"})
    assert r.status_code == 422 and "this run keeps windows of 1 to" in r.json()["detail"]
    r = client.get("/api/v1/latency/history", params={"seconds": 60})
    assert r.status_code == 422 and "this run keeps 1 to" in r.json()["detail"]


def test_a_huge_parameter_is_not_echoed_back(client: TestClient) -> None:
    huge = "7" * 50_000 + "s"  # as long as a URL may be here (the HTTP client refuses longer)
    for path, params in (("/api/v1/latency", {"window": huge}), ("/api/v1/latency/history", {"seconds": huge})):
        r = client.get(path, params=params)
        assert r.status_code == 422, r.text[:300]
        assert len(r.content) < 2_000 and "50,001 characters" in r.text, (path, len(r.content))


def test_defaults_answer_for_a_short_run(client: TestClient) -> None:
    """The run is 3 s: the default history (60 s) and window (10 s) would be refused; they
    are what the run has."""
    assert client.get("/api/v1/latency").json()["window_s"] == client.get("/api/v1/run").json()["max_window_s"]
    r = client.get("/api/v1/latency/history")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["seconds"] == client.get("/api/v1/run").json()["max_window_s"] < 60
    assert len(body["points"]) == body["seconds"]


def test_stream_of_a_finished_run_ends(client: TestClient) -> None:
    """One snapshot (its figures never change), then 'end': an open stream kept headless
    browsers' screenshots from ever completing."""
    with client.stream("GET", "/api/v1/stream", params={"interval": 0.2}) as r:
        text = "".join(r.iter_text())
    events = [dict(line.split(": ", 1) for line in e.splitlines() if not line.startswith(":"))
              for e in text.split("\n\n") if e.strip()]
    events = [e for e in events if e]  # keep-alive comments
    assert [e["event"] for e in events] == ["snapshot", "end"]
    assert json.loads(events[1]["data"]) == {"reason": "finished run"}
    with client.stream("GET", "/api/v1/stream", params={"interval": 0.2, "count": 3}) as r:
        text = "".join(r.iter_text())
    assert text.count("event: snapshot") == 3 and text.count("event: end") == 1


def test_parse_address() -> None:
    assert parse_address("127.0.0.1:8000") == ("127.0.0.1", 8000)
    assert parse_address(":0") == ("127.0.0.1", 0) == parse_address("0")
    assert parse_address("[::1]:9000") == ("::1", 9000)
    for bad in ("localhost:http", "1.2.3.4:70000"):
        with pytest.raises(ValueError, match="address"):
            parse_address(bad)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_omdp_dashboard_serves_a_run_directory_until_stopped(run_dir: Path, tmp_path: Path, stop: int) -> None:
    """Started as a script's background job is (SIGINT ignored at start), ``omdp dashboard``
    still stops cleanly on Ctrl-C and on SIGTERM."""
    # The child imports omdp from where this process does (an installed package or the checkout).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = start_background_job(["dashboard", "--run", str(run_dir), "--address", "127.0.0.1:0"], env=env, cwd=tmp_path)
    try:
        line = proc.stdout.readline()
        assert " on http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split(" on ", 1)[1].split()[0]
        run = httpx.get(url + "api/v1/run", timeout=10).json()
        assert run["run_id"] == read_meta(run_dir)["run_id"]
        assert "<title>omdp" in httpx.get(url, timeout=10).text
    finally:
        _, err = stop_job(proc, stop, "omdp dashboard")
    assert proc.returncode == 0, err[-3000:]


def test_omdp_dashboard_warns_when_other_hosts_can_read_it(run_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "OMDP_DASHBOARD_TOKEN": "tok"}
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", "from ops.cli.main import main; main()", "dashboard", "--run", str(run_dir),
         "--address", "0.0.0.0:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    try:
        line = proc.stdout.readline()
        port = int(line.split(" on http://", 1)[1].split("/")[0].rsplit(":", 1)[1])
        warning = proc.stderr.readline()
        assert "reachable from other hosts" in warning and f"0.0.0.0:{port}" in warning, warning
        url = f"http://127.0.0.1:{port}/"
        assert httpx.get(url + "api/v1/run", timeout=10).status_code == 401
        assert httpx.get(url + "api/v1/run", headers={"Authorization": "Bearer tok"}, timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-3000:]
