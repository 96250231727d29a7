"""Pins the re-sharding marker record (reshard.h) to its numpy twin, and the sizes and
numbers both sides rely on."""
from __future__ import annotations

from omdp.native import ffi, lib
from omdp.record import RECORD_HEADER_SIZE, RT_BENCH, RT_OPRA_MSG, RT_RESHARD, RT_SEQ, RT_SIGNAL
from omdp.runtime.reshard import RESHARD_MARKER_DTYPE


def test_marker_matches_its_dtype() -> None:
    fields = dict(ffi.typeof("omdp_reshard_marker_t").fields)
    assert ffi.sizeof("omdp_reshard_marker_t") == RESHARD_MARKER_DTYPE.itemsize == lib.OMDP_RESHARD_MARKER_SIZE == 96
    assert list(fields) == list(RESHARD_MARKER_DTYPE.names)
    for name in RESHARD_MARKER_DTYPE.names:
        assert ffi.offsetof("omdp_reshard_marker_t", name) == RESHARD_MARKER_DTYPE.fields[name][1], name
    assert ffi.offsetof("omdp_reshard_marker_t", "move_id") == RECORD_HEADER_SIZE
    assert RESHARD_MARKER_DTYPE.itemsize % 8 == 0 and ffi.alignof("omdp_reshard_marker_t") == 8


def test_record_type_is_its_own() -> None:
    assert RT_RESHARD == lib.OMDP_RT_RESHARD == 5
    assert RT_RESHARD not in (RT_OPRA_MSG, RT_SIGNAL, RT_BENCH, RT_SEQ)


def test_hand_over_records() -> None:
    assert ffi.sizeof("omdp_reshard_series_t") == lib.OMDP_RESHARD_SERIES_SIZE == 248
    assert ffi.offsetof("omdp_reshard_series_t", "band_lo") == 216
    assert ffi.offsetof("omdp_reshard_series_t", "parity_hi") == 240
    assert ffi.offsetof("omdp_reshard_series_t", "nb_px") == 168
    assert ffi.offsetof("omdp_reshard_series_t", "root") == 205
    assert ffi.sizeof("omdp_reshard_handover_t") == 16
    assert ffi.sizeof("omdp_reshard_move_t") == 80
