"""The market statistics' operator kinds and their registration (docs/market_stats.md):

  market_stats   fused after the feed handler (its de<k> ports fan out to in<k>): partial
                 state, deltas and watermarks to leader l on port d<l> (C); mode "route" is
                 the re-partitioning baseline
  market_merge   a leader: merges its keys' deltas, emits windows the watermarks allow (C)
  market_sink    the leaders' windows: market_windows.parquet and market_live.json (Python;
                 a window a second)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from feedhandlers.feed_handler import ENGINE_PORTS
from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import OperatorContext
from omdp.registry import OperatorKind, Port, RecordType, Registry
from ops.market.core import MODES
from ops.market.records import MARKET_DTYPE, RT_MARKET
from ops.market.sink import MarketSink, MarketSinkParams

MARKET = RecordType("market", RT_MARKET, MARKET_DTYPE)
LEADER_PORTS = tuple(f"d{k}" for k in range(int(lib.OMDP_MKT_MAX_LEADERS)))
INPUT_PORTS = tuple(f"in{k}" for k in range(min(len(ENGINE_PORTS), int(lib.OMDP_MKT_MAX_INPUTS))))


def _pow2(v: int) -> int:
    if v < 64 or v & (v - 1):
        raise ValueError(f"must be a power of two >= 64, got {v}")
    return v


class MarketStatsParams(BaseModel):
    """market_stats parameters (omdp_market_stats_params_t)."""

    model_config = ConfigDict(extra="forbid")

    window_ms: int = Field(1000, ge=1, description="tumbling window of event time (the OPRA time), ms")
    capacity: int = Field(1 << 17, le=1 << 26,
                          description="series slots per open window (power of two; 3/4 fill; 40 B each: key and cell)")
    leaders: int = Field(1, ge=1, le=int(lib.OMDP_MKT_MAX_LEADERS), description="leaders: port d<l> feeds leader l")
    lateness: int = Field(1, ge=0, le=3, description="windows kept open behind the newest")
    mode: Literal["shared", "route"] = Field("shared", description="shared: partial state; route: the baseline")
    multiplier: int = Field(100, ge=1, description="contract multiplier for notional")
    out_records: int = Field(64, ge=1, le=4096, description="records per emitted batch (128 B each; 64 fill 8 KiB)")

    _cap = field_validator("capacity")(classmethod(lambda cls, v: _pow2(v)))


class MarketMergeParams(BaseModel):
    """market_merge parameters (omdp_market_merge_params_t)."""

    model_config = ConfigDict(extra="forbid")

    sources: int = Field(1, ge=1, le=int(lib.OMDP_MKT_MAX_SOURCES), description="market_stats instances feeding it")
    capacity: int = Field(1 << 17, le=1 << 26, description="table slots per pending window (power of two; 64 B each)")
    pending: int = Field(8, ge=2, le=64,
                         description="windows held for watermarks; more force the oldest out incomplete")
    out_records: int = Field(64, ge=1, le=4096, description="records per emitted batch")

    _cap = field_validator("capacity")(classmethod(lambda cls, v: _pow2(v)))


def _stats(p: MarketStatsParams, ctx: OperatorContext) -> NativeOperator:
    return NativeOperator(lib.omdp_market_stats_vtable(), ffi.new("omdp_market_stats_params_t *", {
        "window_ms": p.window_ms, "capacity": p.capacity, "leaders": p.leaders, "lateness": p.lateness,
        "mode": MODES[p.mode], "source": ctx.replica, "multiplier": p.multiplier, "out_records": p.out_records}))


@dataclass(frozen=True)
class MarketMergeOperator(NativeOperator):
    """market_merge, which hears of a handler partition's death: the market_stats replicas
    in it are its dead sources (their windows go out incomplete once the others pass them)."""

    sources: int = 1

    def peer_gone_hook(self, gone: list[tuple[str, int]]) -> tuple[Any, int] | None:
        """omdp_market_merge_peer_gone with the bitmap of the dead sources, if any."""
        bits = 0
        for kind, replica in gone:
            if kind == "market_stats" and replica < self.sources:
                bits |= 1 << replica
        return (ffi.addressof(lib, "omdp_market_merge_peer_gone"), bits) if bits else None


def _merge(p: MarketMergeParams, ctx: OperatorContext) -> NativeOperator:
    return MarketMergeOperator(lib.omdp_market_merge_vtable(), ffi.new("omdp_market_merge_params_t *", {
        "sources": p.sources, "capacity": p.capacity, "pending": p.pending, "leader": ctx.replica,
        "out_records": p.out_records}), sources=p.sources)


def register_market(registry: Registry, opra_msg: str) -> None:
    """Add the market record type and the three kinds (``opra_msg``: the OPRA record's name)."""
    registry.add_record_type(MARKET)
    registry.add(OperatorKind(
        "market_stats", tuple(Port(p, opra_msg, optional=True) for p in INPUT_PORTS),
        tuple(Port(p, MARKET.name) for p in LEADER_PORTS), _stats, MarketStatsParams,
        doc="windowed partial state by underlying, series, exchange; deltas and watermarks to leaders (C)"))
    registry.add(OperatorKind("market_merge", (Port("in", MARKET.name),), (Port("out", MARKET.name),), _merge,
                              MarketMergeParams,
                              doc="a leader: merges deltas, emits windows every watermark passed (C)"))
    registry.add(OperatorKind("market_sink", (Port("in", MARKET.name),), (), MarketSink, MarketSinkParams,
                              native=False, doc="market windows to market_windows.parquet and market_live.json"))
