"""The dashboard's API on a live run: a real stats segment fed by the real decoder, engine,
Vega ring and collectors (tests/dashboard_support.py), read through FastAPI's test client.
Figures are checked against the run's own records (the collector's sample rows, the line
counts the feeder published), /metrics through prometheus_client's parser."""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from dashboard_support import MESSAGES_PER_PACKET, LiveFeed, assert_hop_matches, expected_hop
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from omdp.clock import now_ns
from omdp.metrics.definitions import HOP_KEYS, HOP_STAMPS
from ops.dashboard.app import create_app
from ops.dashboard.assets import plotly_js
from ops.dashboard.live_source import LiveSource
from ops.dashboard.models import Snapshot
from ops.dashboard.prometheus import BUCKET_BOUNDS_NS

PPS = 1500.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveFeed, TestClient]]:
    feed = LiveFeed(tmp_path_factory.mktemp("live") / "run", pps=PPS).start()
    source = LiveSource(feed.run_id)
    source.start()
    client = TestClient(create_app(source))
    try:
        yield feed, client
    finally:
        source.close()
        feed.stop()
    assert not Path("/dev/shm", f"omdp-{feed.run_id}-stats").exists()


@pytest.fixture
def running(live: tuple[LiveFeed, TestClient]) -> tuple[LiveFeed, TestClient]:
    """The run after at least 2.5 s of uninterrupted sending (rates cover only sending)."""
    live[0].wait_running(2.5)
    return live


@pytest.fixture
def paused(live: tuple[LiveFeed, TestClient]) -> Iterator[tuple[LiveFeed, TestClient]]:
    """The run with its feed paused: figures stand still while a test compares them."""
    feed, client = live
    feed.wait_running(2.5, since_start=True)
    feed.pause()
    try:
        yield feed, client
    finally:
        feed.resume()


@pytest.mark.full
def test_latency_window_matches_the_collector_rows(paused: tuple[LiveFeed, TestClient]) -> None:
    feed, client = paused
    at = now_ns()
    body = client.get("/api/v1/latency", params={"window": "5s", "at": at}).json()
    assert body["source"] == "live" and body["window_s"] == 5 and body["at_ns"] == at and body["sample_every"] == 8
    assert [h["hop"] for h in body["hops"]] == list(HOP_KEYS)
    table = feed.collector.samples_table()
    rows = {c: table.column(c).to_numpy() for c in table.column_names}
    second = rows["mc_in"] // 1_000_000_000
    in_window = (second > at // 1_000_000_000 - 5) & (second <= at // 1_000_000_000)
    window_rows = {c: v[in_window] for c, v in rows.items()}
    assert in_window.sum() > 1000, "the feed produced samples in the window"
    for hop in body["hops"]:
        assert_hop_matches(hop, expected_hop(window_rows, hop["hop"]))
    whole = client.get("/api/v1/latency", params={"window": "all"}).json()
    for hop in whole["hops"]:
        assert_hop_matches(hop, expected_hop(rows, hop["hop"]))
        assert hop["missing"] == 0


def test_history_seconds_add_up_to_the_window(paused: tuple[LiveFeed, TestClient]) -> None:
    _, client = paused
    at = now_ns()
    hist = client.get("/api/v1/latency/history", params={"seconds": 6, "at": at}).json()
    assert len(hist["points"]) == 6
    assert [p["second"] for p in hist["points"]] == list(range(at // 10**9 - 5, at // 10**9 + 1))
    window = client.get("/api/v1/latency", params={"window": "6s", "at": at}).json()
    for hop in window["hops"]:
        per_second = [p["hops"][hop["hop"]] for p in hist["points"]]
        assert sum(s["count"] for s in per_second) == hop["count"]
        assert max(s["max_us"] or 0 for s in per_second) == hop["max_us"]


@pytest.fixture
def unsampled(running: tuple[LiveFeed, TestClient]) -> Iterator[tuple[LiveFeed, TestClient]]:
    """A second dashboard on the run whose source has no background sampler: its only
    snapshots are the test's own requests, so each rate can be recomputed exactly from two
    responses (their counters and the writers' publication times)."""
    feed, _ = running
    source = LiveSource(feed.run_id)
    try:
        yield feed, TestClient(create_app(source))
    finally:
        source.close()


def two_publications(client: TestClient, path: str, key: str, items: str) -> tuple[dict, dict]:
    """Two responses of ``path`` about a second apart in which every entry was published anew."""
    first = client.get(path).json()
    time.sleep(1.05)
    deadline = time.monotonic() + 10
    while True:
        second = client.get(path).json()
        before = {e[key]: e["updated_ns"] for e in first[items]}
        if all(e["updated_ns"] > before[e[key]] for e in second[items]):
            return first, second
        assert time.monotonic() < deadline, "entries were not published again"
        time.sleep(0.05)


@pytest.mark.full  # a fixed wait for a new publication
def test_line_rates_are_the_published_change_per_second(unsampled: tuple[LiveFeed, TestClient]) -> None:
    feed, client = unsampled
    first, second = two_publications(client, "/api/v1/ingest", "line", "lines")
    assert first["lines"][0]["packets_per_s"] is None, "no rate from a single snapshot"
    before = {row["line"]: row for row in first["lines"]}
    assert sorted(before) == list(feed.lines)
    for row in second["lines"]:
        dt = (row["updated_ns"] - before[row["line"]]["updated_ns"]) / 1e9
        for rate, counter in (("packets_per_s", "packets_received"), ("messages_per_s", "messages_received")):
            assert row[rate] == pytest.approx((row[counter] - before[row["line"]][counter]) / dt, rel=1e-9), rate
        assert row["packets_per_s"] > 0
        assert row["messages_per_s"] == pytest.approx(MESSAGES_PER_PACKET * row["packets_per_s"], rel=1e-9)
    lines = {row["line"]: row for row in second["lines"]}
    assert lines[feed.lines[0]]["messages_missed"] == 0
    assert lines[feed.lines[-1]]["messages_missed"] > 0 and lines[feed.lines[-1]]["missed_ratio"] > 0
    totals = second["totals"]
    assert totals["packets_per_s"] == pytest.approx(sum(r["packets_per_s"] for r in second["lines"]))


@pytest.mark.full  # a fixed wait for a new publication
def test_counter_rates_are_the_published_change_per_second(unsampled: tuple[LiveFeed, TestClient]) -> None:
    _, client = unsampled
    first, second = two_publications(client, "/api/v1/operators", "name", "operators")
    before = {o["name"]: o for o in first["operators"]}
    for op in second["operators"]:
        dt = (op["updated_ns"] - before[op["name"]]["updated_ns"]) / 1e9
        old = {c["name"]: c["value"] for c in before[op["name"]]["counters"]}
        for c in op["counters"]:
            if c["gauge"]:
                assert c["per_s"] is None, c["name"]
            else:
                assert c["per_s"] == pytest.approx((c["value"] - old[c["name"]]) / dt, rel=1e-9), (op["name"], c)
    processed = {c["name"]: c for c in {o["name"]: o for o in second["operators"]}["de"]["counters"]}["processed"]
    assert processed["per_s"] > 0
    # the feed runs in this process: its CPU time over the second between the requests
    assert all(0 < o["process_cpu_percent"] <= 100 * os.cpu_count() for o in second["operators"])


@pytest.mark.full  # a fixed 2.5 s wait after the pauses
def test_ingest_history_has_a_point_per_second(running: tuple[LiveFeed, TestClient]) -> None:
    _, client = running
    points = client.get("/api/v1/ingest/history", params={"seconds": 60}).json()["points"]
    assert len(points) >= 1
    gaps = np.diff([p["ts_ns"] for p in points])
    assert (gaps >= 0.9e9).all() and (gaps < 2e9).all()
    for p in points:
        assert p["packets_per_s"] > 0
        assert p["messages_per_s"] == pytest.approx(MESSAGES_PER_PACKET * p["packets_per_s"], rel=1e-9)


def test_ingest_equals_what_the_lines_published(paused: tuple[LiveFeed, TestClient]) -> None:
    feed, client = paused
    body = client.get("/api/v1/ingest").json()
    for row in body["lines"]:
        assert {k: row[k] for k in feed.counts[row["line"]]} == feed.counts[row["line"]]
    t = body["totals"]
    assert t["messages_missed"] == sum(c["messages_missed"] for c in feed.counts.values())
    assert t["missed_ratio"] == pytest.approx(t["messages_missed"] / (t["messages_missed"] + t["messages_received"]))


def test_operators_channels_and_cpu(paused: tuple[LiveFeed, TestClient]) -> None:
    feed, client = paused
    ops = {o["name"]: o for o in client.get("/api/v1/operators").json()["operators"]}
    assert set(ops) == {"mc", "de", "de->mc"}
    ring = ops["de->mc"]
    assert ring["kind"] == "channel" and ring["peer_state"] == "attached"
    k = feed.sender.counters()
    assert ring["occupancy"] == k["tx_messages"] - k["credit"] == 0
    assert (ring["full_events"], ring["spins"], ring["drops"]) == (k["tx_full_events"], k["tx_spins"], k["tx_drops"])
    counters = {c["name"]: c for c in ring["counters"]}
    assert counters["messages"]["value"] == k["tx_messages"] and not counters["messages"]["gauge"]
    assert counters["occupancy"]["gauge"] and counters["occupancy"]["per_s"] is None
    engine = {c["name"]: c["value"] for c in ops["de"]["counters"]}
    assert engine["processed"] == feed.engine.counters()["processed"]
    mc = {c["name"]: c["value"] for c in ops["mc"]["counters"]}
    assert mc["samples"] == feed.collector.counters()["samples"]
    assert all(o["pid"] == os.getpid() for o in ops.values())
    assert ops["mc"]["process_cpu_percent"] is not None


def test_signals_and_run(paused: tuple[LiveFeed, TestClient]) -> None:
    feed, client = paused
    sig = client.get("/api/v1/signals", params={"limit": 5}).json()
    assert sig["total"] == feed.engine.counters()["signals"] > 0
    assert len(sig["signals"]) == 5 and {s["kind"] for s in sig["signals"]} == {"crossed"}
    assert [s["ts_ns"] for s in sig["signals"]] == sorted((s["ts_ns"] for s in sig["signals"]), reverse=True)
    run = client.get("/api/v1/run").json()
    assert run["state"] == "running" and run["source"] == "live" and run["run_id"] == feed.run_id
    assert run["target_pps"] == PPS and run["target_x"] == pytest.approx(PPS / 24_000)
    assert run["sample_every"] == 8 and run["messages_per_packet"] == pytest.approx(MESSAGES_PER_PACKET)
    assert run["knobs"]["de->mc"]["transport"] == "vega-shm"
    assert run["uptime_s"] > 2 and run["heartbeat_age_s"] < 5 and run["replay_control"] is False


def test_metrics_parse_and_agree_with_the_api(paused: tuple[LiveFeed, TestClient]) -> None:
    feed, client = paused
    table = feed.collector.samples_table()
    rows = {c: table.column(c).to_numpy() for c in table.column_names}
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    lat = families["omdp_latency_seconds"]
    assert lat.type == "histogram"
    whole = {h["hop"]: h for h in client.get("/api/v1/latency", params={"window": "all"}).json()["hops"]}
    for hop in HOP_KEYS:
        samples = [s for s in lat.samples if s.labels["hop"] == hop]
        buckets = [s for s in samples if s.name == "omdp_latency_seconds_bucket"]
        les = [s.labels["le"] for s in buckets]
        assert les[-1] == "+Inf" and [float(x) for x in les[:-1]] == [b / 1e9 for b in BUCKET_BOUNDS_NS]
        counts = [s.value for s in buckets]
        assert counts == sorted(counts) and counts[-1] == whole[hop]["count"]
        total = next(s.value for s in samples if s.name == "omdp_latency_seconds_sum")
        assert total == pytest.approx(whole[hop]["mean_us"] * whole[hop]["count"] / 1e6, rel=1e-9)
        a, b = HOP_STAMPS[hop]
        values = np.maximum(rows[b] - rows[a], 0)
        for bound, c in zip(BUCKET_BOUNDS_NS, counts):
            # a bucket counts the samples whose omdp bucket (at most 1/128 wide) lies at or below it
            assert np.count_nonzero(values <= bound * (1 - 1 / 64)) <= c <= np.count_nonzero(values <= bound), bound
    ingest = {row["line"]: row for row in client.get("/api/v1/ingest").json()["lines"]}
    missed = families["omdp_line_messages_missed"]
    assert missed.type == "counter"
    assert {int(s.labels["line"]): s.value for s in missed.samples if s.name.endswith("_total")} == {
        ln: row["messages_missed"] for ln, row in ingest.items()}
    assert families["omdp_signals"].samples[0].name == "omdp_signals_total"
    assert families["omdp_operator_level"].type == "gauge"
    assert families["omdp_run_target_packets_per_second"].samples[0].value == PPS
    assert families["omdp_stats_available"].samples[0].value == 1


def test_stream_sends_snapshots(live: tuple[LiveFeed, TestClient]) -> None:
    _, client = live
    with client.stream("GET", "/api/v1/stream", params={"count": 2, "interval": 0.3}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = [e for e in text.split("\n\n") if e.strip()]
    assert len(events) == 3
    end = dict(line.split(": ", 1) for line in events.pop().splitlines())
    assert end["event"] == "end" and json.loads(end["data"]) == {"reason": "2 snapshots sent"}
    for e in events:
        fields = dict(line.split(": ", 1) for line in e.splitlines())
        assert fields["event"] == "snapshot"
        snap = Snapshot.model_validate(json.loads(fields["data"]))
        assert fields["id"] == str(snap.ts_ns) and snap.latency.window_s == 10 and snap.ingest.lines


@pytest.mark.parametrize(("path", "params", "reason"), [
    ("/api/v1/latency", {"window": "0s"}, "window '0s' is 0 s"),
    ("/api/v1/latency", {"window": "65s"}, "1 to 64 s"),
    ("/api/v1/latency", {"window": "ten"}, "not a duration"),
    ("/api/v1/latency", {"at": 0}, "greater than or equal to 1"),
    ("/api/v1/latency/history", {"seconds": 65}, "1 to 64 s"),
    ("/api/v1/signals", {"limit": 0}, "greater than or equal to 1"),
    ("/api/v1/stream", {"window": "99s"}, "1 to 64 s"),
    ("/api/v1/stream", {"interval": 0}, "greater than or equal to 0.2"),
])
def test_bad_queries_get_422_with_the_reason(live: tuple[LiveFeed, TestClient], path: str, params: dict,
                                             reason: str) -> None:
    _, client = live
    r = client.get(path, params=params)
    assert r.status_code == 422
    assert reason in json.dumps(r.json())


def test_page_assets_and_openapi(live: tuple[LiveFeed, TestClient]) -> None:
    _, client = live
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/vendor/plotly.min.js">' in page.text
    js = client.get("/vendor/plotly.min.js")
    assert js.status_code == 200 and js.content == plotly_js().read_bytes()
    for name in ("dashboard.js", "dashboard.css"):
        assert client.get(f"/static/{name}").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/api/v1/latency", "/api/v1/latency/history", "/api/v1/ingest", "/api/v1/operators",
              "/api/v1/signals", "/api/v1/run", "/api/v1/stream", "/metrics"):
        assert p in paths, p
    assert "HopLatency" in client.get("/openapi.json").text


def test_a_run_not_started_yet_answers_503() -> None:
    source = LiveSource("dashnotstarted0")
    try:
        client = TestClient(create_app(source))
        r = client.get("/api/v1/latency")
        assert r.status_code == 503 and "dashnotstarted0" in r.json()["detail"]
        metrics = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
        assert metrics["omdp_stats_available"].samples[0].value == 0
    finally:
        source.close()


def test_read_token_guards_every_figure_not_the_page(live: tuple[LiveFeed, TestClient]) -> None:
    feed, _ = live
    source = LiveSource(feed.run_id)
    try:
        client = TestClient(create_app(source, read_token="s3cret"))
        for path in ("/api/v1/latency", "/api/v1/run", "/api/v1/ingest", "/api/v1/operators", "/metrics",
                     "/api/v1/stream?count=1"):
            r = client.get(path)
            assert r.status_code == 401 and "read token" in r.json()["detail"], path
            assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401, path
            assert client.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200, path
            assert client.get(path, headers={"X-Omdp-Read-Token": "s3cret"}).status_code == 200, path
            sep = "&" if "?" in path else "?"
            assert client.get(f"{path}{sep}token=s3cret").status_code == 200, path
        for path in ("/", "/static/dashboard.js", "/vendor/plotly.min.js", "/openapi.json"):
            assert client.get(path).status_code == 200, path
        open_client = TestClient(create_app(source))
        assert open_client.get("/api/v1/run").status_code == 200
    finally:
        source.close()
