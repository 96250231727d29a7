"""The dashboard's ``/docs`` works offline (Swagger UI from the installed package, nothing
from a CDN) and its Prometheus histogram reaches seconds: a run whose messages queued 4.3 s
behind their intended send time lands in the 5 s bucket, not only in +Inf."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.run_files import write_meta
from omdp.record import STAMPS_DTYPE
from ops.dashboard.app import create_app
from ops.dashboard.finished_source import FinishedRunSource

T0 = 1_800_000_000 * 1_000_000_000
QUEUED_NS = 4_311_744_000
META = {
    "run_id": "r1", "sweep_id": "", "date": "2026-01-02", "capture_date": "2008-02-01", "topology": "t", "config": "c",
    "knobs_json": "{}", "target_pps": 24_000.0, "achieved_pps": 24_000.0, "rate_x": 1.0, "messages_per_packet": 5.0,
    "packets_sent": 1, "messages_sent": 500, "messages_processed": 500, "messages_missed": 0, "sample_every": 1,
    "started_ns": T0, "ended_ns": T0 + 10**9, "host": "h", "cpu_model": "c", "clock_offset_error_ns": 0,
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    run_dir: Path = tmp_path_factory.mktemp("run")
    s = np.zeros(500, dtype=STAMPS_DTYPE)
    s["fh_in"] = T0 + np.arange(500) * 1_000
    s["intended"] = s["fh_in"] - QUEUED_NS
    for a, b in (("fh_in", "fh_out"), ("fh_out", "de_in"), ("de_in", "de_out"), ("de_out", "mc_in")):
        s[b] = s[a] + 500
    c = LatencyCollector(method="all")
    c.collect_rows(s)
    c.write_samples(run_dir)
    write_meta(run_dir, META)
    source = FinishedRunSource(run_dir)
    yield TestClient(create_app(source))
    source.close()


def test_docs_load_swagger_ui_from_this_server(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and "cdn" not in page.text.lower()
    for asset in ("/vendor/swagger-ui/swagger-ui-bundle.js", "/vendor/swagger-ui/swagger-ui.css"):
        assert f'"{asset}"' in page.text or f"'{asset}'" in page.text, asset
        got = client.get(asset)
        assert got.status_code == 200 and len(got.content) > 10_000, asset
    assert "SwaggerUIBundle" in client.get("/vendor/swagger-ui/swagger-ui-bundle.js").text
    assert client.get("/openapi.json").json()["info"]["title"] == "omdp dashboard"
    assert client.get("/redoc").status_code == 404  # ReDoc loads only from a CDN: not offered


def test_latency_buckets_reach_seconds(client: TestClient) -> None:
    fams = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    buckets = {s.labels["le"]: s.value for s in fams["omdp_latency_seconds"].samples
               if s.name == "omdp_latency_seconds_bucket" and s.labels["hop"] == "e2e_intended"}
    assert float(max((le for le in buckets if le != "+Inf"), key=float)) >= 10.0
    assert buckets["2.0"] == 0 and buckets["5.0"] == buckets["10.0"] == buckets["+Inf"] == 500
