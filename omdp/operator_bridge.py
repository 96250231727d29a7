"""Python operators inside the C partition loop.

A Python operator gets an ``omdp_operator_vtable_t`` of its own whose functions are the
``extern "Python"`` callbacks below, and its state is a handle on a :class:`PyOperatorBinding`.
The C loop then treats it like any native operator: fused calls go straight through, and
each batch crosses into Python once, as a numpy view.

An exception in the operator is kept on the binding and the callback returns
OMDP_ERR_PYTHON, which stops the partition; the runtime re-raises it with the operator's
name.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.operator import EmitError, Operator, OperatorBase, SourceOperator

_ERR_PYTHON = int(lib.OMDP_ERR_PYTHON)


class PyOperatorBinding:
    """Holds a Python operator, its C vtable and the dtypes of its input ports."""

    def __init__(self, op: OperatorBase, input_dtypes: list[np.dtype]) -> None:
        self.op = op
        self.input_names = op.ctx.inputs
        self.input_dtypes = input_dtypes
        self.error: BaseException | None = None
        self.bad_batches = 0
        self.ended = False
        """``end_of_stream`` was called (else a stopped loop calls ``stopped_early``)."""
        self.handle = ffi.new_handle(self)
        self._kind = ffi.new("char[]", op.ctx.kind.encode())
        is_source = isinstance(op, SourceOperator)
        if not is_source and not isinstance(op, Operator):
            raise TypeError(f"{op.ctx.name}: {type(op).__name__} is neither an Operator nor a SourceOperator")
        if is_source == bool(op.ctx.inputs):
            raise TypeError(f"{op.ctx.name}: a SourceOperator has no inputs and an Operator has some")
        self.vtable = ffi.new(
            "omdp_operator_vtable_t *",
            {
                "abi": lib.OMDP_OPERATOR_ABI,
                "kind": self._kind,
                "n_inputs": len(op.ctx.inputs),
                "n_outputs": len(op.ctx.outputs),
                "process_batch": ffi.NULL if is_source else lib.omdp_py_process_batch,
                "poll": lib.omdp_py_poll if is_source else ffi.NULL,
                "end_of_stream": lib.omdp_py_end_of_stream,
            },
        )

    def call(self, emitter: Any, fn: Any, *args: Any) -> int:
        """Run one operator method with ``emit`` enabled; map errors to a C result."""
        self.op._emitter = emitter
        try:
            result = fn(*args)
            return 0 if result is None else int(result)
        except EmitError as e:
            self.error = e
            return e.code
        except BaseException as e:  # noqa: BLE001 - any failure stops the partition, re-raised there
            self.error = e
            return _ERR_PYTHON
        finally:
            self.op._emitter = ffi.NULL

    def counters(self) -> dict[str, int]:
        """The operator's counters plus the bridge's own."""
        out = dict(self.op.counters())
        out["bad_batches"] = self.bad_batches
        return out


@ffi.def_extern(error=_ERR_PYTHON)
def omdp_py_process_batch(state: Any, port: int, records: Any, nbytes: int, emitter: Any) -> int:
    """C -> Python: one batch for a Python operator, as a read-only numpy view."""
    b: PyOperatorBinding = ffi.from_handle(state)
    dtype = b.input_dtypes[port]
    if nbytes % dtype.itemsize:
        b.bad_batches += 1
        return 0
    view = np.frombuffer(ffi.buffer(records, nbytes), dtype=dtype)
    view.flags.writeable = False
    return b.call(emitter, b.op.process_batch, view, b.input_names[port])


@ffi.def_extern(error=_ERR_PYTHON)
def omdp_py_poll(state: Any, emitter: Any) -> int:
    """C -> Python: poll a Python source."""
    b: PyOperatorBinding = ffi.from_handle(state)
    return b.call(emitter, b.op.poll)


@ffi.def_extern(error=_ERR_PYTHON)
def omdp_py_end_of_stream(state: Any, emitter: Any) -> int:
    """C -> Python: every input of a Python operator has ended."""
    b: PyOperatorBinding = ffi.from_handle(state)
    b.ended = True
    return b.call(emitter, b.op.end_of_stream)
