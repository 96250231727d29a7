"""``omdp demo``: the whole pipeline on this machine in about half a minute.

1. a short synthetic capture in ``<data>/captures/<date>/`` (made unless one is there);
2. the fused topology (``ops/topologies/opra_fused.toml``) fitted to this machine's CPUs:
   the replayer on the first allowed CPU, feed handler -> engines -> collectors on the
   second (the same one when only one is allowed);
3. the run: replay at ``rate`` for ``seconds`` into the feed handler's ring, then the
   breakdown, feed rate, ingest and accounting.
"""
from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path

from ops.pipeline.assemble import RunOptions
from ops.pipeline.capture_info import capture_dir
from ops.pipeline.run_pipeline import DashboardHook, PipelineRun, plan_pipeline, run_pipeline
from ops.topologies import topology_path

DEMO_DATE = dt.date(2008, 2, 4)
"""The paper's capture date (Monday, February 4, 2008)."""
DEMO_CAPTURE_SECONDS = 5.0


def ensure_capture(data_dir: Path, seconds: float, seed: int, say: Callable[[str], None]) -> Path:
    """The demo capture: reuse the one under ``data_dir`` or synthesize it."""
    directory = capture_dir(data_dir, DEMO_DATE)
    if (directory / "manifest.json").is_file():
        say(f"1/3 capture: reusing {directory}")
        return directory
    from ops.synth.generator import SynthConfig, synthesize

    say(f"1/3 capture: synthesizing {seconds:g} s of a February-2008-like feed at 1x into {directory} ...")
    res = synthesize(SynthConfig(data=data_dir, date=DEMO_DATE, seconds=seconds, seed=seed, progress=False))
    m = res.manifest
    say(f"    {m.rate.packets:,} packets, {m.rate.messages:,} messages on {len(m.lines)} lines, "
        f"{m.universe.underlyings:,} underlyings, in {res.setup_s + res.elapsed_s:.1f} s")
    return directory


def machine_overrides() -> tuple[str, ...]:
    """Pin the demo to the CPUs this process may use: replay on the first, the pipeline on
    the second (or the first, on a one-CPU machine)."""
    cpus = sorted(os.sched_getaffinity(0))
    replay, app = cpus[0], cpus[1] if len(cpus) > 1 else cpus[0]
    return (f"partitions.replay.cpus=[{replay}]", f"partitions.ingest.cpus=[{replay}]",
            f"partitions.signals.cpus=[{replay}]", f"partitions.app.cpus=[{app}]", f"operators.fs.params.cpus=[{replay}]",
            f"operators.de.params.pricing_cpus=[{replay}]")


def run_demo(data_dir: Path, seconds: float, rate: str, capture_seconds: float, seed: int,
             say: Callable[[str], None], dashboard: DashboardHook | None = None,
             running: Callable[[], None] | None = None) -> PipelineRun:
    """Capture, plan and run the demo; returns the run (its ``text()`` is the report).
    ``running`` is called as the pipeline starts (the command's countdown starts there)."""
    ensure_capture(data_dir, capture_seconds, seed, say)
    topo = topology_path("opra_fused")
    pp = plan_pipeline(topo, data_dir, DEMO_DATE, RunOptions(rate=rate, seconds=seconds), machine_overrides())
    r = pp.assembly.routing
    say(f"2/3 pipeline: {topo.name}: {len(pp.assembly.lines)} lines into one feed handler, "
        f"{r.engines} decision engines (routing imbalance {r.imbalance() or 1:.3f}), replay on CPU "
        f"{pp.plan.partition('replay').cpus}, pipeline on CPU {pp.plan.partition('app').cpus}")
    say(f"3/3 running for {seconds:g} s at {rate} ...")
    if running is not None:
        running()
    return run_pipeline(pp, data_dir, config="demo fused ring", dashboard=dashboard, echo=say)
