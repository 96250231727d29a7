"""A run's shared memory is checked against the room its /dev/shm has before it starts:
the plan's vega-shm rings plus what the caller adds (a pipeline's feed rings, stats and
reshard segments), refused with the figures when they do not fit."""
from __future__ import annotations

from pathlib import Path

from full_disk_support import small_disk  # noqa: F401  (fixture)

from omdp.plan import build_plan
from omdp.runtime.shm_room import plan_ring_bytes, ring_bytes, shm_free_bytes, shm_shortfall
from omdp.topology.load import load_topology
from ops.pipeline.registry import build_registry
from ops.topologies import topology_path


def plan_of(name: str, *overrides: str):
    return build_plan(load_topology(topology_path(name), overrides), build_registry(), name)


def test_the_plans_rings_are_counted() -> None:
    assert plan_ring_bytes(plan_of("seq_fused")) == 0
    assert plan_ring_bytes(plan_of("seq_split_vega")) == ring_bytes(32, 4096)
    assert plan_ring_bytes(plan_of("seq_split_vega", 'channel.transport="tcp"')) == 0


def test_a_run_that_does_not_fit_is_refused_with_the_figures(small_disk: Path) -> None:  # noqa: F811
    plan = plan_of("seq_split_vega")
    free = shm_free_bytes(small_disk)
    assert 0 < ring_bytes(32, 4096) < free <= 1 << 20
    assert shm_shortfall(plan, {"stats segment": 4096}, shm_dir=small_disk) is None
    why = shm_shortfall(plan, {"feed rings": 2 << 20}, shm_dir=small_disk)
    assert why is not None and why.startswith("the run needs 2.1 MiB of shared memory (vega-shm rings ")
    assert "feed rings 2.0 MiB" in why and f"but {small_disk} has 1.0 MiB free" in why
