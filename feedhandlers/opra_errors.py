"""Errors of the OPRA FAST V2 codec: the C error codes by name, and the exception types
that carry their context (which packet, which byte offset, which message, which slot)."""
from __future__ import annotations

from omdp.c_layout import c_dtype
from omdp.native import ffi, lib

OPRA_ERROR_DTYPE = c_dtype("omdp_opra_error_t")
"""``omdp_opra_error_t`` (opra_fast.h): a batch's error list as an array."""

CODES: dict[int, str] = {
    -c: ffi.string(lib.omdp_opra_error_name(-c)).decode() for c in range(1, lib.OMDP_OPRA_ERROR_CODES)
}
"""Negative C code -> short name ("TRUNCATED", "BAD_ETX", ...)."""

CODE_BY_NAME: dict[str, int] = {name: code for code, name in CODES.items()}

CAPACITY = lib.OMDP_OPRA_E_CAPACITY


def code_name(code: int) -> str:
    """The name of a C error code."""
    return CODES.get(code, f"E{code}")


class OpraDecodeError(ValueError):
    """A malformed packet: the error code and where it was found.

    ``message_index`` is -1 for the packet header, ``slot`` -1 when no field is involved.
    """

    def __init__(self, code: int, packet_index: int, offset: int, message_index: int, slot: int) -> None:
        self.code = code
        self.name = code_name(code)
        self.packet_index = packet_index
        self.offset = offset
        self.message_index = message_index
        self.slot = slot
        where = "header" if message_index < 0 else f"message {message_index}"
        field = f", slot {slot}" if slot >= 0 else ""
        super().__init__(f"packet {packet_index}: {self.name} at byte {offset} ({where}{field})")

    @classmethod
    def from_c(cls, err: object) -> "OpraDecodeError":
        """From an ``omdp_opra_error_t``."""
        return cls(int(err.code), int(err.packet_index), int(err.offset), int(err.message_index), int(err.slot))  # type: ignore[attr-defined]


class OpraEncodeError(ValueError):
    """Records that cannot be encoded: the code, the record and the slot."""

    def __init__(self, code: int, message_index: int, slot: int) -> None:
        self.code = code
        self.name = code_name(code)
        self.message_index = message_index
        self.slot = slot
        field = f", slot {slot}" if slot >= 0 else ""
        super().__init__(f"record {message_index}: {self.name}{field}")
