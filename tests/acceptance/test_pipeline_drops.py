"""Losses injected by the replayer (``--drop A:p``) are reported as missed, exactly: every
message of a dropped packet that a later packet of its line reveals as a gap. (A drop
before a line's first or after its last delivered packet leaves no gap to see.)"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from pipeline_support import CAPTURE_DATE, leftovers, line_packets

from omdp.native import lib
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

P, SEED = 0.02, 11


def dropped(line: int, n: int) -> np.ndarray:
    """The replayer's drop decision for each of a line's packets on copy A, lap 0."""
    threshold = int(P * 2.0**64)
    return np.array([lib.omdp_replay_drop_hash(SEED, line, 0, 0, i) < threshold for i in range(n)])


def test_injected_drops_are_missed_exactly(data_dir: Path) -> None:
    expected = 0
    for ln, lp in line_packets(data_dir / "captures" / CAPTURE_DATE).items():
        d = dropped(ln, len(lp.payloads))
        kept = np.flatnonzero(~d)
        inner = d.copy()
        inner[: kept[0]] = inner[kept[-1] + 1:] = False
        expected += int(lp.counts[inner].sum())
    assert expected > 0, "the seed drops nothing: pick another"
    pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE,
                       RunOptions(rate="4x", seconds=None, loop=False, drops=f"A:{P}", seed=SEED))
    run = run_pipeline(pp, data_dir)
    assert run.result.ok, run.result.failure
    a = run.accounting
    assert a.messages_missed == expected
    assert a.messages_received == a.routed == a.processed
    assert run.verdict.sustainable is False and any("missed" in r for r in run.verdict.reasons)
    assert not leftovers(run.result.run_id)
