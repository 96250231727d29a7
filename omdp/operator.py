"""The Python twin of the operator contract (``native/include/omdp/operator.h``).

A Python operator subclasses :class:`Operator` (or :class:`SourceOperator` when it has no
input ports and produces on ``poll``). The partition's C loop calls it once per batch through
``omdp.operator_bridge``; ``records`` is a read-only numpy view of the batch, valid only
during the call (copy what you keep), typed by the input port's record type: a structured
array of that type's dtype when it has a fixed layout, raw ``uint8`` bytes otherwise.

Cost: each batch crosses into the interpreter once (a few microseconds on top of the
operator's own work), so a Python operator belongs where batches are rare or large; the
built-in path is native.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from omdp.native import ffi, lib


@dataclass(frozen=True)
class OperatorContext:
    """Where an operator instance sits: its name, its place among its replicas, and its
    port names (in port-index order). ``run_dir`` is the run's directory when it runs under
    the supervisor (collectors write their results there), None in a plan or a test."""

    name: str
    kind: str
    replica: int
    replicas: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    partition: str = ""
    run_dir: Path | None = None


class PollResult(IntEnum):
    """What a source's ``poll`` reports (OMDP_POLL_* in operator.h)."""

    IDLE = 0
    PRODUCED = 1
    DONE = 2


class OperatorBase(abc.ABC):
    """What every Python operator has: its validated parameters, its context, ``emit``,
    and the optional hooks. The class is its own factory: the runtime calls
    ``cls(params, ctx)`` with the kind's parameter model instance."""

    def __init__(self, params: BaseModel, ctx: OperatorContext) -> None:
        self.params = params
        self.ctx = ctx
        self._out_index = {name: i for i, name in enumerate(ctx.outputs)}
        self._emitter = ffi.NULL

    def end_of_stream(self) -> None:
        """Every input has ended: emit whatever is still held. Default: nothing."""

    def stopped_early(self) -> None:
        """The partition stopped before ``end_of_stream`` (a hard stop: another partition of
        the run died, or a second Ctrl-C): a collector records what it collected so far, for
        the run's report to say what is known and what is not. Nothing can be emitted.
        Default: nothing."""

    def counters(self) -> dict[str, int]:
        """The operator's own counters, reported with the run. Default: none."""
        return {}

    def close(self) -> None:
        """Release what the operator holds. Default: nothing."""

    def emit(self, port: str, batch: np.ndarray | bytes | bytearray | memoryview) -> None:
        """Hand ``batch`` (records laid back to back) to output ``port``: a direct call into
        the next fused operator, or into the transport at a partition boundary. Only valid
        while the runtime is calling this operator."""
        index = self._out_index.get(port)
        if index is None:
            raise KeyError(f"{self.ctx.name}: no output port {port!r} (outputs: {', '.join(self.ctx.outputs) or 'none'})")
        if self._emitter == ffi.NULL:
            raise RuntimeError(f"{self.ctx.name}: emit outside process_batch/poll/end_of_stream")
        data = batch.view(np.uint8) if isinstance(batch, np.ndarray) else batch
        buf = ffi.from_buffer("uint8_t[]", data)
        rc = lib.omdp_emit(self._emitter, index, buf, len(buf))
        if rc < 0:
            raise EmitError(self.ctx.name, port, int(rc))


class Operator(OperatorBase):
    """A Python operator with input ports. Subclasses implement :meth:`process_batch`."""

    @abc.abstractmethod
    def process_batch(self, records: np.ndarray, port: str) -> None:
        """One batch arrived on input ``port``: process it, call :meth:`emit` for output."""


class SourceOperator(OperatorBase):
    """A Python operator without input ports: the loop calls :meth:`poll` when idle."""

    @abc.abstractmethod
    def poll(self) -> PollResult:
        """Produce what is due (through :meth:`emit`) and say whether anything was."""


class EmitError(RuntimeError):
    """``emit`` failed downstream (a channel's peer died, a hard stop, ...)."""

    def __init__(self, operator: str, port: str, code: int) -> None:
        super().__init__(f"{operator}: emit on {port!r} failed: {ffi.string(lib.omdp_strerror(code)).decode()}")
        self.code = code
