"""omdp_pcap_walk (native/src/capture/pcap_walk.c) against a record-by-record walk in
Python, on chains of any lengths, either byte order, cut off anywhere: it reads every byte
of its input, so CI runs it under ASan/UBSan (the name says "sanitize")."""
from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from omdp.native import ffi, lib

HEADER = 24
RECORD = 16


def _chain(lengths: list[int], order: str) -> bytes:
    out = bytearray(b"\xa5" * HEADER)
    for i, n in enumerate(lengths):
        out += struct.pack(order + "IIII", 1_200_000_000 + i, 7 * i, n, n) + bytes((i + k) % 251 for k in range(n))
    return bytes(out)


def _reference(buf: bytes, order: str) -> tuple[list[tuple[int, int, int, int]], int]:
    pos, rows = HEADER, []
    while pos + RECORD <= len(buf):
        sec, frac, incl, _ = struct.unpack_from(order + "IIII", buf, pos)
        if pos + RECORD + incl > len(buf):
            break
        rows.append((pos + RECORD, incl, sec, frac))
        pos += RECORD + incl
    return rows, pos


def _walk(buf: bytes, big: bool, cap: int | None = None) -> tuple[list[tuple[int, int, int, int]], int, int]:
    # a buffer of exactly the input's bytes, so that ASan sees any read past its end
    src = ffi.new("uint8_t[]", len(buf))
    ffi.memmove(src, buf, len(buf))
    stop = ffi.new("uint64_t *")
    counted = lib.omdp_pcap_walk(src, len(buf), int(big), ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0, stop)
    n = counted if cap is None else cap
    cols = [np.zeros(n, dtype=np.int64) for _ in range(4)]
    got = lib.omdp_pcap_walk(src, len(buf), int(big), *(ffi.from_buffer("int64_t[]", c) for c in cols), n, stop)
    return list(zip(*(c[:got].tolist() for c in cols))), int(stop[0]), counted


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 300), max_size=40), big=st.booleans(), cut=st.integers(0, 20_000))
def test_the_walk_equals_a_record_by_record_walk_wherever_the_file_is_cut(lengths: list[int], big: bool, cut: int) -> None:
    order = ">" if big else "<"
    whole = _chain(lengths, order)
    buf = whole[: max(HEADER, len(whole) - cut)] if cut < len(whole) else whole
    rows, stop, counted = _walk(buf, big)
    want_rows, want_stop = _reference(buf, order)
    assert rows == [tuple(r) for r in want_rows]
    assert stop == want_stop and counted == len(want_rows)


def test_a_cap_stops_the_walk_at_its_record() -> None:
    buf = _chain([10, 20, 30, 40], "<")
    rows, stop, counted = _walk(buf, False, cap=2)
    assert counted == 4 and len(rows) == 2
    assert stop == HEADER + 2 * RECORD + 10 + 20


def test_a_huge_captured_length_is_a_cut_off_record_not_a_read_past_the_end() -> None:
    buf = bytes(HEADER) + struct.pack("<IIII", 1, 2, 0xFFFFFFFF, 60) + bytes(8)
    rows, stop, counted = _walk(buf, False)
    assert rows == [] and counted == 0 and stop == HEADER


def test_bad_arguments_are_refused() -> None:
    stop = ffi.new("uint64_t *")
    src = ffi.new("uint8_t[]", 64)
    assert lib.omdp_pcap_walk(ffi.NULL, 64, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0, stop) == -1
    assert lib.omdp_pcap_walk(src, 64, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0, ffi.NULL) == -1
    assert lib.omdp_pcap_walk(src, HEADER - 1, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0, stop) == -1
    col = ffi.new("int64_t[]", 4)
    assert lib.omdp_pcap_walk(src, 64, 0, col, ffi.NULL, col, col, 4, stop) == -1
