"""Re-sharding between engines under load (docs/engines.md "Re-sharding between engines"):
one lap of a capture (``--no-loop``) through the two-engine pipeline while a bucket moves
every 2 ms, beside a static run of the same capture. Every message processed exactly once,
the feed's BBO agreeing with every book on every quote (a lost or stale book after a move
would disagree), and the same crossed/locked signals as the static run (no pricing refresh
within the lap in either run: when one lands differs between runs, and a quote off its band
reports off_smile instead of crossed or locked) - fused (both engines
in one process), split (feed handler and engines in two processes over Vega) and split
further (two feed handlers, each engine its own process: tests/topologies/
reshard_split_engines.toml), where the new engine has to hold a bucket back until the old
one has every handler's marker."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_support import CAPTURE_DATE, line_packets

from omdp.metrics.run_files import read_run_file
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

SAMPLE_EVERY = 64
SPLIT_ENGINES = Path(__file__).resolve().parents[1] / "topologies" / "reshard_split_engines.toml"


@pytest.fixture(scope="module")
def busy_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """0.5 s of 4 lines with many locked and crossed markets, so there are signals to compare."""
    from ops.synth.generator import SynthConfig, synthesize

    data = tmp_path_factory.mktemp("reshard-data")
    synthesize(SynthConfig(data=data, seconds=0.5, num_lines=4, seed=5, progress=False,
                           anomalies_per_second={"locked": 400.0, "crossed": 400.0}))
    return data


def one_lap(topology: str, data: Path, **reshard: float) -> object:
    path = SPLIT_ENGINES if topology == SPLIT_ENGINES.stem else topology_path(topology)
    pp = plan_pipeline(path, data, CAPTURE_DATE,
                       RunOptions(rate="2x", seconds=None, loop=False, sample_every=SAMPLE_EVERY, **reshard),
                       ("operators.de.params.pricing_period_s=600",))
    return run_pipeline(pp, data)


def book_signals(run_dir: Path) -> list[tuple]:
    t = read_run_file(run_dir, "signals.parquet").to_pandas()
    t = t[t["kind"].isin(["crossed", "locked"])]
    return sorted(zip(t["line"], t["msg_seq"], t["underlying_id"], t["kind"]))


def engine_counters(run_dir: Path) -> list[dict[str, int]]:
    """Each engine's final operator counters from run.json."""
    report = json.loads((run_dir / "run.json").read_text())
    found: list[dict[str, int]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "reshard_installs" in node and "processed" in node:
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(report)
    return found


@pytest.mark.parametrize("topology", ["opra_fused", "opra_split_vega", SPLIT_ENGINES.stem])
def test_moving_buckets_every_2ms_changes_nothing_in_the_output(busy_capture: Path, topology: str) -> None:
    static = one_lap(topology, busy_capture)
    moved = one_lap(topology, busy_capture, reshard_buckets=16, reshard_every_ms=2.0)
    assert static.result.ok and moved.result.ok, (static.result.failure, moved.result.failure)
    lines = line_packets(busy_capture / "captures" / CAPTURE_DATE)
    in_capture = sum(int(lp.counts.sum()) for lp in lines.values())
    a = moved.accounting
    assert a.messages_received == a.routed == a.processed == in_capture, "every message exactly once"
    assert a.messages_missed == 0 and a.collected == a.sampled > 0
    assert a.bbo_checked > 0 and a.bbo_mismatches == 0, "every book right after every move"
    got, want = book_signals(moved.run_dir), book_signals(static.run_dir)
    assert got == want and len(want) > 20

    rs = moved.reshard
    assert rs is not None and rs["completed"] >= 10 and rs["requested"] - rs["completed"] <= 1
    assert rs["state_bytes"] > 0 and rs["latency_us"] is not None
    record = json.loads((moved.run_dir / "reshard.json").read_text())
    assert len(record["moves"]) == rs["requested"]
    engines = engine_counters(moved.run_dir)
    assert len(engines) == 2
    assert sum(e["reshard_installs"] for e in engines) == rs["completed"]
    assert sum(e["reshard_exports"] for e in engines) >= rs["completed"]
    assert sum(e["reshard_held"] for e in engines) == rs["held_total"]
    assert sum(e["reshard_markers_bad"] + e["reshard_markers_unexpected"] + e["reshard_install_timeouts"]
               + e["reshard_state_lost"] for e in engines) == 0
    if topology == SPLIT_ENGINES.stem:
        assert rs["held_total"] > 0, "the engines run apart: some move found its bucket's messages early"
