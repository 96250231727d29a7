"""The ``mpi`` transport between two ranks of one ``mpiexec`` job: round trip, back-pressure,
stop while blocked, peer death, and no MPI file left in /dev/shm. Skipped, with the
reason, where this build has no MPI part or no mpiexec is found (pip install '.[mpi]',
then rebuild omdp: docs/mpi.md)."""
from __future__ import annotations

from pathlib import Path

import pytest

from omdp.transport.mpi_job import mpi_job_unavailable
from mpi_ranks_support import run_job

pytestmark = pytest.mark.skipif(mpi_job_unavailable() is not None, reason=str(mpi_job_unavailable()))


def _job(scenario: str) -> dict[int, dict]:
    # in peer_death rank 0 kills itself: only rank 1 reports, and the job is ended after it
    proc, results = run_job(scenario, ranks=(1,) if scenario == "peer_death" else (0, 1))
    assert set(results) >= {1}, f"{scenario}: rank 1 reported nothing; stderr:\n{proc.stderr[-3000:]}"
    return results


@pytest.mark.full
def test_mpi_round_trip_every_size_in_order_then_peer_closed() -> None:
    r = _job("roundtrip")
    tx, rx = r[0], r[1]
    assert tx["ok"] == 2000 and rx["n"] == 2000
    assert rx["bad"] == []
    assert rx["end"] == "PeerClosedError"
    assert tx["too_big"] == "MessageTooLargeError"
    assert tx["counters"]["messages"] == rx["counters"]["messages"] == 2000
    assert tx["counters"]["bytes"] == rx["counters"]["bytes"]


@pytest.mark.full
def test_mpi_slow_receiver_back_pressures_the_sender() -> None:
    r = _job("backpressure")
    tx, rx = r[0], r[1]
    # block: queue_size puts, then no credit while the receiver holds every slot
    assert tx["first"] == [True] * 4
    assert tx["ready_when_full"] is False and tx["fifth_now"] is False
    assert tx["full_counters"]["messages"] == 4 and tx["full_counters"]["full_events"] == 1
    assert tx["fifth_blocking"] is True  # went once the receiver released
    assert rx["held"] == 4 and rx["after_release"] == 1 and rx["end_block"] == "PeerClosedError"
    # drop: the four credits of the greeting, the other six counted and dropped
    assert tx["drop_results"] == [True] * 4 + [False] * 6
    assert tx["drop_counters"]["drops"] == 6 and tx["drop_counters"]["messages"] == 4
    assert rx["drop_got"] == 4


@pytest.mark.full
def test_mpi_stop_interrupts_a_blocked_get_and_put() -> None:
    r = _job("stop_blocked")
    tx, rx = r[0], r[1]
    assert rx["idle_get"] is None          # get with no timeout ended by stop()
    assert tx["sent"] == [True, True]
    assert tx["blocked_put"] is False      # put with no credit and no timeout ended by stop()
    assert rx["full_got"] == 2 and rx["full_end"] == "PeerClosedError"


@pytest.mark.full
def test_mpi_peer_death_is_a_named_error_within_a_second_and_leaves_no_file() -> None:
    r = _job("peer_death")
    rx = r[1]
    assert rx["error"] == "PeerDeadError", rx
    assert "MPI_ERR_PROC_FAILED" in rx["message"]
    assert rx["after_kill_s"] < 1.0
    assert rx["files"], "the job's ranks mapped no MPI file (not the shared-memory path?)"
    assert not [f for f in rx["files"] if Path(f).exists()]  # the job's own files, not another job's
