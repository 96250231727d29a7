"""The decoder's two quote paths side by side: the same packets decoded with the fast path
(all of a quote's fields at once) and with the field-by-field path, which must agree byte
for byte on records, side bytes, counters and errors."""
from __future__ import annotations

from typing import Any

import numpy as np

from feedhandlers.opra_fast import decode_batch
from omdp.native import lib


def decode_both_paths(data: bytes, offsets: np.ndarray, lengths: np.ndarray) -> tuple[Any, Any]:
    """(fast, field by field) decodes of the packets at offsets/lengths of data."""
    prev = lib.omdp_opra_set_fast_path(1)
    try:
        fast = decode_batch(data, offsets, lengths)
        lib.omdp_opra_set_fast_path(0)
        slow = decode_batch(data, offsets, lengths)
    finally:
        lib.omdp_opra_set_fast_path(prev)
    return fast, slow


def assert_paths_agree(fast: Any, slow: Any) -> None:
    """Records, side bytes, counters and errors identical."""
    assert fast.counters == slow.counters
    assert [(e.packet_index, e.code, e.offset, e.message_index, e.slot) for e in fast.errors] == [
        (e.packet_index, e.code, e.offset, e.message_index, e.slot) for e in slow.errors]
    assert fast.records.tobytes() == slow.records.tobytes()
    assert bytes(fast.side) == bytes(slow.side)
