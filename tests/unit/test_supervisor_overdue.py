"""When a silent partition counts as dead. A running partition must heartbeat; one that
has sent its final report is closing (its operators' threads joined, their files written)
and has stopped heartbeating: on a loaded host an engines partition took longer than the
heartbeat timeout to exit after reporting "ended" and was killed, failing a run that had
done everything right. After the final report it has the drain time instead."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from omdp.runtime.supervisor import overdue
from omdp.topology.schema import RunSettings

RUN = RunSettings(heartbeat_timeout_s=10.0, drain_timeout_s=30.0)


def silent_for(state: str, seconds: float) -> str | None:
    return overdue(SimpleNamespace(state=state, last_seen=100.0), RUN, 100.0 + seconds)


@pytest.mark.parametrize("state", ["starting", "listening", "connected"])
def test_a_running_partition_silent_past_the_heartbeat_timeout_is_dead(state: str) -> None:
    assert silent_for(state, 9.9) is None
    assert silent_for(state, 10.5) == "no heartbeat for 10.5 s"


@pytest.mark.parametrize("state", ["ended", "stopped", "failed"])
def test_a_partition_closing_after_its_final_report_has_the_drain_time(state: str) -> None:
    assert silent_for(state, 10.5) is None
    assert silent_for(state, 29.9) is None
    assert silent_for(state, 30.5) == "not exited 30.5 s after its final report"


def test_the_heartbeat_timeout_still_bounds_a_closing_partition_when_it_is_the_longer() -> None:
    run = RunSettings(heartbeat_timeout_s=60.0, drain_timeout_s=30.0)
    assert overdue(SimpleNamespace(state="ended", last_seen=0.0), run, 45.0) is None
    assert overdue(SimpleNamespace(state="ended", last_seen=0.0), run, 61.0) is not None
