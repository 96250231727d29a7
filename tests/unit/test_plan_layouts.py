"""Plans of the paper's layouts, built from generic operators: how many transport pairs are
inserted, how edges between two partitions share one, what is fused, where things run."""
from __future__ import annotations

import pytest
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from omdp.plan import Plan, build_plan
from omdp.topology.load import load_topology, parse_topology
from ops.pipeline.registry import build_registry

TOPOLOGIES = Path(__file__).resolve().parents[1] / "topologies"


def plan(name: str, overrides: tuple[str, ...] = ()) -> Plan:
    path = TOPOLOGIES / f"{name}.toml"
    return build_plan(load_topology(path, overrides), build_registry(), str(path))


def test_shared_memory_layout_one_process_per_operator() -> None:
    p = plan("paper_shm_vega")
    assert len(p.partitions) == 32 and len(p.operators) == 32
    # 20 sender->handler + 20x8 handler->engine + 20 handler->ingest + 8 engine->latency
    assert len(p.channels) == 20 + 160 + 20 + 8
    assert {c.spec.transport for c in p.channels} == {"vega-shm"}
    assert all(len(c.routes) == 1 and len(c.routes[0].targets) == 1 for c in p.channels)
    assert sorted(cpu for part in p.partitions for cpu in part.cpus) == list(range(32))
    assert not any(part.fused for part in p.partitions)
    # knobs from the file's [channel] defaults reach every channel
    assert {(c.spec.queue_size, c.spec.max_message, c.spec.mutex) for c in p.channels} == {(32, 4096, False)}


def test_fused_layout_one_application_process() -> None:
    p = plan("paper_shm_fused")
    assert [x.name for x in p.partitions] == ["sender[0]", "sender[1]", "app"]
    app = p.partition("app")
    assert len(app.operators) == 30 and app.cpus == list(range(2, 22))
    assert len(app.fused) == 160 + 20 + 8
    # each sender's edges to its 10 handlers ride one pair, one stream fanned out at the receiver
    assert [(c.name, len(c.routes), len(c.routes[0].targets)) for c in p.channels] == [
        ("sender[0]->app", 1, 10), ("sender[1]->app", 1, 10)]
    # depth-first order inside the partition: every handler before the engines it feeds
    pos = {o: i for i, o in enumerate(app.operators)}
    assert all(pos[f.source.rsplit(".", 1)[0]] < pos[f.target.rsplit(".", 1)[0]] for f in app.fused)


def test_handler_pairs_share_one_transport_per_engine() -> None:
    p = plan("paper_shm_vega", ("partitions.fh.replicas=10", 'partitions.fh.cpus="2-11"'))
    fh = [x for x in p.partitions if x.group == "fh"]
    assert len(fh) == 10 and all(len(x.operators) == 2 for x in fh)
    fh_to_de = [c for c in p.channels if c.upstream.startswith("fh") and c.downstream.startswith("de")]
    assert len(fh_to_de) == 10 * 8  # not 20 * 8: two handlers' edges share each pair
    assert all(len(c.routes) == 2 for c in fh_to_de)
    assert fh_to_de[0].routes[0].source == "fh[0].out" and fh_to_de[0].routes[1].source == "fh[1].out"
    # sender[0] feeds fh[0..9], now in 5 partitions: 5 pairs of one stream each
    assert sum(1 for c in p.channels if c.upstream == "sender[0]") == 5


def test_infiniband_layout_on_39_hosts() -> None:
    p = plan("paper_ib_39hosts")
    assert len(p.partitions) == 24 + 24 + 28 + 2
    assert len({x.host for x in p.partitions}) == 39
    per_host = Counter(x.host for x in p.partitions)
    assert per_host["mc_blade"] == 2 and all(n == 2 for n in per_host.values())
    transports = Counter(c.spec.transport for c in p.channels)
    assert transports == {"tcp": 24, "vega-ib": 24 * 28 + 24 + 28}
    assert p.hosts["de_blade[13]"].address == "10.0.3.13"
    # CPU ids are per host: two partitions on a blade take CPUs 0 and 1
    assert [x.cpus for x in p.partitions if x.host == "fh_blade[5]"] == [[0], [1]]
    # a 32- or 56-CPU plan prints on any machine: planning checks no CPU
    assert max(c for x in plan("paper_shm_vega").partitions for c in x.cpus) == 31


def test_partitions_upstream_first_and_channels_in_order() -> None:
    p = plan("paper_shm_vega")
    order = {x.name: i for i, x in enumerate(p.partitions)}
    assert all(order[c.upstream] < order[c.downstream] for c in p.channels)
    assert [c.id for c in p.channels] == list(range(len(p.channels)))
    for part in p.partitions:
        assert all(p.channels[c].downstream == part.name for c in part.inputs)
        assert all(p.channels[c].upstream == part.name for c in part.outputs)


def test_multiplexed_pair_with_several_streams() -> None:
    doc = {
        "name": "mux",
        "operators": {"a": {"kind": "seq_source"}, "b": {"kind": "seq_source", "params": {"source_base": 1}},
                      "r": {"kind": "relay"}, "s1": {"kind": "seq_sink"}, "s2": {"kind": "seq_sink"}},
        "partitions": {"up": {"operators": ["a", "b"]}, "down": {"operators": ["r", "s1", "s2"]}},
        "edges": [{"from": "a.out", "to": "r.in"}, {"from": "a.out", "to": "s2.in"},
                  {"from": "b.out", "to": "s1.in"}, {"from": "r.out", "to": "s1.in"}],
    }
    p = build_plan(parse_topology(doc), build_registry())
    [ch] = p.channels
    assert [(r.source, r.targets) for r in ch.routes] == [("a.out", ["r.in", "s2.in"]), ("b.out", ["s1.in"])]
    assert ch.edges == [0, 1, 2]
    assert [(f.source, f.target) for f in p.partition("down").fused] == [("r.out", "s1.in")]


def test_plan_json_round_trip() -> None:
    p = plan("paper_ib_39hosts")
    assert Plan.model_validate_json(p.model_dump_json()) == p


@pytest.mark.full
def test_cli_plan_prints_partitions_transports_and_cpus() -> None:
    cmd = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()", "plan", str(TOPOLOGIES / "paper_shm_fused.toml")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "32 operators in 3 partitions" in out and "2 inserted transport pair(s) (2 vega-shm)" in out
    assert "app        local  2-21" in out and "fh[0-19], de[0-7] (relay); latency, ingest (seq_sink)" in out
    assert "r0: sender[0].out -> fh[0-9].in" in out and "fh.out -> de.in x160" in out
    js = json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=60, check=True).stdout)
    assert len(js["partitions"]) == 3 and js["registry"] == "ops.pipeline.registry:build_registry"
