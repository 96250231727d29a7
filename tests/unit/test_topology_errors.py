"""Bad topology files give errors that name the field and say why."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omdp.plan import build_plan
from omdp.topology.load import TopologyError, load_topology, parse_topology
from ops.pipeline.registry import build_registry

GOOD: dict[str, Any] = {
    "name": "small",
    "operators": {
        "src": {"kind": "seq_source", "replicas": 2, "params": {"count": 10}},
        "relay": {"kind": "relay"},
        "sink": {"kind": "seq_sink"},
    },
    "partitions": {"a": {"operators": ["src", "relay"]}, "b": {"operators": ["sink"]}},
    "edges": [{"from": "src.out", "to": "relay.in"}, {"from": "relay.out", "to": "sink.in"}],
}


def plan_of(doc: dict[str, Any]):
    return build_plan(parse_topology(doc, "t.toml"), build_registry(), "t.toml")


def problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(TopologyError) as e:
        plan_of(doc)
    assert "t.toml" in str(e.value)
    return e.value.problems


def edited(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    for path, value in changes.items():
        node = doc
        *parents, last = path.split("__")
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return doc


def test_good_topology_plans() -> None:
    plan = plan_of(GOOD)
    assert [p.name for p in plan.partitions] == ["a", "b"]
    assert len(plan.channels) == 1


def test_unknown_operator_names_the_kind_field() -> None:
    [(field, why)] = problems(edited(operators__relay={"kind": "relya"}))
    assert field == "operators.relay.kind"
    assert "unknown operator 'relya'" in why and "relay" in why


def test_cycle_is_refused() -> None:
    doc = copy.deepcopy(GOOD)
    doc["operators"]["r2"] = {"kind": "relay"}
    doc["partitions"]["a"]["operators"].append("r2")
    doc["edges"] = [{"from": "src.out", "to": "relay.in"}, {"from": "relay.out", "to": "r2.in"},
                    {"from": "r2.out", "to": "relay.in"}, {"from": "r2.out", "to": "sink.in"}]
    [(field, why)] = problems(doc)
    assert field == "edges"
    assert "cycle relay -> r2 -> relay" in why


def test_missing_port_names_the_edge_end() -> None:
    [(field, why)] = problems(edited(edges__1__from="relay.output"))
    assert field == "edges[1].from"
    assert "no output port 'output'" in why and "outputs: out" in why
    [(field, why)] = problems(edited(edges__1__to="sink.input"))
    assert field == "edges[1].to"
    assert "no input port 'input'" in why


def test_unknown_transport_names_the_channel_field() -> None:
    [(field, why)] = problems(edited(edges__1={"from": "relay.out", "to": "sink.in", "channel": {"transport": "carrier-pigeon"}}))
    assert field == "edges[1].channel.transport"
    assert "carrier-pigeon" in why and "vega-shm" in why


def test_bad_knob_names_the_knob() -> None:
    [(field, why)] = problems(edited(edges__1={"from": "relay.out", "to": "sink.in", "channel": {"queue_size": 100}}))
    assert field == "edges[1].channel.queue_size"
    assert "power of two" in why
    doc = edited()
    doc["channel"] = {"max_message": 4}
    [(field, why)] = problems(doc)
    assert field == "channel.max_message"


def test_bad_params_name_the_parameter() -> None:
    [(field, why)] = problems(edited(operators__src={"kind": "seq_source", "params": {"batch": 0}}))
    assert field == "operators.src.params.batch"
    [(field, why)] = problems(edited(operators__src={"kind": "seq_source", "params": {"colour": "red"}}))
    assert field == "operators.src.params.colour"


def test_unconnected_input() -> None:
    doc = edited()
    doc["edges"] = doc["edges"][:1]
    [(field, why)] = problems(doc)
    assert field == "operators.sink" and "input port 'in' of sink is not connected" in why


def test_replicated_ends_need_a_pattern() -> None:
    doc = edited(operators__relay={"kind": "relay", "replicas": 3})
    [(field, why)] = problems(doc)
    assert field == "edges[0].pattern" and "all-to-all" in why
    doc["edges"][0]["pattern"] = "one-to-one"
    [(field, why)] = problems(doc)
    assert field == "edges[0].pattern" and "equal counts" in why


def test_fused_transport_cannot_cross_partitions() -> None:
    [(field, why)] = problems(edited(edges__1={"from": "relay.out", "to": "sink.in", "channel": {"transport": "fused"}}))
    assert field == "edges[1].channel.transport"
    assert "one partition" in why and "from partition a to b" in why


def test_benchmark_transports_are_refused() -> None:
    [(field, why)] = problems(edited(edges__1={"from": "relay.out", "to": "sink.in", "channel": {"transport": "zmq"}}))
    assert field == "edges[1].channel.transport" and "benchmarks only" in why


def test_shared_memory_needs_one_host() -> None:
    doc = edited()
    doc["hosts"] = {"h1": {"address": "10.0.0.1"}, "h2": {"address": "10.0.0.2"}}
    doc["partitions"]["a"]["host"] = "h1"
    doc["partitions"]["b"]["host"] = "h2"
    [(field, why)] = problems(doc)
    assert field == "edges[1].channel.transport" and "needs one host" in why
    doc["edges"][1]["channel"] = {"transport": "tcp"}
    assert plan_of(doc).channels[0].spec.transport == "tcp"


def test_unknown_host() -> None:
    [(field, why)] = problems(edited(partitions__b={"operators": ["sink"], "host": "elsewhere"}))
    assert field == "partitions.b.host" and "unknown host 'elsewhere'" in why


def test_operator_placement() -> None:
    [(field, why)] = problems(edited(partitions__b={"operators": ["sink", "relay"]}))
    assert field == "partitions.b.operators" and "relay is already in partition a" in why
    doc = edited()
    doc["partitions"]["a"]["operators"] = ["src"]
    [(field, why)] = problems(doc)
    assert field == "operators.relay" and "in no partition" in why
    [(field, why)] = problems(edited(partitions__b={"operators": ["sink[3]"]}))
    assert field == "partitions.b.operators[0]"


def test_partition_cycle_is_refused() -> None:
    doc = copy.deepcopy(GOOD)
    doc["operators"]["r2"] = {"kind": "relay"}
    doc["partitions"] = {"a": {"operators": ["src", "r2"]}, "b": {"operators": ["relay"]}, "c": {"operators": ["sink"]}}
    doc["edges"] = [{"from": "src.out", "to": "relay.in"}, {"from": "relay.out", "to": "r2.in"}, {"from": "r2.out", "to": "sink.in"}]
    [(field, why)] = problems(doc)
    assert field == "partitions" and "a -> b -> a" in why


def test_edges_sharing_a_pair_must_agree_on_the_channel() -> None:
    doc = edited(operators__src={"kind": "seq_source", "params": {"count": 10}})
    doc["operators"]["src2"] = {"kind": "seq_source", "params": {"count": 10, "source_base": 1}}
    doc["partitions"]["a"]["operators"].append("src2")
    doc["edges"].append({"from": "src2.out", "to": "sink.in", "channel": {"queue_size": 64}})
    [(field, why)] = problems(doc)
    assert field == "edges[2].channel" and "share one transport pair" in why


def test_cpu_lists() -> None:
    [(field, why)] = problems(edited(partitions__a={"operators": ["src", "relay"], "cpus": "3-1"}))
    assert field == "partitions.a.cpus" and "backwards" in why
    [(field, why)] = problems(edited(partitions__a={"operators": ["src", "relay"], "cpus": [1, 1]}))
    assert field == "partitions.a.cpus" and "twice" in why
    doc = edited(partitions__a={"operators": ["src"], "replicas": 2, "cpus": "0-2"})
    doc["partitions"]["r"] = {"operators": ["relay"]}
    [(field, why)] = problems(doc)
    assert field == "partitions.a.cpus" and "evenly" in why


def test_structure_errors_are_all_reported() -> None:
    doc = edited(operators__src={"kind": "seq_source", "replicas": 0}, partitions__b={"operators": []})
    doc["surprise"] = 1
    fields = {f for f, _ in problems(doc)}
    assert {"operators.src.replicas", "partitions.b.operators", "surprise"} <= fields


def test_toml_syntax_error(tmp_path: Path) -> None:
    f = tmp_path / "broken.toml"
    f.write_text("name = \n")
    with pytest.raises(TopologyError) as e:
        load_topology(f)
    assert "not valid TOML" in str(e.value) and "broken.toml" in str(e.value)


def test_overrides_set_values(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('name = "t"\n[operators.src]\nkind = "seq_source"\n[operators.sink]\nkind = "seq_sink"\n'
                 '[partitions.p]\noperators = ["src", "sink"]\n[[edges]]\nfrom = "src.out"\nto = "sink.in"\n')
    topo = load_topology(f, ["operators.src.params.rate=1000.5", 'channel.wait="spin-block"', "edges.0.channel.queue_size=64"])
    assert topo.operators["src"].params == {"rate": 1000.5}
    assert topo.channel.wait == "spin-block" and topo.edge_channel(0).queue_size == 64


@pytest.mark.full
def test_cli_plan_reports_the_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('name = "t"\n[operators.src]\nkind = "nope"\n[partitions.p]\noperators = ["src"]\n')
    r = subprocess.run([sys.executable, "-P", "-c", "from ops.cli.main import main; main()", "plan", str(f)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "operators.src.kind: unknown operator 'nope'" in r.stderr
