"""The per-benchmark targets: met on the bound, not met past it either way, not measured
when the figure is missing; and the Spark jobs' targets found in a bench's results."""
from __future__ import annotations

from ops.bench.targets import DECODE, ENGINE, FEEDS_SPEEDUP, Target
from ops.cli.bench.analytics import analytics_targets


def test_bounds_hold_on_the_bound_and_fail_past_it() -> None:
    assert DECODE.met(30e6) and not DECODE.met(29.99e6)
    assert ENGINE.met(60.0) and not ENGINE.met(60.01)
    assert DECODE.line(36.36e6) == ("target: decode per packet from C, as the feed handler >= 30 M messages/s per "
                                    "core: met (this run 36.36)")
    assert "NOT MET (this run 61.5; on the model market)" in ENGINE.line(61.5, "on the model market")
    assert Target("x", 1.0, True, "u").line(None, "refused") == "target: x >= 1 u: not measured (refused)"
    assert ENGINE.verdict(None)["met"] is None and ENGINE.verdict(59.0)["met"] is True


def decode_row(wall: float, per_cpu: float) -> dict:
    return {"date": "2008-02-04", "decode_wall_s": wall, "messages_per_task_cpu_s": per_cpu}


def replay_row(per_cpu: float, wall_over: float) -> dict:
    return {"date": "2008-02-04", "config": "book-only", "messages_per_task_cpu_s": per_cpu, "wall_over_capture": wall_over}


def test_analytics_targets_per_master_and_the_speed_up() -> None:
    results = [{"master": "local[1]", "decode": [decode_row(2.29, 4.85e6)], "replay": [replay_row(4.34e6, 0.17)]},
               {"master": "local[2]", "decode": [decode_row(1.36, 4.73e6)], "replay": [replay_row(4.95e6, 0.11)]}]
    found = analytics_targets(results)
    verdicts = [v for _, v in found]
    assert [v["met"] for v in verdicts] == [False, True, True, False, True, True, False]
    assert verdicts[-1]["target"] == FEEDS_SPEEDUP.what and abs(verdicts[-1]["measured"] - 2.29 / 1.36) < 1e-9
    assert "2.29 s against 1.36 s" in found[-1][0]
    assert len(analytics_targets(results[1:])) == 3   # one master: no speed-up
