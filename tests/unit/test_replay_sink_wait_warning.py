"""Waits for ring room are warned about only once they cost the run more than noise."""
from __future__ import annotations

from ops.replay.service import sink_wait_warning
from ops.replay.status import SINK_WAIT_WARN_SHARE

RUN_NS = 30_000_000_000


def test_a_consumer_that_costs_the_schedule_is_warned_about() -> None:
    w = sink_wait_warning(0, 558_098, 1_356_200_000, RUN_NS, "ring:feed0")
    assert w == ("sender 0: waited 558,098 times (1356.2 ms) for room in ring:feed0: its consumer fell behind "
                 "(back-pressure, seen as pacing error)")


def test_a_few_short_waits_are_counted_not_warned() -> None:
    assert sink_wait_warning(0, 108, 200_000, RUN_NS, "ring:feed0") is None
    assert sink_wait_warning(0, 0, 0, RUN_NS, "ring:feed0") is None
    at_threshold = int(SINK_WAIT_WARN_SHARE * RUN_NS)
    assert sink_wait_warning(1, 5, at_threshold - 1, RUN_NS, "ring:x") is None
    assert sink_wait_warning(1, 5, at_threshold, RUN_NS, "ring:x") is not None
