"""The pieces every mirrored medium shares (vega_mirror.h): a sender laid out from the
receiver's layout talks to it through applied writes; a peer may write only its window
(slots into the receiver's copy, the credit word into the sender's), 8-byte aligned, and
anything else is refused with nothing written; a layout of another size or version is
refused. Runs under ASan/UBSan in CI ("sanitize" in the name)."""
from __future__ import annotations

import mmap

import pytest

from omdp.native import ffi, lib

Q, MAX = 8, 128
SIZE = int(lib.omdp_vega_region_size(Q, MAX))
SLOTS = int(lib.omdp_vega_slots_offset())
LAYOUT = ffi.sizeof("omdp_vega_layout_t")
SENDER, RECEIVER = lib.OMDP_VEGA_MIRROR_SENDER, lib.OMDP_VEGA_MIRROR_RECEIVER


class Pair:
    """A receiver's ring and a sender's copy made from its layout, writes applied by hand."""

    def __init__(self) -> None:
        self.rxm = mmap.mmap(-1, SIZE)
        self.txm = mmap.mmap(-1, SIZE)
        assert lib.omdp_vega_region_create(ffi.from_buffer(self.rxm), SIZE, Q, MAX, 0, lib.OMDP_VEGA_WAIT_SPIN,
                                           lib.OMDP_VEGA_ON_FULL_BLOCK) == 0
        layout = ffi.from_buffer(bytes(self.rxm[:LAYOUT]))
        assert lib.omdp_vega_mirror_copy_layout(ffi.from_buffer(self.txm), SIZE,
                                                ffi.cast("omdp_vega_layout_t *", layout)) == 0
        tx, rx = ffi.new("omdp_vega_sender_t **"), ffi.new("omdp_vega_receiver_t **")
        assert lib.omdp_vega_sender_open_local(ffi.from_buffer(self.txm), SIZE, tx) == 0
        assert lib.omdp_vega_receiver_open_local(ffi.from_buffer(self.rxm), SIZE, rx) == 0
        self.tx, self.rx = tx[0], rx[0]
        self.to_rx: list[tuple[int, bytes]] = []
        self.to_tx: list[tuple[int, bytes]] = []

        @ffi.callback("void(void *, uint64_t, const void *, uint32_t)")
        def out(ctx, offset, src, n):
            self.to_rx.append((offset, bytes(ffi.buffer(src, n))))

        @ffi.callback("void(void *, uint64_t, const void *, uint32_t)")
        def back(ctx, offset, src, n):
            self.to_tx.append((offset, bytes(ffi.buffer(src, n))))

        self._keep = (out, back)
        lib.omdp_vega_sender_set_mirror(self.tx, out, ffi.NULL)
        lib.omdp_vega_receiver_set_mirror(self.rx, back, ffi.NULL)
        self.msg = ffi.new("omdp_vega_msg_t *")

    def apply(self, mm: mmap.mmap, role: int, offset: int, data: bytes) -> int:
        return lib.omdp_vega_mirror_apply(ffi.from_buffer(mm), SIZE, role, offset, data, len(data))

    def flush(self) -> None:
        for offset, data in self.to_rx:
            assert self.apply(self.rxm, RECEIVER, offset, data) == lib.OMDP_VEGA_MIRROR_OK
        for offset, data in self.to_tx:
            assert self.apply(self.txm, SENDER, offset, data) == lib.OMDP_VEGA_MIRROR_OK
        self.to_rx.clear()
        self.to_tx.clear()

    def close(self) -> None:
        lib.omdp_vega_sender_close(self.tx)
        lib.omdp_vega_receiver_close(self.rx)


def test_a_copy_laid_out_from_the_layout_carries_messages_and_credits_over_laps() -> None:
    p = Pair()
    for lap in range(5):
        for i in range(Q):
            payload = bytes([lap, i]) * (1 + (lap * Q + i) % 60)
            assert lib.omdp_vega_put(p.tx, payload, len(payload), 0) == 0
        assert lib.omdp_vega_put(p.tx, b"x", 1, 0) == lib.OMDP_VEGA_FULL  # no credit yet
        assert lib.omdp_vega_try_get(p.rx, p.msg) == lib.OMDP_VEGA_EMPTY   # nothing applied yet
        p.flush()
        for i in range(Q):
            assert lib.omdp_vega_try_get(p.rx, p.msg) == 0
            assert bytes(ffi.buffer(p.msg.data, p.msg.size)) == bytes([lap, i]) * (1 + (lap * Q + i) % 60)
            assert lib.omdp_vega_release(p.rx, p.msg.slot_id) == 0
        p.flush()
    p.close()


@pytest.mark.parametrize(("role", "offset", "length", "error"), [
    (RECEIVER, 0, 8, "WINDOW"),                     # the control block: layout and magic
    (RECEIVER, SLOTS - 8, 16, "WINDOW"),            # straddles into the slots
    (RECEIVER, SIZE - 8, 16, "WINDOW"),             # past the end
    (RECEIVER, (1 << 64) - 8, 16, "WINDOW"),        # offset + length wraps around
    (RECEIVER, SLOTS + 4, 8, "ALIGN"),
    (RECEIVER, SLOTS, 12, "ALIGN"),
    (RECEIVER, SLOTS, 0, "ALIGN"),
    (SENDER, SLOTS, 16, "WINDOW"),                  # a receiver writes only the credit word
    (SENDER, 0, 8, "WINDOW"),
])
def test_writes_outside_the_window_are_refused_untouched(role: int, offset: int, length: int, error: str) -> None:
    p = Pair()
    mm = p.rxm if role == RECEIVER else p.txm
    before = bytes(mm)
    rc = p.apply(mm, role, offset, b"\xab" * length)
    assert rc == getattr(lib, f"OMDP_VEGA_MIRROR_E_{error}")
    assert bytes(mm) == before
    p.close()


def test_the_sender_copy_takes_its_credit_word() -> None:
    p = Pair()
    lo, hi = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    lib.omdp_vega_mirror_window(ffi.from_buffer(p.txm), SENDER, lo, hi)
    assert hi[0] - lo[0] == 8
    assert p.apply(p.txm, SENDER, lo[0], (5).to_bytes(8, "little")) == 0
    stats = ffi.new("omdp_vega_stats_t *")
    lib.omdp_vega_stats(ffi.from_buffer(p.txm), stats)
    assert stats.credit == 5
    p.close()


def test_layouts_of_another_ring_are_refused() -> None:
    rxm = mmap.mmap(-1, SIZE)
    assert lib.omdp_vega_region_create(ffi.from_buffer(rxm), SIZE, Q, MAX, 0, 0, 0) == 0
    good = ffi.new("omdp_vega_layout_t *")
    ffi.memmove(good, rxm[:LAYOUT], LAYOUT)
    for field, value in (("total_size", SIZE + 64), ("queue_size", 3), ("max_message", MAX * 2), ("wait", 9)):
        bad = ffi.new("omdp_vega_layout_t *", good[0])
        setattr(bad, field, value)
        txm = mmap.mmap(-1, SIZE)
        assert lib.omdp_vega_mirror_copy_layout(ffi.from_buffer(txm), SIZE, bad) == lib.OMDP_VEGA_E_LAYOUT, field
        tx = ffi.new("omdp_vega_sender_t **")
        assert lib.omdp_vega_sender_open_local(ffi.from_buffer(txm), SIZE, tx) == lib.OMDP_VEGA_E_LAYOUT, field
    txm = mmap.mmap(-1, SIZE)
    assert lib.omdp_vega_mirror_copy_layout(ffi.from_buffer(txm), SIZE - 64, good) == lib.OMDP_VEGA_E_LAYOUT
