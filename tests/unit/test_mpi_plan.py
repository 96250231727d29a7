"""The ``mpi`` transport without MPI running: endpoints, specs, the shipped MPI topologies'
plans, and what an MPI run refuses (these hold with or without the MPI part built)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from omdp.plan import build_plan
from omdp.runtime.mpi_agent import host_prefix, hosts_map
from omdp.runtime.mpi_supervisor import mpi_plan_problems, plan_across_hosts, plan_uses_mpi
from omdp.topology.load import load_topology
from omdp.transport.channels import ChannelSpecError, load_spec
from omdp.transport.mpi import parse_mpi_endpoint
from ops.netns.lab import main as lab_main
from ops.pipeline.registry import build_registry

SHIPPED = Path(__file__).resolve().parents[2] / "ops" / "topologies"


def _plan(name: str, overrides: tuple[str, ...] = ()):  # noqa: ANN202 - a Plan
    path = SHIPPED / f"{name}.toml"
    return build_plan(load_topology(path, overrides), build_registry(), str(path))


def test_endpoint_is_peer_rank_and_channel() -> None:
    assert parse_mpi_endpoint("3:17") == (3, 17)
    for bad in ("3", "a:1", "1:-2", ":1", "1:"):
        with pytest.raises(ValueError, match=f"mpi endpoint '{bad}': expected PEER_RANK:CHANNEL"):
            parse_mpi_endpoint(bad)


def test_mpi_spec_validates_like_any_channel() -> None:
    spec = load_spec({"transport": "mpi", "queue_size": 32, "on_full": "drop"})
    assert spec.transport == "mpi" and spec.queue_size == 32
    with pytest.raises(ChannelSpecError, match="queue_size"):
        load_spec({"transport": "mpi", "queue_size": 30})


def test_shipped_mpi_topologies_plan_mpi_pairs_only() -> None:
    # opra_mpi: fh -> engines and engines -> signals (the feed ring and ingest are not edges)
    for name, pairs in (("seq_split_mpi", 1), ("opra_mpi", 2)):
        p = _plan(name)
        assert plan_uses_mpi(p)
        assert len(p.channels) == pairs and {c.spec.transport for c in p.channels} == {"mpi"}
        assert mpi_plan_problems(p) == []
    assert not plan_uses_mpi(_plan("seq_split_vega"))


def test_an_mpi_run_across_hosts_puts_every_partition_on_a_shared_namespace_host() -> None:
    p = _plan("seq_split_mpi", ('hosts.lab.netns="omdp-lab"', 'partitions.down.host="lab"'))
    assert plan_across_hosts(p)
    problems = dict(mpi_plan_problems(p))
    assert "up runs on this machine" in problems["partitions.host"]
    assert "set isolated = false" in problems["hosts.lab.isolated"]
    both = _plan("seq_split_mpi", ('hosts.lab.netns="omdp-lab"', "hosts.lab.isolated=false",
                                   'partitions.down.host="lab"', 'partitions.up.host="lab"'))
    assert plan_across_hosts(both) and mpi_plan_problems(both) == []


def test_the_launch_agent_enters_the_named_host_under_its_own_name() -> None:
    p = _plan("seq_split_mpi", ('hosts.lab.netns="omdp-lab"', 'hosts.lab.address="10.77.0.9"',
                                'hosts.lab.env={OMDP_X="1"}', 'hosts.far.netns="omdp-far"',
                                'hosts.far.address="10.77.0.8"', 'partitions.up.host="far"'))
    # the launcher runs with the first host's environment: the second unsets what only the first has
    assert hosts_map([p.hosts["lab"], p.hosts["far"]]) == {
        "10.77.0.9": {"netns": "omdp-lab", "env": {"OMDP_X": "1"}, "unset": []},
        "10.77.0.8": {"netns": "omdp-far", "env": {}, "unset": ["OMDP_X"]}}
    prefix = host_prefix("omdp-lab")
    assert prefix[:6] == ["ip", "netns", "exec", "omdp-lab", "unshare", "--uts"] and prefix[-1] == "omdp-lab"
    out = subprocess.run([sys.executable, "-P", "-m", "omdp.runtime.mpi_agent", "/dev/null"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "usage" in out.stderr


def test_the_shipped_two_host_pair_differs_only_in_the_transport() -> None:
    mpi, vtcp = _plan("opra_hosts_mpi"), _plan("opra_hosts_vega_tcp")
    assert plan_across_hosts(mpi) and mpi_plan_problems(mpi) == []
    assert {c.spec.transport for c in mpi.channels} == {"mpi"} and {c.spec.transport for c in vtcp.channels} == {"vega-tcp"}
    assert [(p.name, p.host, p.cpus) for p in mpi.partitions] == [(p.name, p.host, p.cpus) for p in vtcp.partitions]
    assert {p.host for p in mpi.partitions} == {"feed", "engines"}
    assert all(h.netns and not h.isolated for h in mpi.hosts.values() if h.name in ("feed", "engines"))


def test_the_lab_command_says_its_usage() -> None:
    assert lab_main(["sideways", "2", "omdp"]) == 2
    assert lab_main(["up", "two", "omdp"]) == 2
