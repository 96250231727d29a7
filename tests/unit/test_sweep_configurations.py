"""Sweep configurations and reports: knob sets only where messages cross a channel, every
input, the sustainable rate, and the table for docs/benchmarks.md."""
from __future__ import annotations

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


def test_sustainable_rate_is_the_highest_sustained_and_the_table_says_so() -> None:
    s = Sweep("sweepX", 10.0, "2008-02-04")
    s.points = [
        SweepPoint("c", "1x", 24_000, run=run_dict(24_000, 5.0, 0.0), sustainable=True),
        SweepPoint("c", "5x", 120_000, run=run_dict(120_000, 8.0, 0.0), sustainable=True),
        SweepPoint("c", "10x", 240_000, run=run_dict(200_000, 900.0, 0.01), sustainable=False),
        SweepPoint("c", "20x", 480_000, skipped=True),
        SweepPoint("d", "1x", 24_000, error="RuntimeError: boom"),
    ]
    assert s.sustainable_rate("c") == "5x" and s.sustainable_rate("d") is None
    text = markdown(s, "omdp bench sweep X", "machine M")
    assert "| c | 5x | 120,000 | 1,680,000 | 14.00 | 0.0000% | 8.00 us (8.00 us / 16.0 us) |" in text
    assert "| c | 20x | skipped |" in text and "| d | 1x | failed |" in text
    assert "- c: sustainable up to 5x" in text and "- d: sustainable up to none of the rates swept" in text
    assert sweep_dict(s)["sustainable"] == {"c": "5x", "d": None}
