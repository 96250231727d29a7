"""Which partition a failed run names: the cause before its consequences. When an engine
partition is killed, the replayer feeding it reports a failure of its own (its ring's
receiver is dead), sometimes before the supervisor reaps the killed process; the run must
still say that the engine partition died."""
from __future__ import annotations

from types import SimpleNamespace

from omdp.runtime.control import EXIT_ENDED, EXIT_STOPPED
from omdp.runtime.supervisor import stopping_child


def child(name: str, state: str, code: int | None) -> SimpleNamespace:
    """What stopping_child reads of a partition: its reported state and its exit status."""
    return SimpleNamespace(name=name, state=state, proc=SimpleNamespace(returncode=code))


def test_a_killed_partition_is_named_before_the_one_that_failed_because_of_it() -> None:
    replay = child("replay", "failed", 1)
    app = child("app", "connected", -9)
    assert stopping_child([replay, app], expected_stop=False) is app


def test_a_reported_failure_is_named_when_nothing_died_on_its_own() -> None:
    replay = child("replay", "failed", None)
    app = child("app", "connected", None)
    assert stopping_child([app, replay], expected_stop=False) is replay


def test_partitions_that_ended_or_were_stopped_stop_nothing() -> None:
    ended = child("replay", "ended", EXIT_ENDED)
    stopped = child("app", "stopped", EXIT_STOPPED)
    running = child("signals", "connected", None)
    assert stopping_child([ended, stopped, running], expected_stop=True) is None
    assert stopping_child([ended, stopped, running], expected_stop=False) is stopped
