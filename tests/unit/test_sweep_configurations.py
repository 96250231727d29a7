"""Sweep configurations and reports: knob sets only where messages cross a channel, every
input (the veth inputs' sender in the pair's namespace, AF_XDP on both ends for xdp), the
sustainable rate, and the table for docs/benchmarks.md."""
from __future__ import annotations

import pytest

from omdp.topology.load import load_topology
from ops.netns.veth import VethPair
from ops.pipeline.sweep import configurations, markdown, sweep_dict
from ops.pipeline.sweep_points import Sweep, SweepPoint
from ops.topologies import topology_path

FUSED, SPLIT = str(topology_path("opra_fused")), str(topology_path("opra_split_vega"))


def test_knob_sets_apply_where_messages_cross_a_channel() -> None:
    cs = configurations([FUSED, SPLIT], ["tuned", "default"], ["ring", "multicast"])
    labels = [c.label for c in cs]
    assert labels == ["opra-fused ring", "opra-fused multicast", "opra-split-vega ring tuned",
                      "opra-split-vega multicast tuned", "opra-split-vega ring default",
                      "opra-split-vega multicast default"]
    default = next(c for c in cs if c.label == "opra-split-vega ring default")
    assert "channel.mutex=true" in default.overrides and 'operators.fh.params.input="ring"' in default.overrides


def run_dict(pps: float, e2e: float, missed: float) -> dict:
    hop = {"count": 100, "mean_us": e2e, "p50_us": e2e, "p99_us": 2 * e2e}
    return {"replay": {"achieved_pps": pps, "messages_per_packet": 14.0},
            "accounting": {"missed_ratio": missed},
            "breakdown": {"hops": {h: hop for h in ("fh", "to_de", "de", "to_mc", "e2e", "e2e_intended")}}}


WINDOWS = {"busiest_kept_msgs_per_s_per_core": 2_500_000.0, "mean_msgs_per_s_per_core": 1_680_000.0, "top": 8,
           "top_kept": 3, "late_sent": 2, "late_queued": 5}
"""A run's 10 ms windows (omdp.metrics.burst_windows.BurstWindows.as_dict), the fields the table shows."""


def test_sustainable_rate_is_the_highest_sustained_and_the_table_says_so() -> None:
    s = Sweep("sweepX", 10.0, "2008-02-04")
    s.points = [
        SweepPoint("c", "1x", 24_000, run=run_dict(24_000, 5.0, 0.0), sustainable=True),
        SweepPoint("c", "5x", 120_000, run={**run_dict(120_000, 8.0, 0.0), "windows": WINDOWS}, sustainable=True),
        SweepPoint("c", "10x", 240_000, run=run_dict(200_000, 900.0, 0.01), sustainable=False),
        SweepPoint("c", "20x", 480_000, skipped=True),
        SweepPoint("d", "1x", 24_000, error="RuntimeError: boom"),
    ]
    assert s.sustainable_rate("c") == "5x" and s.sustainable_rate("d") is None
    text = markdown(s, "omdp bench sweep X", "machine M")
    assert "| c | 5x | 120,000 | 1,680,000 | 14.00 | 0.0000% | 8.00 us (8.00 us / 16.0 us) |" in text
    assert "| 2.50 M / 1.68 M (3 of 8; late 2 sent, 5 queued) | yes |" in text and "| n/a | n/a | unknown |" in text
    assert "| c | 20x | skipped |" in text and "| d | 1x | failed |" in text
    assert "- c: sustainable up to 5x" in text and "- d: sustainable up to none of the rates swept" in text
    assert sweep_dict(s)["sustainable"] == {"c": "5x", "d": None}


VETH = VethPair(ns="omdpx0001", tx="oxt0001", rx="oxr0001", rx_addr="10.213.9.2", tx_addr="10.213.9.1")


def test_the_veth_inputs_put_the_sender_in_the_pairs_namespace_and_xdp_on_both_ends() -> None:
    cs = configurations([FUSED], ["tuned"], ["multicast_veth", "xdp"], veth=VETH)
    assert [c.label for c in cs] == ["opra-fused multicast_veth", "opra-fused xdp"]
    kernel, xdp = (set(c.overrides) for c in cs)
    both = {'operators.fh.params.input="multicast"', 'operators.fh.params.interface="10.213.9.2"',
            'operators.fs.params.interface="10.213.9.1"', "operators.fs.params.ttl=1",
            'operators.fs.params.netns="omdpx0001"'}
    assert both <= kernel and both <= xdp
    assert not any("xdp" in o for o in kernel)
    assert {'operators.fh.params.receive="xdp"', 'operators.fh.params.xdp="oxr0001:0"',
            'operators.fs.params.multicast_sender="xdp"', 'operators.fs.params.xdp="oxt0001:0"'} <= xdp
    for c in cs:  # the overrides make a valid topology
        load_topology(c.topology, c.overrides)


def test_a_veth_input_without_a_pair_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="input 'xdp' needs a feed_sender .* and a veth pair"):
        configurations([FUSED], ["tuned"], ["xdp"])
