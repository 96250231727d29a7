"""The pcap record chain in C (pcap_walk.h): every whole record's offset, length and time
fields in either byte order, the chain's end at a record cut short, at a header cut short
and at a length pointing far past the end; max bounds what is written; a NULL or a buffer
shorter than the global header is refused. Named "sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import struct

import numpy as np

from omdp.native import ffi, lib


def _pcap(order: str, payloads: list[bytes]) -> bytes:
    out = bytearray(b"\0" * 24)
    for i, p in enumerate(payloads):
        out += struct.pack(order + "IIII", 1000 + i, 7 * i, len(p), len(p)) + p
    return bytes(out)


def _walk(buf: bytes, big: bool, max_out: int) -> tuple[int, list[np.ndarray], int]:
    src = np.frombuffer(buf, np.uint8).copy()                # exactly the bytes: ASan sees a read past them
    cols = [np.full(max(max_out, 1), -1, np.int64) for _ in range(4)]
    end = ffi.new("uint64_t *")
    n = lib.omdp_pcap_walk(ffi.from_buffer("uint8_t[]", src), len(buf), int(big),
                           *(ffi.cast("int64_t *", ffi.from_buffer(c)) for c in cols), max_out, end)
    return n, cols, int(end[0])


def test_whole_records_in_either_byte_order() -> None:
    payloads = [b"a" * 5, b"", b"bc" * 40]
    for order in ("<", ">"):
        buf = _pcap(order, payloads)
        n, (offs, lens, secs, fracs), end = _walk(buf, order == ">", 8)
        assert n == 3 and end == len(buf)
        assert list(offs[:3]) == [40, 61, 77] and list(lens[:3]) == [5, 0, 80]
        assert list(secs[:3]) == [1000, 1001, 1002] and list(fracs[:3]) == [0, 7, 14]


def test_the_chain_stops_at_a_cut_record_or_header() -> None:
    buf = _pcap("<", [b"x" * 10, b"y" * 10])
    whole = len(buf)
    assert _walk(buf[:-3], False, 8)[0::2] == (1, 50)         # the second record's data cut short
    assert _walk(buf[:whole - 15], False, 8)[0::2] == (1, 50)  # its header cut short
    huge = bytearray(buf)
    struct.pack_into("<I", huge, 50 + 8, 0xFFFFFFFF)          # a length far past the end
    assert _walk(bytes(huge), False, 8)[0::2] == (1, 50)
    assert _walk(buf[:24], False, 8)[0::2] == (0, 24)


def test_max_bounds_the_output_and_bad_arguments_are_refused() -> None:
    buf = _pcap("<", [b"z"] * 5)
    n, cols, end = _walk(buf, False, 2)
    assert n == 5 and end == len(buf) and list(cols[0][2:]) == []
    assert _walk(buf, False, 0)[0] == 5                        # counting only: nothing written
    end = ffi.new("uint64_t *")
    assert lib.omdp_pcap_walk(ffi.NULL, 100, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0, end) == -1
    short = np.zeros(23, np.uint8)
    assert lib.omdp_pcap_walk(ffi.from_buffer("uint8_t[]", short), 23, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0,
                              end) == -1
    assert lib.omdp_pcap_walk(ffi.from_buffer("uint8_t[]", short), 23, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 3,
                              ffi.NULL) == -1


def test_one_pass_walk_and_the_second_walk_for_records_smaller_than_the_guess() -> None:
    """read_pcap's walk sizes its arrays from the file size (one pass); records smaller than
    its guess (here 16 + 1 bytes) take a second walk into exact arrays, same answer, and a
    record cut short is still reported as the tail."""
    from pathlib import Path

    from feedhandlers.captures.pcap import _walk_records

    for payloads in ([b"u" * 300] * 7, [b"t"] * 50):
        buf = _pcap("<", payloads) + b"\0" * 5                  # 5 bytes of a header cut short
        arr = np.frombuffer(buf, np.uint8).copy()
        offs, lens, secs, fracs, tail = _walk_records(arr, "<", Path("x.pcap"))
        size = 16 + len(payloads[0])
        assert list(offs) == [24 + 16 + i * size for i in range(len(payloads))]
        assert list(lens) == [len(payloads[0])] * len(payloads)
        assert list(secs) == [1000 + i for i in range(len(payloads))] and list(fracs) == [7 * i for i in range(len(payloads))]
        assert tail is not None and tail.offset == len(buf) - 5
