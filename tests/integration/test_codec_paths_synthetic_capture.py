"""On a generated capture the decoder's quote fast path (all of a message's fields at once,
AVX-512 where the build has it) gives byte for byte the records, side bytes and counters of
the field-by-field path, line by line, and then the same with corrupted copies of its
packets (errors by packet, offset, message and slot). Named `codec` so that CI runs it under
ASan/UBSan."""
from __future__ import annotations

import numpy as np

from feedhandlers.captures import read_pcap
from feedhandlers.opra_fast import decode_batch
from omdp.native import lib
from ops.synth.generator import SynthResult


def _both(buf: bytes, off: np.ndarray, lens: np.ndarray):
    prev = lib.omdp_opra_set_fast_path(1)
    try:
        fast = decode_batch(buf, off, lens)
        lib.omdp_opra_set_fast_path(0)
        slow = decode_batch(buf, off, lens)
    finally:
        lib.omdp_opra_set_fast_path(prev)
    return fast, slow


def _assert_same(fast, slow) -> None:
    assert fast.counters == slow.counters
    assert [(e.packet_index, e.code, e.offset, e.message_index, e.slot) for e in fast.errors] == [
        (e.packet_index, e.code, e.offset, e.message_index, e.slot) for e in slow.errors]
    assert fast.records.tobytes() == slow.records.tobytes()
    assert bytes(fast.side) == bytes(slow.side)


def test_codec_paths_agree_on_every_line_of_a_synthetic_capture(small_capture: SynthResult) -> None:
    messages = 0
    for ln in small_capture.manifest.lines:
        for name in ln.files["a"]:
            buf, off, lens = read_pcap(small_capture.directory / name).contiguous()
            fast, slow = _both(bytes(buf), off, lens)
            assert fast.counters["packets_bad"] == 0
            _assert_same(fast, slow)
            messages += len(fast.records)
    assert messages > 10_000


def test_codec_paths_agree_on_corrupted_packets_of_a_synthetic_capture(small_capture: SynthResult) -> None:
    rng = np.random.default_rng(14)
    name = small_capture.manifest.lines[0].files["a"][0]
    buf, off, lens = read_pcap(small_capture.directory / name).contiguous()
    data = bytearray(bytes(buf))
    # a byte of every packet's messages set at random: most packets fail somewhere, some not
    for o, n in zip(off.tolist(), lens.tolist()):
        if n > 17:
            data[o + int(rng.integers(15, n - 1))] = int(rng.integers(0, 256))
    fast, slow = _both(bytes(data), off, lens)
    assert fast.counters["packets_bad"] > len(off) // 2
    _assert_same(fast, slow)
