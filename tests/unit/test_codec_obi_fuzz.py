"""Mutated, truncated and random OBI blocks never crash the decoder (run under ASan/UBSan in
CI), every block is accounted for (good, or bad with one typed error counted by code), a
good block after a bad one decodes normally, and the batch and one-block paths agree."""
from __future__ import annotations

import pytest
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obi_strategies import block

from feedhandlers.opra_obi import ObiDecodeError, checksum, decode_block, decode_blocks, encode_block, encode_records
from feedhandlers.opra_obi_errors import CODE_BY_NAME

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(a valid block, a mutation of it). Half the mutations get their size and checksum made
    right again, so they reach the message decoder instead of stopping at the checksum."""
    built = draw(block(max_messages=6))
    good = encode_records(built.header, built.records, built.side)
    data = bytearray(good)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[i] = draw(st.integers(0, 255))
        elif op == "truncate":
            del data[i:]
        elif op == "insert":
            data[i:i] = bytes(draw(st.lists(st.integers(0, 255), min_size=1, max_size=8)))
        else:
            del data[i : i + draw(st.integers(1, 8))]
    if draw(st.booleans()) and len(data) >= 21:
        data[1:3] = min(len(data), 0xFFFF).to_bytes(2, "big")
        data[19:21] = checksum(data).to_bytes(2, "big")
    return good, bytes(data)


def check_batch(blocks: list[bytes]) -> None:
    lengths = np.array([len(b) for b in blocks], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    d = decode_blocks(b"".join(blocks), offsets, lengths)
    c = d.counters
    assert c["packets"] == len(blocks) == c["packets_ok"] + c["packets_bad"]
    assert sum(v for k, v in c.items() if k in CODE_BY_NAME) == c["packets_bad"] == len(d.errors)
    assert c["messages"] == int(d.blocks["count"].sum()) == len(d.records)
    bad = {e.packet_index for e in d.errors}
    for i, data in enumerate(blocks):
        first, count = int(d.blocks[i]["first"]), int(d.blocks[i]["count"])
        try:
            one = decode_block(data, packet_index=i)
        except ObiDecodeError as e:
            assert i in bad and count == 0 and int(d.blocks[i]["error"]) == e.code
            got = next(x for x in d.errors if x.packet_index == i)
            assert (got.code, got.offset, got.message_index, got.category) == (e.code, e.offset, e.message_index, e.category)
            continue
        assert i not in bad and count == len(one)
        recs = d.records[first : first + count]
        cols = [n for n in recs.dtype.names if n != "var_off"]
        assert np.array_equal(recs[cols], one.records[cols])
        # a block that decodes re-encodes to one that decodes to the same records
        again = decode_block(encode_block(one))
        assert np.array_equal(again.records[cols], one.records[cols])


@pytest.mark.full
@SETTINGS
@given(mutated())
def test_mutated_blocks_are_skipped_cleanly(pair: tuple[bytes, bytes]) -> None:
    good, bad = pair
    check_batch([good, bad, good, bad[: len(bad) // 2], good])


@SETTINGS
@given(st.lists(st.binary(min_size=0, max_size=120), min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_random_bytes_never_crash(blobs: list[bytes], seq: int) -> None:
    # Random bodies behind a valid header (size and checksum right) reach the message decoder.
    framed = []
    for x in blobs:
        b = bytearray(b"\x06\x00\x00O \x00" + seq.to_bytes(4, "big") + bytes([len(x) % 5]) + bytes(10) + x)
        b[1:3] = len(b).to_bytes(2, "big")
        b[19:21] = checksum(b).to_bytes(2, "big")
        framed.append(bytes(b))
    check_batch(framed + blobs)
