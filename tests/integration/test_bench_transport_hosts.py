"""``omdp bench transport --hosts netns`` on a tiny plan: vega-tcp (C loop and Python) and
tcp between two namespace hosts and on loopback, checksums agreeing, the report rendering
what it measured and naming what it could not (vega-ib without a device, namespaces
without root)."""
from __future__ import annotations

import pytest
import json

from ops.bench.transport_hosts import HostPlan, markdown_hosts, measure_hosts
from ops.netns.lab import lab_unavailable
from omdp.transport.ib_verbs import ib_unavailable

TINY = HostPlan(lat_sizes=(8,), tput_sizes=(64,), lat_n={"c": 300, "py": 200}, tput_n={"c": 3000, "py": 1000})


@pytest.mark.full
def test_tiny_hosts_plan_measures_the_network_media() -> None:
    report = measure_hosts(TINY, say=lambda line: None)
    placements = {"loopback"} | ({"netns"} if lab_unavailable() is None else set())
    media = {"vega-tcp C", "vega-tcp C spin-yield", "vega-tcp Python", "tcp Python"}
    if ib_unavailable() is None:
        media |= {"vega-ib C", "vega-ib Python"}
    else:
        assert report["not_measured"]["vega-ib"] == ib_unavailable()
    assert {(r["medium"], r["placement"]) for r in report["latency"]} == {(m, p) for m in media for p in placements}
    assert {(r["medium"], r["placement"]) for r in report["throughput"]} == {(m, p) for m in media for p in placements}
    assert all(r["p50_ns"] > 0 for r in report["latency"])
    assert all(r["messages_per_s"] > 0 for r in report["throughput"])
    text = markdown_hosts(report, "omdp bench transport --hosts netns --quick")
    assert "| vega-tcp C | loopback |" in text and "| tcp Python | loopback |" in text
    if "netns" in placements:
        assert "| vega-tcp C | netns |" in text
    json.dumps(report, default=float)
