"""Running a plan on this machine: check it, make the run directory, supervise it.

``run_plan`` is the one entry point; ``omdp run`` (ops/cli/run.py) builds the plan from a
topology file and the registry and calls it. Before it starts, it removes the shared memory
that runs killed on this host left behind (``shm_inventory.clean_dead``: only segments whose
owner is dead): a run's own processes unlink everything when they end, even when a partition
dies, but a SIGKILLed ``omdp run`` cannot unlink the stats segment it owns.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omdp.plan import Plan
from omdp.runtime.machine import check_machine
from omdp.runtime.rundir import DEFAULT_DATA_DIR, new_run_id, run_dir
from omdp.runtime.supervisor import RunResult, Supervisor
from omdp.topology.load import TopologyError
from omdp.transport.shm_inventory import clean_dead
from omdp.transport.shm_names import shm_name


def run_plan(plan: Plan, data_dir: Path = DEFAULT_DATA_DIR, duration: float | None = None,
             run_id: str | None = None, echo: Callable[[str], None] | None = None) -> RunResult:
    """Run ``plan`` to its end, for ``duration`` seconds, or until a stop signal. Raises
    TopologyError (naming the field) when this machine cannot run it; a run that fails
    returns a failed result with the reason."""
    if not plan.registry:
        raise TopologyError(plan.source, [("", "the plan names no registry (build it with a Registry that has a ref, "
                                           "e.g. ops.pipeline.registry.build_registry)")])
    problems = check_machine(plan)
    from omdp.runtime.mpi_supervisor import MpiSupervisor, mpi_plan_problems, plan_uses_mpi

    mpi = plan_uses_mpi(plan)
    problems += mpi_plan_problems(plan) if mpi else []
    if problems:
        raise TopologyError(plan.source, problems)
    run_id = run_id or new_run_id()
    try:
        shm_name(run_id, "c0")
    except ValueError as e:
        raise TopologyError(plan.source, [("--run-id", str(e))]) from None
    stale = clean_dead()
    if stale and echo is not None:
        echo(f"removed {len(stale)} shared memory segment(s) left by runs that died: "
             + ", ".join(seg.name for seg in stale))
    supervisor = MpiSupervisor if mpi else Supervisor  # mpi channels: the partitions are one MPI job's ranks
    return supervisor(plan, run_dir(data_dir, run_id), run_id, echo).run(duration)
