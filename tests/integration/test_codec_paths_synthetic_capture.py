"""On a generated capture the decoder's quote fast path (all of a message's fields at once,
AVX-512 where the build has it) gives byte for byte the records, side bytes and counters of
the field-by-field path, line by line, and then the same with corrupted copies of its
packets (errors by packet, offset, message and slot). Named `codec` so that CI runs it under
ASan/UBSan."""
from __future__ import annotations

import pytest
import numpy as np
from codec_support import assert_paths_agree, decode_both_paths

from feedhandlers.captures import read_pcap
from ops.synth.generator import SynthResult


@pytest.mark.full
def test_codec_paths_agree_on_every_line_of_a_synthetic_capture(small_capture: SynthResult) -> None:
    messages = 0
    for ln in small_capture.manifest.lines:
        for name in ln.files["a"]:
            buf, off, lens = read_pcap(small_capture.directory / name).contiguous()
            fast, slow = decode_both_paths(bytes(buf), off, lens)
            assert fast.counters["packets_bad"] == 0
            assert_paths_agree(fast, slow)
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
    fast, slow = decode_both_paths(bytes(data), off, lens)
    assert fast.counters["packets_bad"] > len(off) // 2
    assert_paths_agree(fast, slow)
