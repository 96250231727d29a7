"""Errors of the OPRA binary (OBI v6) codec: the C error codes by name, the dtypes of its
error and block structs (built from the C structs), and the exception types that carry an
error's context (which block, which byte offset, which message and category)."""
from __future__ import annotations

import numpy as np

from omdp.c_layout import c_dtype
from omdp.native import ffi, lib

OBI_ERROR_DTYPE = c_dtype("omdp_obi_error_t")
"""``omdp_obi_error_t`` (opra_obi.h): where a block went wrong."""

OBI_BLOCK_DTYPE = c_dtype("omdp_obi_block_t")
"""``omdp_obi_block_t``: one block's header as received and what decoding it gave."""

OBI_EXTRA_DTYPE = c_dtype("omdp_obi_extra_t")
"""``omdp_obi_extra_t``: the header values a record has no field for."""

CODES: dict[int, str] = {
    -c: ffi.string(lib.omdp_obi_error_name(-c)).decode() for c in range(1, lib.OMDP_OBI_ERROR_CODES)
}
"""Negative C code -> short name ("TRUNCATED", "CHECKSUM", ...)."""

CODE_BY_NAME: dict[str, int] = {name: code for code, name in CODES.items()}

CAPACITY = lib.OMDP_OBI_E_CAPACITY

COUNTER_NAMES = ("packets", "packets_ok", "packets_bad", "messages", "empty", "feed_flagged", "checksum_kept")
"""The leading fields of ``omdp_obi_counters_t``, before errors[] by code."""


def code_name(code: int) -> str:
    """The name of a C error code."""
    return CODES.get(code, f"E{code}")


def _category(c: int) -> str:
    return "" if c < 0 else f", category {chr(c)!r}"


class ObiDecodeError(ValueError):
    """A malformed block: the error code and where it was found (``message_index`` -1 and
    ``category`` -1 for the block header)."""

    def __init__(self, code: int, packet_index: int, offset: int, message_index: int, category: int) -> None:
        self.code = code
        self.name = code_name(code)
        self.packet_index = packet_index
        self.offset = offset
        self.message_index = message_index
        self.category = category
        where = "header" if message_index < 0 else f"message {message_index}"
        super().__init__(f"block {packet_index}: {self.name} at byte {offset} ({where}{_category(category)})")

    @classmethod
    def from_c(cls, err: object) -> "ObiDecodeError":
        """From an ``omdp_obi_error_t``."""
        e = err  # type: ignore[assignment]
        return cls(int(e.code), int(e.packet_index), int(e.offset), int(e.message_index), int(e.category))  # type: ignore[attr-defined]


class ObiEncodeError(ValueError):
    """Records that cannot be encoded as an OBI block: the code and the record."""

    def __init__(self, code: int, message_index: int, category: int) -> None:
        self.code = code
        self.name = code_name(code)
        self.message_index = message_index
        self.category = category
        super().__init__(f"record {message_index}: {self.name}{_category(category)}")


def counters_dict(values: np.ndarray) -> dict[str, int]:
    """An ``omdp_obi_counters_t`` (as a uint64 array) by name: the block and message counts,
    and the error codes that occurred."""
    n = len(COUNTER_NAMES)
    out = {name: int(values[i]) for i, name in enumerate(COUNTER_NAMES)}
    for code, name in CODES.items():
        v = int(values[n - code])
        if v:
            out[name] = v
    return out
