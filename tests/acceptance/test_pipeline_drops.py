"""Losses injected by the replayer (``--drop A:p``) are reported as missed, exactly, per line:
every message of a dropped packet, a line's last packet included (the feed handler counts
the tail it never received against the replayer's intended end, omdp/replay.h), so the
replayer's sent = the feed handler's received + missed on every line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from pipeline_support import CAPTURE_DATE, leftovers, line_packets

from omdp.metrics.run_files import read_run_file
from omdp.native import lib
from ops.pipeline.assemble import RunOptions
from ops.pipeline.feed_sender import read_replay_status
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

P = 0.02


def dropped(seed: int, line: int, n: int) -> np.ndarray:
    """The replayer's drop decision for each of a line's packets on copy A, lap 0."""
    threshold = int(P * 2.0**64)
    return np.array([lib.omdp_replay_drop_hash(seed, line, 0, 0, i) < threshold for i in range(n)])


def test_injected_drops_are_missed_exactly_tail_included(data_dir: Path) -> None:
    lines = line_packets(data_dir / "captures" / CAPTURE_DATE)
    # the first seed that drops some line's last packet: the tail case, chosen, not hoped for
    seed = next(s for s in range(1, 10_000)
                if any(dropped(s, ln, len(lp.payloads))[-1] for ln, lp in lines.items()))
    expected = {ln: int(lp.counts[dropped(seed, ln, len(lp.payloads))].sum()) for ln, lp in lines.items()}
    pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE,
                       RunOptions(rate="4x", seconds=None, loop=False, drops=f"A:{P}", seed=seed))
    run = run_pipeline(pp, data_dir)
    assert run.result.ok, run.result.failure
    a = run.accounting
    assert a.messages_missed == sum(expected.values())
    assert a.messages_received == a.routed == a.processed
    # per line: the replayer's intended (sent + dropped, one message per sequence reset) =
    # the feed handler's received + missed, from each line's last ingest row
    ingest = read_run_file(run.run_dir, "ingest.parquet").to_pydict()
    last: dict[int, tuple[int, int]] = {}
    for ts, ln, rec, mis in sorted(zip(ingest["ts_ns"], ingest["line"], ingest["messages_received"],
                                       ingest["messages_missed"])):
        last[int(ln)] = (int(rec), int(mis))
    replay_lines = {}
    k = 0
    while (st := read_replay_status(run.run_dir, k)) is not None:
        replay_lines.update({int(ls["line"]): ls for ls in st["lines"]})
        k += 1
    assert set(replay_lines) == set(lines) == set(last)
    for ln, ls in replay_lines.items():
        sent = ls["messages_intended"] + ls["control_packets"]
        received, missed = last[ln]
        assert ls["messages_dropped"] == expected[ln] == missed, ln
        assert sent == received + missed, (ln, sent, received, missed)
    assert run.verdict.sustainable is False and any("missed" in r for r in run.verdict.reasons)
    assert not leftovers(run.result.run_id)
