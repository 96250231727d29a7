"""``elastic_engine``: the elastic engine partition as a pipeline operator, the drop-in twin of
``decision_engine`` (same ports: in ``quotes``; out ``samples`` and ``signals``).

The factory (run in the partition's process) creates the partition (``ElasticEngine``: bucket
engines and the worker pool) and starts its control thread, which every ``period_s`` steps
the controller (omdp.runtime.elastic_control), sets the level, and publishes the level, rate,
rate per level and decision counts to the run's stats segment (so the dashboard and
/metrics show them); at close it writes the whole control history to the run directory
(``elastic-<name>.json``, beside the run's other records). The C operator (elastic_op.h)
does the per-batch work.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from decision_engines.elastic import ElasticConfig, ElasticControl, ElasticEngine
from decision_engines.engine_config import DEFAULT_SAMPLE_EVERY, EngineConfig, PricingConfig
from decision_engines.pricing.refresher import PricingRefresher, pricing_counters
from decision_engines.operator import OPRA_MSG, SIGNAL
from omdp.atomic_files import write_text_atomic
from omdp.metrics.stats_segment import OperatorCounters, StatsSegmentError, StatsWriter
from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import OperatorContext
from omdp.registry import OperatorKind, Port, Registry
from omdp.runtime.elastic_control import Decision, ElasticController

log = logging.getLogger(__name__)
STATS_COUNTERS = 8
"""Counters per stats-segment entry (OMDP_STATS_OP_COUNTERS)."""
LEVEL_COUNTERS = ("level", "rate_per_s", "busy_pct", "saturated", "processed", "moves", "level_changes", "suspended")


class ElasticEngineParams(BaseModel):
    """``elastic_engine`` parameters in a topology file. Capacities are per bucket."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(2, ge=1, le=64, description="worker threads in the pool")
    buckets: int = Field(64, ge=1, le=1024, description="underlying buckets (a power of two)")
    level: int = Field(1, ge=1, le=64, description="initial active level")
    inline_worker0: bool = Field(True, description="worker 0 is the partition's own thread (level 1 needs no other core)")
    elastic: bool = Field(True, description="False: keep `level` workers active (a static thread level)")
    period_s: float = Field(1.0, gt=0, le=60, description="control period")
    max_series: int = Field(1 << 14, ge=1, le=1 << 24, description="series slots per bucket")
    max_groups: int = Field(1 << 11, ge=1, le=1 << 24, description="(underlying, expiry) groups per bucket")
    sample_every: int = Field(DEFAULT_SAMPLE_EVERY, ge=0, description="forward 1 in N of a bucket's messages; 0: none")
    ring_msgs: int = Field(4096, ge=16, le=1 << 20, description="input ring per bucket, messages (a power of two)")
    bucket_out_bytes: int = Field(1 << 16, ge=1 << 12, le=1 << 26, description="output ring per bucket (a power of two)")
    as_of: dt.date | None = Field(None, description="valuation date (the capture date); None: no pricing")
    pricing_period_s: float = Field(1.0, gt=0, description="pricing refresh period (every bucket in turn)")
    pricing_cpus: list[int] = Field(default_factory=list, description="CPUs of the pricing thread; empty: the partition's")
    pricing_nice: int = Field(0, ge=0, le=19, description="niceness of the pricing thread")
    worker_cpus: list[int] = Field(default_factory=list, description="CPUs of the worker threads; empty: the partition's")
    out_bytes: int = Field(65536, ge=1024, le=1 << 26, multiple_of=8, description="collect buffer of the operator")

    @field_validator("buckets", "ring_msgs", "bucket_out_bytes")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"must be a power of two (got {v})")
        return v

    @model_validator(mode="after")
    def _level_in_pool(self) -> "ElasticEngineParams":
        if self.level > self.workers:
            raise ValueError(f"level ({self.level}) must be at most workers ({self.workers})")
        return self


class ElasticControlThread:
    """Steps the control loop every period and publishes what it decided: entries ``NAME``
    (level, rate, busy, counters), ``NAME.peaks`` (peak rate per level) and
    ``NAME.decisions`` (count of each decision) in the run's stats segment."""

    def __init__(self, name: str, engine: ElasticEngine, ctl: ElasticControl | None, period_s: float,
                 stats: StatsWriter | None) -> None:
        self.name, self.engine, self.ctl, self.period_s, self.stats = name, engine, ctl, period_s, stats
        self._stop = threading.Event()
        self._entries: list[OperatorCounters] = []
        if stats is not None:
            n = engine.config.workers
            self._entries = [
                stats.register_operator(name, "elastic", LEVEL_COUNTERS),
                stats.register_operator(f"{name}.peaks", "elastic",
                                        [f"peak_l{i + 1}" for i in range(min(n, STATS_COUNTERS))]),
                stats.register_operator(f"{name}.decisions", "elastic", [d.value for d in Decision][:STATS_COUNTERS]),
            ]
        self._thread = threading.Thread(target=self._loop, name=f"elastic-{name}", daemon=True)

    def start(self) -> None:
        """Take the first readings and start the thread."""
        if self.ctl is not None:
            self.ctl.start()
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                rec = self.ctl.step() if self.ctl is not None else None
                self._publish(rec)
            except (StatsSegmentError, RuntimeError) as e:  # the run's segment went away: keep controlling
                log.warning("%s: control period not published: %s", self.name, e)

    def _publish(self, rec: Any) -> None:
        if not self._entries:
            return
        c = self.engine.counters()
        self._entries[0].publish([c["level"], int(rec.rate) if rec else 0, int(rec.busy * 100) if rec else 0,
                                  int(rec.saturated) if rec else 0, c["processed"], c["moves"], c["level_changes"],
                                  c["suspended"]])
        if self.ctl is not None:
            peaks = [int(p or 0) for p in self.ctl.controller.peak[:STATS_COUNTERS]]
            self._entries[1].publish(peaks)
            self._entries[2].publish([self.ctl.decisions[d.value] for d in Decision][:STATS_COUNTERS])

    def stop(self) -> None:
        """Stop the thread and close the stats entries (their last figures stay readable)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)
        for e in self._entries:
            try:
                e.close()
            except StatsSegmentError:
                pass

    def history(self) -> dict[str, Any]:
        """What the run records keep of the control loop."""
        out: dict[str, Any] = {"operator": self.name, "workers": self.engine.config.workers,
                               "buckets": self.engine.config.buckets, "period_s": self.period_s,
                               "elastic": self.ctl is not None, "counters": self.engine.counters()}
        if self.ctl is not None:
            out["decisions"] = dict(self.ctl.decisions)
            out["peaks"] = self.ctl.rates_per_level()
            out["periods"] = [vars(r) for r in self.ctl.history]
        return out


class _BucketPricing:
    """One thread pricing every bucket engine in turn (a refresher per bucket: each engine's
    limits come from its own NBBOs, as the static engine's do)."""

    def __init__(self, engine: ElasticEngine, config: PricingConfig) -> None:
        self.refreshers = [PricingRefresher(e, config) for e in engine.bucket_engines()]
        self.period_s = config.period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="omdp-elastic-pricing", daemon=True)
        self._cpus: tuple[int, ...] = ()
        self._nice = 0

    def start(self, cpus: list[int], nice: int) -> None:
        self._cpus, self._nice = tuple(cpus), nice
        self._thread.start()

    def _run(self) -> None:
        if self._cpus:
            os.sched_setaffinity(0, self._cpus)
        if self._nice:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self._nice)
        while not self._stop.wait(self.period_s):
            for r in self.refreshers:
                r.refresh_counted()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        for r in self.refreshers:
            r.engine.close()


@dataclass(frozen=True)
class ElasticNativeOperator(NativeOperator):
    """The C operator plus what keeps its Python side alive: the partition and its control thread."""

    engine: ElasticEngine | None = None
    control: ElasticControlThread | None = None
    pricing: _BucketPricing | None = None
    run_dir: Path | None = None

    def close(self) -> None:
        """After the C operator closed: stop pricing and the control loop, write its history, stop the workers."""
        if self.pricing is not None:
            self.pricing.stop()
        if self.control is not None:
            self.control.stop()
            if self.run_dir is not None:
                path = Path(self.run_dir) / f"elastic-{self.control.name.replace('[', '-').replace(']', '')}.json"
                try:
                    write_text_atomic(path, json.dumps(self.control.history(), indent=1))
                except OSError as e:
                    log.error("%s: cannot write %s: %s", self.control.name, path, e)
        if self.engine is not None:
            self.engine.close()

    def counters(self) -> dict[str, int | str]:
        """The bucket engines' pricing, summed (pricing_counters), when it runs."""
        return pricing_counters(self.pricing.refreshers) if self.pricing is not None else {}


def make_elastic_operator(p: ElasticEngineParams, ctx: OperatorContext) -> ElasticNativeOperator:
    """Factory of ``elastic_engine``: engine id = replica index."""
    cfg = ElasticConfig(engine=EngineConfig(max_series=p.max_series, max_groups=p.max_groups,
                                            sample_every=p.sample_every, engine_id=ctx.replica),
                        workers=p.workers, buckets=p.buckets, ring_msgs=p.ring_msgs, out_bytes=p.bucket_out_bytes,
                        level=p.level, inline_worker0=p.inline_worker0)
    engine = ElasticEngine(cfg)
    if p.worker_cpus:
        engine.pin_workers(p.worker_cpus)
    stats = None
    if ctx.run_dir is not None:
        try:
            stats = StatsWriter.attach(Path(ctx.run_dir).name)
        except (StatsSegmentError, ValueError):
            stats = None
    ctl = ElasticControl(engine, ElasticController(max_level=p.workers, level=p.level)) if p.elastic else None
    control = ElasticControlThread(ctx.name, engine, ctl, p.period_s, stats)
    control.start()
    pricing = None
    if p.as_of is not None:
        pricing = _BucketPricing(engine, PricingConfig(as_of=p.as_of, period_s=p.pricing_period_s))
        pricing.start(p.pricing_cpus, p.pricing_nice)
    params = ffi.new("omdp_elastic_op_params_t *")
    params.shared = engine._ptr
    params.out_bytes = p.out_bytes
    return ElasticNativeOperator(lib.omdp_elastic_op_vtable(), params, engine=engine, control=control,
                                 pricing=pricing, run_dir=ctx.run_dir)


def register_elastic_engine(registry: Registry) -> None:
    """Add ``elastic_engine`` (after ``decision_engine``, whose record types it uses)."""
    registry.add(OperatorKind(
        "elastic_engine",
        (Port("quotes", OPRA_MSG.name),),
        (Port("samples", OPRA_MSG.name), Port("signals", SIGNAL.name)),
        make_elastic_operator,
        ElasticEngineParams,
        doc="decision engines per underlying bucket on an elastic worker pool; level chosen from throughput (C)",
    ))
