"""The operator registry: operator kinds by name, with their ports and parameters.

``omdp`` knows no operator package: the composition root (``ops``) fills a
:class:`Registry` and hands it to the planner and the runtime, which find every operator
by the ``kind`` a topology file names. A partition process rebuilds the same registry from
an import reference (``"package.module:function"``) recorded in the plan.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from omdp.native_operator import NativeOperator
from omdp.operator import OperatorBase, OperatorContext


@dataclass(frozen=True)
class RecordType:
    """A record type flowing on streams: its header type id and, when every record of it has
    one fixed layout, the numpy dtype Python operators see it as."""

    name: str
    type_id: int
    dtype: np.dtype | None = None


@dataclass(frozen=True)
class Port:
    """A named port carrying one record type. An ``optional`` input may stay unconnected."""

    name: str
    record_type: str
    optional: bool = False


class NoParams(BaseModel):
    """Parameters of an operator that takes none."""

    model_config = ConfigDict(extra="forbid")


Factory = Callable[[Any, OperatorContext], "NativeOperator | OperatorBase"]


@dataclass(frozen=True)
class OperatorKind:
    """An operator kind: its ports, its parameter model (which holds the parameters'
    defaults and validates a topology's ``params`` table) and its factory, which makes an
    instance from validated parameters - a :class:`NativeOperator` or a Python operator."""

    name: str
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    factory: Factory
    params: type[BaseModel] = NoParams
    native: bool = True
    doc: str = ""
    alone: str = ""
    """Why an instance needs a partition of its own ("" when it does not): its poll blocks
    (sleeps, waits), which would stall every other operator of the partition's loop."""

    @property
    def is_source(self) -> bool:
        """Sources have no input ports."""
        return not self.inputs

    def input(self, name: str) -> Port | None:
        """The input port called ``name``, if any."""
        return next((p for p in self.inputs if p.name == name), None)

    def output(self, name: str) -> Port | None:
        """The output port called ``name``, if any."""
        return next((p for p in self.outputs if p.name == name), None)


class RegistryError(KeyError):
    """An unknown operator kind or record type, or a name registered twice."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class Registry:
    """Operator kinds and record types by name."""

    operators: dict[str, OperatorKind] = field(default_factory=dict)
    record_types: dict[str, RecordType] = field(default_factory=dict)
    ref: str | None = None

    def add_record_type(self, rt: RecordType) -> None:
        """Register a record type (names and type ids are unique)."""
        if rt.name in self.record_types:
            raise RegistryError(f"record type {rt.name!r} registered twice")
        if any(t.type_id == rt.type_id for t in self.record_types.values()):
            raise RegistryError(f"record type id {rt.type_id} of {rt.name!r} is taken")
        self.record_types[rt.name] = rt

    def add(self, kind: OperatorKind) -> None:
        """Register an operator kind; its ports' record types must be registered first."""
        if kind.name in self.operators:
            raise RegistryError(f"operator {kind.name!r} registered twice")
        for p in (*kind.inputs, *kind.outputs):
            if p.record_type not in self.record_types:
                raise RegistryError(f"operator {kind.name!r} port {p.name!r}: unknown record type {p.record_type!r}")
        self.operators[kind.name] = kind

    def get(self, name: str) -> OperatorKind:
        """The kind called ``name``; the error lists the known kinds."""
        try:
            return self.operators[name]
        except KeyError:
            raise RegistryError(f"unknown operator {name!r} (known: {', '.join(sorted(self.operators)) or 'none'})") from None


def load_registry(ref: str) -> Registry:
    """Build the registry an import reference names: ``"module:function"``, where the
    function takes no argument and returns a :class:`Registry`."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise RegistryError(f"registry reference {ref!r} is not 'module:function'")
    registry = getattr(importlib.import_module(module_name), attr)()
    if not isinstance(registry, Registry):
        raise RegistryError(f"{ref} returned {type(registry).__name__}, not a Registry")
    registry.ref = ref
    return registry
