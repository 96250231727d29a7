"""The replay service's control API mounted in the dashboard: reads need no token, the
controls answer 401 without the replay's token and act with it."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import LiveFeed
from fastapi.testclient import TestClient
from replay_support import make_line, write_capture

from ops.dashboard.app import create_app
from ops.dashboard.live_source import LiveSource
from ops.replay.config import ReplayConfig
from ops.replay.http_api import new_token, replay_router
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[tuple[TestClient, ReplayService, str]]:
    feed = LiveFeed(tmp_path / "run", pps=600.0).start()
    write_capture(tmp_path / "cap", [make_line(1, 4000)])
    # looped: the replay runs until the test stops it. A single pass (2 s at 2000 pps) could
    # end before the rate change on a loaded host, and a rate change of an ended replay is 409.
    service = ReplayService(ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(pps=2000), copies="A",
                                         run_dir=tmp_path / "replay-run", loop=True))
    token = new_token()
    source = LiveSource(feed.run_id)
    try:
        # One event loop for the whole test, as under uvicorn: the replay's senders die with
        # the thread that started them (PR_SET_PDEATHSIG), here a worker thread of that loop.
        with TestClient(create_app(source, replay_router(service, token))) as client:
            yield client, service, token
    finally:
        service.close()
        source.close()
        feed.stop()


def test_controls_need_the_token_reads_do_not(dashboard: tuple[TestClient, ReplayService, str]) -> None:
    client, service, token = dashboard
    for path in ("/api/v1/latency", "/api/v1/ingest", "/api/v1/operators", "/api/v1/signals", "/api/v1/run",
                 "/metrics", "/api/v1/replay"):
        assert client.get(path).status_code == 200, path
    assert client.get("/api/v1/run").json()["replay_control"] is True
    for path, body in (("start", None), ("rate", {"pps": 1000}), ("stop", None)):
        r = client.post(f"/api/v1/replay/{path}", json=body)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
        r = client.post(f"/api/v1/replay/{path}", json=body, headers={"Authorization": "Bearer not-the-token"})
        assert r.status_code == 401, path
    assert not service.running
    auth = {"Authorization": f"Bearer {token}"}
    r = client.post("/api/v1/replay/start", headers=auth)
    assert r.status_code == 200 and r.json()["state"] == "running"
    r = client.post("/api/v1/replay/rate", headers=auth, json={"pps": 3000})
    assert r.status_code == 200 and r.json()["target_pps"] == 3000
    deadline = time.monotonic() + 30
    while client.get("/api/v1/replay").json()["packets_sent"] == 0:
        assert time.monotonic() < deadline, "the replay sent nothing in 30 s"
        time.sleep(0.05)
    stopped = client.post("/api/v1/replay/stop", headers=auth).json()
    assert stopped["state"] == "stopped", (stopped["error"], stopped["warnings"])
    assert "/api/v1/replay/start" in client.get("/openapi.json").json()["paths"]
