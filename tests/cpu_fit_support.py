"""Running a shipped topology in a test that is about something else, on any machine.

The shipped topologies pin their partitions to CPUs 0 and 1, and ``omdp run`` refuses a CPU
the machine does not offer (before any other check): on a one-CPU machine, or under
``taskset -c 0``, a test of a run-id, a capture or a disk error would see that refusal
instead. ``on_cpus_here`` gives the ``--set`` options that move every partition onto the
CPUs this process may use."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path


def on_cpus_here(topology: Path) -> list[str]:
    """``--set partitions.NAME.cpus=[...]`` for every pinned partition of ``topology``, each on
    the CPUs this process may use (round robin, as many as it had, at most all of them)."""
    here = sorted(os.sched_getaffinity(0))
    partitions = tomllib.loads(Path(topology).read_text())["partitions"]
    out: list[str] = []
    for i, (name, spec) in enumerate(partitions.items()):
        if "cpus" in spec:
            cpus = sorted({here[(i + j) % len(here)] for j in range(len(spec["cpus"]))})
            out += ["--set", f"partitions.{name}.cpus={cpus}"]
    return out
