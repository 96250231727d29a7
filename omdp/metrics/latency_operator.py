"""The latency collector as a registered operator kind (``latency_collector``, C, a sink).

``register_latency_collector`` adds it to a registry for whatever record type the caller's
pipeline forwards (``omdp`` names no record body: the caller passes the record type and the
``IdentityLayout`` of that type). In a partition process the factory makes the process's
``LatencyCollector`` (publishing live into the run's stats segment when the run has one),
and the C operator borrows it: the partition loop feeds batches straight into C.

In a run (a run directory), memory stays bounded all day: the C loop hands its sample rows
over in chunks of ``chunk_rows`` and a drain thread of this process writes each chunk to
samples.parquet as the run goes (``LatencyCollector.hand_off_chunks``).

At the end of the run ``finish_latency_collectors`` publishes the final figures and finishes
``samples.parquet`` in the run directory: when the partition closes its operators
(``LatencyNativeOperator.close``), and as a fallback at interpreter exit (``atexit``).
"""
from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from omdp.metrics.latency_collector import (
    DEFAULT_CHUNK_ROWS,
    DEFAULT_MAX_ROWS,
    DEFAULT_SAMPLE_EVERY,
    PAPER_COLLECT,
    PAPER_REPORT,
    LatencyCollector,
)
from omdp.metrics.sample_identity import IdentityLayout
from omdp.metrics.stats_segment import StatsSegmentError, StatsWriter
from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import OperatorContext
from omdp.registry import OperatorKind, Port, Registry

KIND = "latency_collector"


class LatencyCollectorParams(BaseModel):
    """Parameters of a ``latency_collector`` instance; the defaults live here."""

    model_config = ConfigDict(extra="forbid")

    sample_every: int = Field(DEFAULT_SAMPLE_EVERY, ge=1, description="the run's 1-in-N sampling (recorded)")
    select: Literal["flagged", "every_n"] = Field("flagged", description="take flagged records, or 1 in N itself")
    method: Literal["all", "middle"] = Field("all", description="report all samples, or the paper's middle rows")
    collect: int = Field(PAPER_COLLECT, ge=1, description="middle method: samples collected")
    report: int = Field(PAPER_REPORT, ge=1, description="middle method: samples reported (the middle ones)")
    publish_interval_ms: float = Field(100.0, ge=0, description="live publication period")
    max_rows: int = Field(DEFAULT_MAX_ROWS, ge=0,
                          description="sample rows held in memory (in a run: beside the chunks written as it goes)")
    chunk_rows: int = Field(DEFAULT_CHUNK_ROWS, ge=1,
                            description="in a run, method 'all': rows per chunk written to samples.parquet as it goes")
    live: bool = Field(True, description="publish into the run's stats segment when it exists")


DRAIN_PERIOD_S = 0.2
"""How often the drain thread looks for a chunk the C loop handed over."""


class _ChunkDrain:
    """A daemon thread writing the chunks a C loop hands over to samples.parquet."""

    def __init__(self, collector: LatencyCollector, name: str) -> None:
        self._collector = collector
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"omdp-drain-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(DRAIN_PERIOD_S):
            self._collector.drain_chunks()

    def stop(self) -> None:
        """Stop the thread, then write what it had not taken yet."""
        self._stop.set()
        self._thread.join()
        self._collector.drain_chunks()


@dataclass
class _Active:
    collector: LatencyCollector
    stats: StatsWriter | None
    run_dir: Path | None
    drain: _ChunkDrain | None = None


_ACTIVE: dict[str, _Active] = {}
_atexit_registered = False


def _attach_stats(ctx: OperatorContext, live: bool) -> StatsWriter | None:
    """The run's stats segment (named by the run id, the run directory's name), if any."""
    if not live or ctx.run_dir is None:
        return None
    try:
        return StatsWriter.attach(Path(ctx.run_dir).name)
    except (StatsSegmentError, ValueError):
        return None


def make_latency_operator(p: LatencyCollectorParams, ctx: OperatorContext, record_type: int,
                          identity: IdentityLayout | None) -> NativeOperator:
    """Factory body: this process's collector, and the C operator borrowing it."""
    global _atexit_registered
    if ctx.replicas != 1:
        raise ValueError(f"{ctx.name}: one latency collector per run (samples.parquet is one file), got {ctx.replicas}")
    stats = _attach_stats(ctx, p.live)
    run_dir = Path(ctx.run_dir) if ctx.run_dir else None
    spill = run_dir is not None and p.method == "all"
    collector = LatencyCollector(
        sample_every=p.sample_every, select=p.select, method=p.method, collect=p.collect, report=p.report,
        record_type=record_type, identity=identity, stats=stats, name=ctx.name,
        publish_interval_ms=p.publish_interval_ms, max_rows=p.max_rows,
        spill_dir=run_dir if spill else None, chunk_rows=p.chunk_rows,
    )
    drain = None
    if spill:
        collector.hand_off_chunks()
        drain = _ChunkDrain(collector, ctx.name)
    _ACTIVE[ctx.name] = _Active(collector, stats, run_dir, drain)
    if not _atexit_registered:
        atexit.register(finish_latency_collectors)
        _atexit_registered = True
    params = ffi.new("omdp_latency_op_params_t *", {"collector": collector.c_pointer})
    return LatencyNativeOperator(lib.omdp_latency_collector_vtable(), params, instance=ctx.name)


@dataclass(frozen=True)
class LatencyNativeOperator(NativeOperator):
    """The C operator of one collector instance; closing it (when its partition closes,
    before the interpreter shuts down) writes the instance's samples.parquet."""

    instance: str = ""

    def close(self) -> None:
        """Final figures and samples.parquet of this instance."""
        finish_latency_collectors(self.instance)


def active_latency_collectors() -> dict[str, LatencyCollector]:
    """Instance name -> the collector of every latency_collector made in this process."""
    return {name: a.collector for name, a in _ACTIVE.items()}


def finish_latency_collectors(only: str | None = None) -> list[Path]:
    """After the partition loop ended: final live figures, the operator entries closed,
    samples.parquet written to each run directory (of every collector, or of instance
    ``only``); returns the files written."""
    written = []
    for name in [only] if only is not None else list(_ACTIVE):
        if name not in _ACTIVE:
            continue
        a = _ACTIVE.pop(name)
        if a.drain is not None:
            a.drain.stop()
        a.collector.close()
        if a.run_dir is not None:
            written.append(a.collector.write_samples(a.run_dir))
        if a.stats is not None:
            a.stats.close()
    return written


def register_latency_collector(registry: Registry, record_type: str, identity: IdentityLayout | None = None,
                               kind: str = KIND) -> None:
    """Add the latency collector kind (named ``kind``), its input typed ``record_type``
    (already registered), reading sample identities with ``identity``."""
    rt = registry.record_types[record_type].type_id

    def factory(p: LatencyCollectorParams, ctx: OperatorContext) -> NativeOperator:
        return make_latency_operator(p, ctx, rt, identity)

    registry.add(OperatorKind(kind, (Port("in", record_type),), (), factory, LatencyCollectorParams,
                              doc="per-hop latency of sampled records, live stats and samples.parquet (C)"))
