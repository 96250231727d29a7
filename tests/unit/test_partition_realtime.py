"""A ``realtime`` partition (docs/topology.md "Real-time loops"): the topology field reaches
the plan, and the loop thread gets SCHED_FIFO where the process may have it, or says why not
(and runs on as an ordinary task) where it may not."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from omdp.plan import build_plan
from omdp.topology.load import load_topology
from ops.pipeline.registry import build_registry

TOPOLOGIES = Path(__file__).resolve().parents[2] / "ops" / "topologies"
"""The shipped topologies, wherever the tests run from."""

CHILD = """
import os
from omdp.runtime.machine import LOOP_RT_PRIORITY, enter_realtime

why = enter_realtime()
print(repr((why, os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK == os.SCHED_FIFO, os.sched_getparam(0).sched_priority == LOOP_RT_PRIORITY)))
"""


def _child(*prefix: str) -> tuple[str | None, bool, bool]:
    import ast

    # -P and the PYTHONPATH tests/conftest.py set: the child imports the omdp this process
    # imported (installed and compiled), not the checkout's source
    out = subprocess.run([*prefix, sys.executable, "-P", "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip())


def test_the_field_reaches_the_plan(tmp_path: Path) -> None:
    text = (TOPOLOGIES / "opra_fused.toml").read_text().replace(
        '[partitions.app]\noperators = ["fh", "de", "lc"]', '[partitions.app]\noperators = ["fh", "de", "lc"]\nrealtime = true')
    assert "realtime = true" in text
    path = tmp_path / "t.toml"
    path.write_text(text)
    plan = build_plan(load_topology(path), build_registry(), str(path))
    assert {p.name: p.realtime for p in plan.partitions} == {"replay": False, "app": True, "signals": False,
                                                            "ingest": False}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to be allowed SCHED_FIFO")
def test_the_loop_thread_gets_sched_fifo() -> None:
    assert _child() == (None, True, True)


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root and setpriv to drop CAP_SYS_NICE")
def test_refused_it_says_why_and_what_would_allow_it() -> None:
    why, fifo, _ = _child("setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice")
    assert not fifo and why is not None
    assert "SCHED_FIFO priority 40: EPERM" in why and "CAP_SYS_NICE" in why
