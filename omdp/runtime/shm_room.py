"""Is there room in /dev/shm for a run's rings? Checked before the run starts.

Shared memory is a tmpfs: creating a segment (``ftruncate``) succeeds whatever room is left,
and the first write past the room kills the writer with SIGBUS in the middle of the run.
So ``run_plan`` adds up what the run will create here - each vega-shm ring whose receiver
shares this host's /dev/shm (a netns host that is ``isolated`` has its own), plus what the
caller names (the stats segment, a pipeline's feed rings) - and compares it with what
``statvfs`` says is free, refusing the run with the figures when it does not fit.
"""
from __future__ import annotations

import os
from pathlib import Path

from omdp.native import lib
from omdp.plan import Plan
from omdp.transport.shm_names import SHM_DIR


def ring_bytes(queue_size: int, max_message: int) -> int:
    """Bytes of one Vega ring region (slots, markers and header)."""
    return int(lib.omdp_vega_region_size(queue_size, max_message))


def plan_ring_bytes(plan: Plan) -> int:
    """Bytes of the plan's vega-shm rings made in this host's /dev/shm."""
    parts = {p.name: p for p in plan.partitions}
    total = 0
    for c in plan.channels:
        if c.spec.transport != "vega-shm":
            continue
        host = plan.hosts.get(parts[c.downstream].host) if c.downstream in parts else None
        if host is not None and host.netns and host.isolated:
            continue
        total += ring_bytes(c.spec.queue_size, c.spec.max_message)
    return total


def shm_free_bytes(shm_dir: Path = SHM_DIR) -> int:
    """Bytes an unprivileged writer may still use in ``shm_dir``."""
    st = os.statvfs(shm_dir)
    return st.f_bavail * st.f_frsize


def _size(n: int) -> str:
    """Bytes for people: 4.0 MiB, 25.3 GiB, 64.0 TiB."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n / 2**10:,.1f} KiB"


def shm_shortfall(plan: Plan, extra: dict[str, int] | None = None, shm_dir: Path = SHM_DIR) -> str | None:
    """Why the run does not fit in ``shm_dir`` (what it needs, what is free), or None."""
    if not shm_dir.is_dir():
        return None
    needs = {"vega-shm rings": plan_ring_bytes(plan), **(extra or {})}
    total = sum(needs.values())
    free = shm_free_bytes(shm_dir)
    if total <= free:
        return None
    parts = ", ".join(f"{k} {_size(v)}" for k, v in needs.items() if v)
    return (f"the run needs {_size(total)} of shared memory ({parts}) but {shm_dir} has {_size(free)} free: "
            "make the rings smaller (queue_size, max_message), remove dead runs' segments (omdp shm clean) "
            f"or give {shm_dir} more room")
