"""The replay's HTTP router: status for anyone, actions only with the token."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from replay_support import make_line, write_capture

from ops.replay.config import ReplayConfig
from ops.replay.http_api import API_PREFIX, replay_app
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService

TOKEN = "s3cret-token"


@pytest.fixture()
def client_and_service(tmp_path: Path):
    write_capture(tmp_path / "cap", [make_line(1, 2000)])
    svc = ReplayService(ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(pps=500), copies="A",
                                     run_dir=tmp_path / "run"))
    with TestClient(replay_app(svc, TOKEN)) as client:
        yield client, svc
    svc.close()


def test_actions_need_the_token(client_and_service) -> None:
    client, svc = client_and_service
    r = client.get(API_PREFIX)
    assert r.status_code == 200 and r.json()["state"] == "idle" and r.json()["rate"] == "500 pps"
    for path in ("/start", "/stop", "/rate"):
        r = client.post(API_PREFIX + path, json={"pps": 100} if path == "/rate" else None)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"] == "Bearer"
        r = client.post(API_PREFIX + path, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401, path
    assert not svc.running, "nothing started without the token"


def test_start_rate_stop_with_the_token(client_and_service) -> None:
    client, svc = client_and_service
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = client.post(API_PREFIX + "/start", headers=auth)
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "running" and r.json()["packets_total"] == 2000
    assert client.post(API_PREFIX + "/start", headers=auth).status_code == 409
    # 50 packets/s: the 2,000 packets would take 40 s, so the stop below lands mid-replay
    # however slowly this host answers
    r = client.post(API_PREFIX + "/rate", headers={"X-Omdp-Token": TOKEN}, json={"pps": 50})
    assert r.status_code == 200 and r.json()["target_pps"] == 50
    r = client.post(API_PREFIX + "/rate", headers=auth, json={"rate": "10x"})
    assert r.status_code == 409 and "fixed pps" in r.json()["detail"]
    r = client.post(API_PREFIX + "/rate", headers=auth, json={"rate": "ten"})
    assert r.status_code == 422 and "not a rate" in r.json()["detail"]
    for body in ({"pps": 1e308}, {"rate": "1e308x"}, {"speed": 1e300}):
        r = client.post(API_PREFIX + "/rate", headers=auth, json=body)
        assert r.status_code == 422 and "at most" in r.json()["detail"], (body, r.text)
    assert client.get(API_PREFIX).json()["state"] == "running", "a rejected rate leaves the replay running"
    deadline = time.monotonic() + 30  # a hang guard: the first packet is due within 20 ms
    while client.get(API_PREFIX).json()["packets_sent"] == 0:
        assert time.monotonic() < deadline, "the replay sent nothing"
        time.sleep(0.01)
    r = client.post(API_PREFIX + "/stop", headers=auth)
    assert r.status_code == 200 and r.json()["state"] == "stopped"
    st = client.get(API_PREFIX).json()
    assert st["state"] == "stopped" and 0 < st["packets_sent"] < 2000
    assert (Path(st["run_dir"]) / "intended.parquet").exists()


def test_served_over_tcp_on_loopback(client_and_service) -> None:
    import httpx

    from ops.replay.http_server import ThreadedServer

    _, svc = client_and_service
    server = ThreadedServer(replay_app(svc, TOKEN))
    server.start()
    try:
        assert server.url.startswith("http://127.0.0.1:")
        r = httpx.get(server.url + API_PREFIX, timeout=5)
        assert r.status_code == 200 and r.json()["state"] == "idle"
        assert httpx.post(server.url + API_PREFIX + "/stop", timeout=5).status_code == 401
    finally:
        server.stop()


def test_router_refuses_an_empty_token(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        replay_app(ReplayService(), "")


def test_a_huge_parameter_is_not_echoed_back(client_and_service) -> None:
    client, svc = client_and_service
    auth = {"Authorization": f"Bearer {TOKEN}"}
    huge = "9" * 5_000_000 + "x"
    for body in ({"rate": huge}, {"speed": huge}):
        r = client.post(API_PREFIX + "/rate", headers=auth, json=body)
        assert r.status_code == 422, r.text[:300]
        assert len(r.content) < 2_000, len(r.content)
        assert "5,000,001 characters" in r.text
    assert not svc.running
