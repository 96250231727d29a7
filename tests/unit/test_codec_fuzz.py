"""Mutated, truncated and random packets never crash the decoder (run under ASan/UBSan in
CI), every packet is accounted for, and a good packet after a bad one decodes normally.
The batch path and the one-packet path agree on every input."""
from __future__ import annotations

import pytest
import numpy as np
from codec_strategies import packet_messages, to_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from feedhandlers.opra_errors import CODE_BY_NAME
from feedhandlers.opra_fast import OpraDecodeError, decode_batch, decode_packet, encode_records

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """(a valid packet, a mutation of it)."""
    built = to_records(draw(packet_messages(max_size=6)))
    good = encode_records(built.records, built.side)
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
    return good, bytes(data)


def check_batch(packets: list[bytes]) -> None:
    lengths = np.array([len(p) for p in packets], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    b = decode_batch(b"".join(packets), offsets, lengths)
    c = b.counters
    assert c["packets"] == len(packets) == c["packets_ok"] + c["packets_bad"]
    assert sum(v for k, v in c.items() if k in CODE_BY_NAME) == c["packets_bad"] == len(b.errors)
    assert c["messages"] == int(b.pkt_count.sum()) == len(b.records)
    bad = {e.packet_index for e in b.errors}
    for i, data in enumerate(packets):
        first, count = int(b.pkt_first[i]), int(b.pkt_count[i])
        try:
            single = decode_packet(data, packet_index=i)
        except OpraDecodeError as e:
            assert i in bad and count == 0
            got = next(x for x in b.errors if x.packet_index == i)
            assert (got.code, got.offset, got.message_index, got.slot) == (e.code, e.offset, e.message_index, e.slot)
            continue
        assert i not in bad and count == single.count == len(single)
        recs = b.records[first : first + count]
        cols = [n for n in recs.dtype.names if n != "var_off"]
        assert np.array_equal(recs[cols], single.records[cols])
        for r, s in zip(recs, single.records):
            side = bytes(b.side)
            assert side[r["var_off"] : r["var_off"] + r["var_len"]] == single.side[s["var_off"] : s["var_off"] + s["var_len"]]


@pytest.mark.full
@SETTINGS
@given(mutated())
def test_mutated_packets_are_skipped_cleanly(pair: tuple[bytes, bytes]) -> None:
    good, bad = pair
    check_batch([good, bad, good, bad[: len(bad) // 2], good])


@pytest.mark.full
@SETTINGS
@given(st.lists(st.binary(min_size=0, max_size=64), min_size=1, max_size=6))
def test_random_bytes_never_crash(blobs: list[bytes]) -> None:
    # Random bodies behind a plausible header reach the message decoder, not just the header checks.
    packets = [b"\x01\x020000000001%03d" % (len(x) % 4) + x + b"\x03" for x in blobs] + blobs
    check_batch(packets)


class slow_path_only:
    """Turns the decoder's quote fast path off for the duration (process-wide)."""

    def __enter__(self) -> None:
        from omdp.native import lib

        self.prev = lib.omdp_opra_set_fast_path(0)

    def __exit__(self, *exc: object) -> None:
        from omdp.native import lib

        lib.omdp_opra_set_fast_path(self.prev)


def _decode_all(packets: list[bytes]):
    lengths = np.array([len(p) for p in packets], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return decode_batch(b"".join(packets), offsets, lengths)


@pytest.mark.full
@SETTINGS
@given(mutated())
def test_fast_path_and_field_by_field_path_agree(pair: tuple[bytes, bytes]) -> None:
    good, bad = pair
    packets = [good, bad, good]
    fast = _decode_all(packets)
    with slow_path_only():
        slow = _decode_all(packets)
    assert fast.counters == slow.counters
    assert [(e.code, e.offset, e.message_index, e.slot) for e in fast.errors] == [(e.code, e.offset, e.message_index, e.slot) for e in slow.errors]
    assert np.array_equal(fast.records, slow.records)
    assert bytes(fast.side) == bytes(slow.side)
