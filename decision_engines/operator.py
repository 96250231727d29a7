"""The decision engine as a pipeline operator, and its registration.

``decision_engine`` is native: the runtime calls ``omdp_engine_op_vtable`` in C for every
batch. Its factory (run in the partition's process) creates the engine in Python, starts the
pricing refresher thread beside it when a valuation date is given, and hands the C operator
the engine to share (reference counted: whichever lets go last frees it).

Ports: in ``quotes`` (opra_msg); out ``samples`` (opra_msg, 1 in ``sample_every``) and
``signals`` (signal).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import (DEFAULT_MAX_GROUPS, DEFAULT_MAX_SERIES, DEFAULT_SAMPLE_EVERY,
                                            EngineConfig, PricingConfig)
from decision_engines.pricing.refresher import PricingRefresher, pricing_counters
from decision_engines.signal_record import SIGNAL_DTYPE
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import OperatorContext
from omdp.runtime.reshard import ReshardSegment
from omdp.record import RT_OPRA_MSG, RT_SIGNAL
from omdp.registry import OperatorKind, Port, RecordType, Registry

OPRA_MSG = RecordType("opra_msg", RT_OPRA_MSG, OPRA_MSG_DTYPE)
SIGNAL = RecordType("signal", RT_SIGNAL, SIGNAL_DTYPE)
DEFAULT_OUT_BYTES = 65536


class DecisionEngineParams(BaseModel):
    """``decision_engine`` parameters in a topology file; the defaults live in engine_config."""

    model_config = ConfigDict(extra="forbid")

    max_series: int = Field(DEFAULT_MAX_SERIES, ge=1, le=1 << 24, description="series slots, preallocated")
    max_groups: int = Field(DEFAULT_MAX_GROUPS, ge=1, le=1 << 24, description="(underlying, expiry) groups")
    sample_every: int = Field(DEFAULT_SAMPLE_EVERY, ge=0, description="forward 1 in N messages; 0: none")
    out_bytes: int = Field(DEFAULT_OUT_BYTES, ge=1024, le=1 << 26, multiple_of=8, description="output buffer")
    as_of: dt.date | None = Field(None, description="valuation date (the capture date); None: no pricing")
    pricing_period_s: float = Field(0.1, gt=0, description="pricing refresh period")
    pricing_cpus: list[int] = Field(default_factory=list, description="CPUs of the pricing thread; empty: the partition's")
    pricing_nice: int = Field(0, ge=0, le=19, description="niceness of the pricing thread (19: only spare CPU time)")
    reshard: bool = Field(False, description="buckets may move to and from this engine at run time (the run's "
                                             "reshard segment; engine index = replica)")


@dataclass(frozen=True)
class EngineNativeOperator(NativeOperator):
    """The native operator plus what keeps its Python side alive: the engine (shared with the
    C operator) and the pricing refresher, if any."""

    engine: DecisionEngine | None = None
    refresher: PricingRefresher | None = None
    reshard: ReshardSegment | None = None

    def close(self) -> None:
        """After the C operator let go of the engine: stop pricing, detach the reshard segment."""
        if self.refresher is not None:
            self.refresher.stop()
        if self.reshard is not None:
            self.reshard.close()

    def counters(self) -> dict[str, int | str]:
        """The pricing refresher's figures (PricingRefresher.counters), when it runs."""
        return pricing_counters([self.refresher]) if self.refresher is not None else {}


def make_engine_operator(p: DecisionEngineParams, ctx: OperatorContext) -> EngineNativeOperator:
    """Factory of ``decision_engine``: engine id = replica index."""
    reshard = ReshardSegment.for_operator(ctx.name, ctx.run_dir) if p.reshard else None
    engine = DecisionEngine(EngineConfig(max_series=p.max_series, max_groups=p.max_groups,
                                         sample_every=p.sample_every, engine_id=ctx.replica))
    refresher = None
    if p.as_of is not None:
        refresher = PricingRefresher(engine, PricingConfig(as_of=p.as_of, period_s=p.pricing_period_s))
        refresher.start(p.pricing_cpus, p.pricing_nice)
    params = ffi.new("omdp_engine_op_params_t *")
    params.shared = engine.handle
    params.out_bytes = p.out_bytes
    params.reshard = reshard.c_handle if reshard is not None else ffi.NULL
    return EngineNativeOperator(lib.omdp_engine_op_vtable(), params, engine=engine, refresher=refresher,
                                reshard=reshard)


def register_decision_engines(registry: Registry) -> None:
    """Add the opra_msg and signal record types (if absent) and ``decision_engine``."""
    for rt in (OPRA_MSG, SIGNAL):
        if rt.name not in registry.record_types:
            registry.add_record_type(rt)
    registry.add(OperatorKind(
        "decision_engine",
        (Port("quotes", OPRA_MSG.name),),
        (Port("samples", OPRA_MSG.name), Port("signals", SIGNAL.name)),
        make_engine_operator,
        DecisionEngineParams,
        doc="quote books, NBBO, crossed/locked, off-smile and parity signals; samples 1 in N (C)",
    ))
