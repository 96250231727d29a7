"""``omdp bench replay`` runs end to end and reports every measurement (benchmark tier: the
numbers themselves go to docs/benchmarks.md, not into assertions)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from xdp_support import xdp_refused

from ops.cli.main import cli
from ops.replay.pacing_floor import within_floor


@pytest.mark.bench
@pytest.mark.parametrize("extra", [[], ["--realtime"]], ids=["ordinary", "realtime"])
def test_bench_replay_writes_its_json(tmp_path: Path, extra: list[str]) -> None:
    out = tmp_path / "replay.json"
    res = CliRunner().invoke(cli, ["bench", "replay", "--capture-seconds", "0.5", "--seconds", "0.3",
                                   "--sweep", "15", *extra, "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["realtime_requested"] == bool(extra)
    kinds = [(r["kind"], r["target"], r["copies"]) for r in doc["rows"]]
    assert ("max_rate", "multicast", "A") in kinds and ("max_rate", "multicast", "A,B") in kinds
    assert ("max_rate", "ring", "A") in kinds
    assert sum(1 for k in kinds if k[0] == "pacing") == 6
    for r in doc["rows"]:
        assert r["achieved_pps"] > 0 and r["send_errors"] == 0
        assert r["sender_cpu_s"] > 0 and r["packets_per_cpu_s"] > 0
        if r["target"] == "ring":
            assert r["received_by_ring_consumer"] == r["sent"], "the consumer got every frame"
        if r["kind"] in ("pacing", "sweep"):
            assert r["floor_cost_ns"] > 0 and 0 <= r["floor_p50_ns"] <= r["floor_p99_ns"]
            assert r["within_floor"] == within_floor(r["pacing_p99_ns"], r["floor_p99_ns"])
    names = [t["target"] for t in doc["targets"]]
    assert len(names) == 3 and all(t["verdict"] for t in doc["targets"])
    assert "ring A at 10x" in " ".join(names) and "multicast A at 5x" in " ".join(names)
    assert "floor" in res.output
    assert doc["machine"]["logical_cpus"] >= 1


@pytest.mark.bench
@pytest.mark.skipif(xdp_refused() is not None, reason=xdp_refused() or "")
def test_bench_replay_sends_through_the_udp_socket_and_af_xdp_over_one_veth_pair(tmp_path: Path) -> None:
    """With ``--multicast-sender udp,xdp`` every multicast row goes over the benchmark's veth
    pair, both senders side by side at each step, and AF_XDP's targets are judged."""
    out = tmp_path / "replay.json"
    res = CliRunner().invoke(cli, ["bench", "replay", "--capture-seconds", "0.5", "--seconds", "0.3", "--sweep", "15",
                                   "--pacing-rates", "5,20", "--multicast-sender", "udp,xdp", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["multicast_path"] == "veth"
    multicast = [(r["kind"], r["copies"], r["multicast_sender"]) for r in doc["rows"] if r["target"] == "multicast"]
    for kind, copies in (("max_rate", "A"), ("max_rate", "A,B"), ("pacing", "A")):
        assert (kind, copies, "udp") in multicast and (kind, copies, "xdp") in multicast
    for r in doc["rows"]:
        assert r["achieved_pps"] > 0 and r["send_errors"] == 0
        assert r["path"] == ("veth" if r["target"] == "multicast" else "ring")
    names = " ".join(t["target"] for t in doc["targets"])
    assert "packets per sender CPU-s through AF_XDP, copies A" in names and "(AF_XDP, veth) A at 20x" in names
    assert set(doc["keeps_up_by_sender"]) == {"udp", "xdp"}
