"""Property tests of Vega's markers, over a mirrored ring whose writes land late.

The sender writes its own copy of the ring; every write it publishes (through the one
remote-write primitive) is held back and landed in the receiver's copy in pieces, in any
order except that a write's last 8 bytes (the end word) land last, as RDMA WRITE
guarantees. Payloads are hostile: they are filled with the end words (and begin words)
that later laps will use. Whatever lands, the receiver must never report a message before
its end word is in, and then exactly that message: bytes left from an earlier lap are
never read as new. Runs under ASan/UBSan in CI ("sanitize" in the name).
"""
from __future__ import annotations

import mmap

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from omdp.native import ffi, lib

Q = 4
LOG2Q = 2
MAX = 64
SIZE = int(lib.omdp_vega_region_size(Q, MAX))
STRIDE = int(lib.omdp_vega_slot_stride(MAX))
SLOTS = int(lib.omdp_vega_slots_offset())


class MirroredRing:
    """A sender on copy A, a receiver on copy B, writes A->B held until landed."""

    def __init__(self) -> None:
        self.a = mmap.mmap(-1, SIZE)
        self.b = mmap.mmap(-1, SIZE)
        assert lib.omdp_vega_region_create(ffi.from_buffer(self.a), SIZE, Q, MAX, 0, lib.OMDP_VEGA_WAIT_SPIN,
                                           lib.OMDP_VEGA_ON_FULL_BLOCK) == 0
        self.b[:] = self.a[:]
        tx = ffi.new("omdp_vega_sender_t **")
        rx = ffi.new("omdp_vega_receiver_t **")
        assert lib.omdp_vega_sender_open_local(ffi.from_buffer(self.a), SIZE, tx) == 0
        assert lib.omdp_vega_receiver_open_local(ffi.from_buffer(self.b), SIZE, rx) == 0
        self.tx, self.rx = tx[0], rx[0]
        self.pending: list[tuple[int, bytes]] = []

        @ffi.callback("void(void *, uint64_t, const void *, uint32_t)")
        def hold(ctx, offset, src, n):  # sender -> receiver: held back
            self.pending.append((offset, bytes(ffi.buffer(src, n))))

        @ffi.callback("void(void *, uint64_t, const void *, uint32_t)")
        def credit(ctx, offset, src, n):  # receiver -> sender: lands at once
            self.a[offset:offset + n] = bytes(ffi.buffer(src, n))

        self._callbacks = (hold, credit)
        lib.omdp_vega_sender_set_mirror(self.tx, hold, ffi.NULL)
        lib.omdp_vega_receiver_set_mirror(self.rx, credit, ffi.NULL)
        self.msg = ffi.new("omdp_vega_msg_t *")

    def land(self, offset: int, data: bytes) -> None:
        self.b[offset:offset + len(data)] = data

    def take(self) -> bytes | None:
        if lib.omdp_vega_try_get(self.rx, self.msg) != 0:
            return None
        got = bytes(ffi.buffer(self.msg.data, self.msg.size))
        assert lib.omdp_vega_release(self.rx, self.msg.slot_id) == 0
        return got

    def close(self) -> None:
        lib.omdp_vega_sender_close(self.tx)
        lib.omdp_vega_receiver_close(self.rx)


def end_word(seq: int, size: int, nonce: int) -> int:
    return int(lib.omdp_vega_end_word(seq, LOG2Q, size, nonce))


def hostile_payload(seq: int, size: int, nonce: int, kind: int, salt: bytes) -> bytes:
    """kind 0: arbitrary bytes; 1: word k = the end word of the message one or two laps on
    if it were 8k bytes long (exactly where that end word would go); 2: begin words of
    later laps; 3: the end word of this very message."""
    words = (size + 7) // 8
    if kind == 0:
        return (salt * (size // max(len(salt), 1) + 1))[:size] if salt else bytes(size)
    out = bytearray()
    for k in range(words):
        if kind == 1:
            w = end_word(seq + Q * (1 + k % 2), 8 * k, nonce)
        elif kind == 2:
            w = int(lib.omdp_vega_begin_word(seq + Q * (1 + k % 2), LOG2Q, 8 * k))
        else:
            w = end_word(seq, size, nonce)
        out += w.to_bytes(8, "little")
    return bytes(out[:size])


SCRUBS: list[int] = []

message = st.tuples(
    st.integers(0, MAX),              # size
    st.integers(0, 3),                # payload kind
    st.binary(max_size=8),            # salt for kind 0
    st.integers(0, (1 << 10) - 1),    # which 8-byte pieces land before the rest
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(st.lists(message, min_size=1, max_size=Q), min_size=1, max_size=12))
@example(rounds=[[(8, 0, b"", 0)]] + [[(8 * k, 1, b"", 1023)] for k in range(1, 9)] * 3)
def test_stale_bytes_never_read_as_new(rounds) -> None:
    ring = MirroredRing()
    try:
        # learn the channel's nonce from a first message's end word
        assert lib.omdp_vega_put(ring.tx, b"\0" * 8, 8, 0) == 0
        for offset, data in ring.pending:
            ring.land(offset, data)
        ring.pending.clear()
        end = int.from_bytes(ring.b[SLOTS + 16:SLOTS + 24], "little")
        nonce = end ^ end_word(0, 8, 0)
        assert ring.take() == b"\0" * 8
        seq = 1
        for burst in rounds:
            sent = []
            for size, kind, salt, mask in burst:
                payload = hostile_payload(seq, size, nonce, kind, salt)
                assert lib.omdp_vega_put(ring.tx, payload, size, 0) == 0
                sent.append(payload)
                seq += 1
            writes, ring.pending = ring.pending, []
            for (size, _kind, _salt, mask), payload in zip(burst, sent):
                # this message's writes: the scrub of its end word's place when stale bytes
                # there matched (8 bytes at the slot's end offset), then the slot write
                end_off = int(lib.omdp_vega_end_offset(size))
                if len(writes) > 1 and len(writes[0][1]) == 8 and writes[1][0] == writes[0][0] - end_off:
                    ring.land(*writes.pop(0))
                    SCRUBS.append(seq)
                offset, data = writes.pop(0)
                pieces = [(offset + i, data[i:i + 8]) for i in range(0, len(data), 8)]
                body, final = pieces[:-1], pieces[-1]
                early = [p for i, p in enumerate(body) if mask >> (i % 10) & 1]
                for p in early:
                    ring.land(*p)
                assert ring.take() is None, "a message was read before its end word landed"
                for p in body:
                    ring.land(*p)
                assert ring.take() is None, "a message was read before its end word landed"
                ring.land(*final)
                assert ring.take() == payload
            assert not writes
    finally:
        ring.close()


@given(st.integers(0, (1 << 40)), st.sampled_from([1, 2, 5, 10, 20]))
def test_consecutive_laps_never_share_a_tag(lap: int, log2q: int) -> None:
    seq = lap << log2q
    tag = int(lib.omdp_vega_tag(seq, log2q))
    assert tag != 0
    assert tag != int(lib.omdp_vega_tag(seq + (1 << log2q), log2q))
    if lap:
        assert tag != int(lib.omdp_vega_tag(seq - (1 << log2q), log2q))


def test_tag_survives_the_32_bit_lap_wrap() -> None:
    for lap in (0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF, 0x100000000, 0x100000001):
        a = int(lib.omdp_vega_tag(lap << 2, 2))
        b = int(lib.omdp_vega_tag((lap + 1) << 2, 2))
        assert a != b and a != 0 and b != 0


def test_the_hostile_example_made_the_sender_scrub() -> None:
    SCRUBS.clear()
    test_stale_bytes_never_read_as_new.hypothesis.inner_test(
        rounds=[[(8, 0, b"", 0)]] + [[(8 * k, 1, b"", 1023)] for k in range(1, 9)] * 3)
    assert SCRUBS, "the collision the scrub exists for never happened"
