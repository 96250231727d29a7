"""Processes that hold omdp shared memory for a test: a replay service's two segments and a
run's stats segment, one holder per run id, the first of them SIGKILLed - a dead owner's
segments beside a live owner's, as a killed run leaves them."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from multiprocessing.process import BaseProcess

from omdp.transport.shm_names import new_run_id

CTX = mp.get_context("fork")


def held_names(run: str) -> list[str]:
    """The segments a holder of ``run`` creates."""
    return [f"omdp-replay-{run}-ctl", f"omdp-replay-{run}-intended", f"omdp-{run}-stats"]


def hold_segments(run: str, ready) -> None:
    """Create the segments of ``run`` (``held_names``), say so on ``ready``, hold them a minute."""
    from omdp.metrics.stats_segment import StatsWriter
    from ops.replay.ctl_segment import CtlSegment
    from ops.replay.intended_table import IntendedTable
    from ops.replay.shm_segments import ctl_name, intended_name

    held = (CtlSegment.create(ctl_name(run), n_senders=1, log_capacity=64, creator_pid=os.getpid()),
            IntendedTable.create(intended_name(run), max_line=2, capacity=16, run_id=run, creator_pid=os.getpid()),
            StatsWriter.create(run))
    ready.set()
    time.sleep(60)
    del held


def dead_and_live_holders() -> tuple[tuple[str, str], list[BaseProcess]]:
    """Two run ids and their holders, each ready; the first holder SIGKILLed and reaped (the
    caller kills the second when done)."""
    runs = (new_run_id(), new_run_id())
    procs = []
    for run in runs:
        ready = CTX.Event()
        proc = CTX.Process(target=hold_segments, args=(run, ready))
        proc.start()
        assert ready.wait(30)
        procs.append(proc)
    os.kill(procs[0].pid, signal.SIGKILL)
    procs[0].join()
    return runs, procs
