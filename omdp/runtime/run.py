"""Running a plan on this machine: check it, make the run directory, supervise it.

``run_plan`` is the one entry point; ``omdp run`` (ops/cli/run.py) builds the plan from a
topology file and the registry and calls it. Everything that can refuse the run is checked
first (``preflight``: this machine has the CPUs and hosts, the run id is well formed and
unused, the rings fit in /dev/shm), so a refused run leaves no run directory. Before it
starts, it removes the shared memory that runs killed on this host left behind
(``shm_inventory.clean_dead``: only segments whose owner is dead): a run's own processes
unlink everything when they end, even when a partition dies, but a SIGKILLed ``omdp run``
cannot unlink the stats segment it owns.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omdp.plan import Plan
from omdp.runtime.machine import check_machine
from omdp.runtime.mpi_supervisor import MpiSupervisor, mpi_plan_problems, plan_uses_mpi
from omdp.runtime.rundir import (DEFAULT_DATA_DIR, RunIdError, check_run_id, claim_run_dir, discard_unstarted,
                                 find_run_dir, new_run_id)
from omdp.runtime.shm_room import shm_shortfall
from omdp.runtime.supervisor import RunResult, Supervisor
from omdp.topology.load import TopologyError
from omdp.transport.shm_inventory import NOT_A_SEGMENT, clean_dead, list_owned_segments


def preflight(plan: Plan, data_dir: Path, run_id: str, shm_extra: dict[str, int] | None = None) -> None:
    """Raise TopologyError (naming the field or option) when ``plan`` cannot run here as
    ``run_id``; creates nothing. ``shm_extra``: shared memory the caller will create
    besides the plan's rings (name -> bytes)."""
    if not plan.registry:
        raise TopologyError(plan.source, [("", "the plan names no registry (build it with a Registry that has a ref, "
                                           "e.g. ops.pipeline.registry.build_registry)")])
    problems = check_machine(plan)
    problems += mpi_plan_problems(plan) if plan_uses_mpi(plan) else []
    if problems:
        raise TopologyError(plan.source, problems)
    try:
        check_run_id(run_id)
    except RunIdError as e:
        raise TopologyError(plan.source, [("", str(e))]) from None
    taken = find_run_dir(data_dir, run_id)
    if taken is not None:
        raise TopologyError(plan.source, [("--run-id", f"{run_id}: already used by the run in {taken} (a run id "
                                           "names one run; give another, or leave --run-id out for a fresh one)")])
    short = shm_shortfall(plan, shm_extra)
    if short:
        raise TopologyError(plan.source, [("/dev/shm", short)])


def run_plan(plan: Plan, data_dir: Path = DEFAULT_DATA_DIR, duration: float | None = None,
             run_id: str | None = None, echo: Callable[[str], None] | None = None,
             rdir: Path | None = None) -> RunResult:
    """Run ``plan`` to its end, for ``duration`` seconds, or until a stop signal. Raises
    TopologyError (naming the field) when this machine cannot run it; a run that fails
    returns a failed result with the reason. ``rdir``: the run directory its caller
    already claimed (``claim_run_dir``, after its own ``preflight``)."""
    run_id = run_id or new_run_id()
    if rdir is None:
        preflight(plan, data_dir, run_id)
        try:
            rdir = claim_run_dir(data_dir, run_id)
        except RunIdError as e:
            raise TopologyError(plan.source, [("--run-id", str(e))]) from None
    try:
        stale = clean_dead()
        if echo is not None:
            if stale:
                echo(f"removed {len(stale)} shared memory segment(s) left by runs that died: "
                     + ", ".join(seg.name for seg in stale))
            for seg in list_owned_segments():
                if seg.kind == NOT_A_SEGMENT:
                    echo(f"skipped /dev/shm/{seg.name}: {seg.detail}")
        supervisor = MpiSupervisor if plan_uses_mpi(plan) else Supervisor  # mpi channels: one MPI job's ranks
        return supervisor(plan, rdir, run_id, echo).run(duration)
    except BaseException:
        discard_unstarted(rdir)
        raise
