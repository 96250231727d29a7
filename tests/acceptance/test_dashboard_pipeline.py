"""The dashboard on a real pipeline run (the demo's fused topology replaying a synthetic
capture, with losses injected): started through the run's ``dashboard`` hook, read while
the run goes, and read once more when the run has ended but its stats segment is still
open - those final live figures must be the run's records (windows and per-second history
against numpy over samples.parquet, the whole run against ``Breakdown.from_run_dir``,
ingest.parquet, signals.parquet), and the finished-run source over the run directory must
agree with them."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from dashboard_support import assert_hop_matches, expected_hop
from pipeline_support import CAPTURE_DATE
from prometheus_client.parser import text_string_to_metric_families

from omdp.metrics.breakdown import Breakdown
from omdp.metrics.run_files import read_run_file
from ops.dashboard import figures
from ops.dashboard.finished_source import FinishedRunSource
from ops.dashboard.serve import start_dashboard
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path


def wait_until(check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.2)


def test_dashboard_follows_a_pipeline_run(data_dir: Path) -> None:
    seen: dict[str, Any] = {}
    errors: list[BaseException] = []

    def get(url: str, path: str, **params: Any) -> Any:
        r = httpx.get(url + path, params=params, timeout=10)
        assert r.status_code == 200, (path, r.text)
        return r.json() if path != "metrics" else r.text

    def during(url: str) -> None:
        try:
            wait_until(lambda: get(url, "api/v1/latency", window="10s")["hops"][4]["count"] > 100)
            wait_until(lambda: all(row["messages_per_s"] for row in get(url, "api/v1/ingest")["lines"]))
            seen["run"] = get(url, "api/v1/run")
            seen["ingest"] = get(url, "api/v1/ingest")
            seen["history"] = get(url, "api/v1/latency/history", seconds=5)
            seen["metrics"] = get(url, "metrics")
            # every partition publishes its operators and channel ends, not only the collector
            def moving() -> bool:
                ops = {o["name"]: {c["name"]: c["value"] for c in o["counters"]}
                       for o in get(url, "api/v1/operators")["operators"]}
                return ops.get("fh", {}).get("batches_out", 0) > 0 and ops.get("de[0]", {}).get("batches_in", 0) > 0

            wait_until(moving)
            seen["operators"] = get(url, "api/v1/operators")["operators"]
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)

    def hook(run_id: str, run_dir: Path) -> Callable[[], None]:
        server = start_dashboard(run_id, port=0, run_dir=run_dir)
        probe = threading.Thread(target=during, args=(server.url,))
        probe.start()

        def stop() -> None:
            probe.join()
            # the run has ended, its segment is still open: the final live figures, read at the
            # end of the newest second with samples (however long the run took to end after it)
            points = get(server.url, "api/v1/latency/history", seconds=60)["points"]
            newest = max(p["second"] for p in points if any(h["count"] for h in p["hops"].values()))
            seen["at"] = at = (newest + 1) * 1_000_000_000 - 1
            seen["final_window"] = get(server.url, "api/v1/latency", window="5s", at=at)
            seen["final_history"] = get(server.url, "api/v1/latency/history", seconds=5, at=at)
            seen["final_latency"] = get(server.url, "api/v1/latency", window="all")
            seen["final_ingest"] = get(server.url, "api/v1/ingest")
            seen["final_signals"] = get(server.url, "api/v1/signals", limit=1)
            seen["final_run"] = get(server.url, "api/v1/run")
            server.stop()

        return stop

    pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE,
                       RunOptions(rate="1x", seconds=4.0, loop=True, sample_every=16, drops="A:0.002", seed=5))
    run = run_pipeline(pp, data_dir, dashboard=hook)
    assert run.result.ok, run.result.failure
    assert not errors, errors

    live_run = seen["run"]
    assert live_run["state"] == "running" and live_run["topology"] == "opra-fused"
    assert live_run["plan"]["topology"] == "opra-fused" and live_run["target_pps"] == 24_000
    assert live_run["sample_every"] == 16
    assert len(seen["history"]["points"]) == 5
    assert seen["ingest"]["totals"]["packets_per_s"] > 1000
    families = {f.name: f for f in text_string_to_metric_families(seen["metrics"])}
    assert families["omdp_latency_seconds"].type == "histogram"
    assert families["omdp_line_messages_received"].samples

    # the final live figures are the run's records
    b = Breakdown.from_run_dir(run.run_dir)
    for hop in seen["final_latency"]["hops"]:
        assert {k: hop[k] for k in b.hops[hop["hop"]]} == dict(b.hops[hop["hop"]]), hop["hop"]
    samples = read_run_file(run.run_dir, "samples.parquet")
    rows = {c: samples.column(c).to_numpy() for c in samples.column_names}
    second = rows["mc_in"] // 1_000_000_000
    at_s = seen["at"] // 1_000_000_000
    window = (second > at_s - 5) & (second <= at_s)
    assert window.sum() > 0
    for hop in seen["final_window"]["hops"]:
        assert_hop_matches(hop, expected_hop({c: v[window] for c, v in rows.items()}, hop["hop"]))
    for point in seen["final_history"]["points"]:
        one = second == point["second"]
        for hop, figures_of_second in point["hops"].items():
            assert_hop_matches(figures_of_second, expected_hop({c: v[one] for c, v in rows.items()}, hop))
    last = {}
    for row in read_run_file(run.run_dir, "ingest.parquet").to_pylist():
        last[row["line"]] = row
    for row in seen["final_ingest"]["lines"]:
        for k in ("packets_received", "messages_received", "messages_missed", "decode_errors"):
            assert row[k] == last[row["line"]][k], (row["line"], k)
    assert seen["final_ingest"]["totals"]["messages_missed"] == run.accounting.messages_missed > 0
    assert seen["final_signals"]["total"] == read_run_file(run.run_dir, "signals.parquet").num_rows
    assert seen["final_run"]["state"] == "done"
    assert seen["final_run"]["achieved_pps"] == pytest.approx(run.replay.achieved_pps)

    names = {o["name"] for o in seen["operators"]}
    assert set(pp.plan.operators) <= names, (sorted(pp.plan.operators), sorted(names))
    for o in seen["operators"]:
        assert o["state"] == "live", o
    channels = [o for o in seen["operators"] if o["kind"] == "channel"]
    assert channels and all("@" in o["name"] for o in channels)

    finished = FinishedRunSource(run.run_dir)
    assert figures.latency(finished, None).model_dump()["hops"] == seen["final_latency"]["hops"]
    assert figures.ingest(finished).totals.messages_missed == seen["final_ingest"]["totals"]["messages_missed"]
