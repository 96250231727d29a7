"""Generic operators over numbered records (``native/include/omdp/seq_ops.h``), for runtime
tests and transport benchmarks: ``seq_source``, ``relay`` and ``seq_sink`` in C, and the
Python twins ``py_seq_source`` and ``py_relay`` that exercise Python operators inside a
partition. :func:`register_seq_ops` adds them to a registry (``ops`` does, for the CLI).
"""
from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from omdp.c_layout import c_dtype
from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import Operator, OperatorContext, PollResult, SourceOperator
from omdp.record import RT_SEQ
from omdp.registry import OperatorKind, Port, RecordType, Registry

SEQ_RECORD_MIN = int(lib.OMDP_SEQ_RECORD_MIN)
SEQ = RecordType("seq", RT_SEQ)
"""Numbered records: variable length (>= 80 bytes), so Python operators see raw bytes."""


def seq_record_dtype(record_size: int) -> np.dtype:
    """The layout of one seq record of ``record_size`` bytes: ``omdp_seq_record_t`` (seq_ops.h),
    then the fill up to the record's size."""
    base = c_dtype("omdp_seq_record_t")
    fill = (record_size - SEQ_RECORD_MIN) // 8
    if not fill:
        return base
    names = [*base.names, "fill"]
    return np.dtype({"names": names, "formats": [*(base.fields[n][0] for n in base.names), np.dtype(("<u8", (fill,)))],
                     "offsets": [*(base.fields[n][1] for n in base.names), base.itemsize],
                     "itemsize": base.itemsize + 8 * fill})


def seq_check(source: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """omdp_seq_check, vectorized (uint64 wrap-around arithmetic)."""
    z = (source.astype(np.uint64) << np.uint64(40)) ^ seq.astype(np.uint64) ^ np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class SeqSourceParams(BaseModel):
    """seq_source / py_seq_source parameters; the defaults live here."""

    model_config = ConfigDict(extra="forbid")

    count: int = Field(0, ge=0, description="records to emit, then done; 0 = until stopped")
    rate: float = Field(0.0, ge=0.0, allow_inf_nan=False, description="records per second; 0 = as fast as possible")
    batch: int = Field(16, ge=1, le=4096, description="records per batch")
    record_size: int = Field(SEQ_RECORD_MIN, ge=SEQ_RECORD_MIN, le=65528, description="bytes per record, multiple of 8")
    source_base: int = Field(0, ge=0, lt=65536, description="source id = source_base + replica")

    @field_validator("record_size")
    @classmethod
    def _multiple_of_8(cls, v: int) -> int:
        if v % 8:
            raise ValueError(f"record_size must be a multiple of 8, got {v}")
        return v


class SeqSinkParams(BaseModel):
    """seq_sink parameters."""

    model_config = ConfigDict(extra="forbid")

    max_sources: int = Field(4096, ge=1, le=65536, description="source ids tracked: 0 .. max_sources-1")
    verify_fill: bool = Field(True, description="check every fill word, not only the checksum")


def _seq_source(p: SeqSourceParams, ctx: OperatorContext) -> NativeOperator:
    params = ffi.new("omdp_seq_source_params_t *", {
        "count": p.count, "rate": p.rate, "batch": p.batch, "record_size": p.record_size, "source_base": p.source_base,
    })
    return NativeOperator(lib.omdp_seq_source_vtable(), params)


def _relay(p: BaseModel, ctx: OperatorContext) -> NativeOperator:
    return NativeOperator(lib.omdp_relay_vtable())


def _seq_sink(p: SeqSinkParams, ctx: OperatorContext) -> NativeOperator:
    params = ffi.new("omdp_seq_sink_params_t *", {"max_sources": p.max_sources, "verify_fill": int(p.verify_fill)})
    return NativeOperator(lib.omdp_seq_sink_vtable(), params)


class PySeqSource(SourceOperator):
    """Python twin of seq_source (same records, built with numpy, unpaced when rate is 0)."""

    def __init__(self, p: SeqSourceParams, ctx: OperatorContext) -> None:
        super().__init__(p, ctx)
        self.p = p
        self.source = p.source_base + ctx.replica
        self.emitted = 0
        self.batches = 0
        self._start_ns = 0
        self._dtype = seq_record_dtype(p.record_size)

    def poll(self) -> PollResult:
        """Emit the next batch that is due."""
        p = self.p
        if p.count and self.emitted >= p.count:
            return PollResult.DONE
        now = int(lib.omdp_now_ns())
        self._start_ns = self._start_ns or now
        n = p.batch
        if p.rate > 0:
            due = int((now - self._start_ns) * p.rate / 1e9) + 1
            if due <= self.emitted:
                return PollResult.IDLE
            n = min(n, due - self.emitted)
        if p.count:
            n = min(n, p.count - self.emitted)
        seq = np.arange(self.emitted, self.emitted + n, dtype=np.uint64)
        batch = np.zeros(n, dtype=self._dtype)
        batch["hdr"]["type"] = RT_SEQ
        batch["hdr"]["length"] = p.record_size
        batch["hdr"]["stamps"]["intended"] = now
        batch["source"] = self.source
        batch["seq"] = seq
        batch["check"] = seq_check(np.full(n, self.source, dtype=np.uint64), seq)
        if "fill" in self._dtype.names:
            with np.errstate(over="ignore"):
                batch["fill"] = batch["check"][:, None] + np.arange(self._dtype["fill"].shape[0], dtype=np.uint64)
        self.emitted += n
        self.batches += 1
        self.emit("out", batch)
        return PollResult.PRODUCED

    def counters(self) -> dict[str, int]:
        """Records and batches emitted, and the source id."""
        return {"records": self.emitted, "batches": self.batches, "source": self.source}


class PyRelay(Operator):
    """Python twin of relay: forwards each batch unchanged, counting records."""

    def __init__(self, p: BaseModel, ctx: OperatorContext) -> None:
        super().__init__(p, ctx)
        self.batches = 0
        self.records = 0
        self.bad_batches = 0

    def process_batch(self, records: np.ndarray, port: str) -> None:
        """Count the batch's records (one C call) and pass it on."""
        self.batches += 1
        n = int(lib.omdp_batch_count(ffi.from_buffer("uint8_t[]", records), records.nbytes))
        if n < 0:
            self.bad_batches += 1
            return
        self.records += n
        self.emit("out", records)

    def counters(self) -> dict[str, int]:
        """Batches and records forwarded, batches that did not tile."""
        return {"batches": self.batches, "records": self.records, "bad_batches": self.bad_batches}


def register_seq_ops(registry: Registry) -> None:
    """Add the seq record type and the five generic operators to ``registry``."""
    if SEQ.name not in registry.record_types:
        registry.add_record_type(SEQ)
    inp, out = (Port("in", SEQ.name),), (Port("out", SEQ.name),)
    registry.add(OperatorKind("seq_source", (), out, _seq_source, SeqSourceParams,
                              doc="numbered, checksummed records in batches, optionally paced (C)"))
    registry.add(OperatorKind("relay", inp, out, _relay, doc="forwards every batch unchanged (C)"))
    registry.add(OperatorKind("seq_sink", inp, (), _seq_sink, SeqSinkParams,
                              doc="verifies and counts: per-source order, gaps, checksums (C)"))
    registry.add(OperatorKind("py_seq_source", (), out, PySeqSource, SeqSourceParams, native=False,
                              doc="seq_source in Python (numpy)"))
    registry.add(OperatorKind("py_relay", inp, out, PyRelay, native=False, doc="relay in Python"))
