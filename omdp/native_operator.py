"""What a native operator's factory returns: its C vtable and its packed parameters.

The partition runtime hands both to ``omdp_partition_init_op``, which calls the vtable's
``init`` in C; nothing of the operator runs in Python after that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omdp.native import ffi


@dataclass(frozen=True)
class NativeOperator:
    """A native operator ready to be placed: ``vtable`` is a ``const
    omdp_operator_vtable_t *`` and ``params`` a cffi pointer to the operator's own parameter
    struct (None when it takes none)."""

    vtable: Any
    params: Any = None

    @property
    def kind(self) -> str:
        """The kind the C side names itself."""
        return ffi.string(self.vtable.kind).decode()

    def close(self) -> None:
        """Release what the Python side holds for the C operator (sockets, rings, threads),
        once the C operator has closed. Default: nothing; subclasses that hold more
        override it."""

    def peer_gone_hook(self, gone: list[tuple[str, int]]) -> tuple[Any, int] | None:
        """What the partition loop calls when an input from another partition died and is
        drained (``omdp_partition_on_peer_gone``); ``gone``: the (kind, replica) of each
        operator of that partition. A C ``omdp_peer_gone_fn`` and the note it is handed, or
        None (the default: the input simply ends)."""
        return None

    def counters(self) -> dict[str, int | str]:
        """What the Python side counts beside the C operator's own counters (a thread it
        runs, say), merged into the operator's entry of the run report. Default: nothing."""
        return {}

    def params_bytes(self) -> tuple[Any, int]:
        """(pointer, size) of the parameter struct, as ``omdp_op_init_t`` wants them."""
        if self.params is None:
            return ffi.NULL, 0
        return self.params, ffi.sizeof(self.params[0])
