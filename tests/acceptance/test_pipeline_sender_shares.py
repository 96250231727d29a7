"""Several feed senders send the run's rate between them: each paces its own lines at its
lines' share of the packets, so the pipeline receives ``Nx`` in all, not N times the number
of senders."""
from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import CAPTURE_DATE

from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path


def test_two_senders_share_the_rate(data_dir: Path) -> None:
    pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE, RunOptions(rate="1x", seconds=3.0),
                       ("operators.fs.replicas=2", "operators.fh.replicas=2"))
    shares = pp.assembly.topology.operators["fs"].params["rate_shares"]
    assert len(shares) == 2 and sum(shares) == pytest.approx(1.0) and min(shares) > 0.2
    run = run_pipeline(pp, data_dir)
    assert run.result.ok, run.result.failure
    r = run.replay
    assert r.target_pps == 24_000
    # one sender alone would have sent 24,000 packets/s of its own lines: 48,000 in all
    assert r.achieved_pps == pytest.approx(24_000, rel=0.05), r
    assert run.accounting.messages_missed == 0
