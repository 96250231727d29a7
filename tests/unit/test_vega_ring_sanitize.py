"""The Vega ring in one process (local pair and shm): put/get of every size, wrap-around,
full ring (back-pressure, counted drops), oversize, releases, claim/commit, batches, the
mutex. Runs under ASan/UBSan in CI ("sanitize" in the name)."""
from __future__ import annotations

import os
import stat
import threading

import numpy as np
import pytest

from omdp.native import ffi, lib
from omdp.transport.api import MessageTooLargeError, TransportError
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver, VegaSender, vega_local_pair


def pattern(seq: int, size: int) -> bytes:
    buf = ffi.new("uint8_t[]", max(size, 1))
    lib.omdp_tbench_fill(buf, size, seq)
    return bytes(ffi.buffer(buf, size))


@pytest.fixture
def pair():
    tx, rx = vega_local_pair(ChannelSpec(queue_size=8, max_message=256, mutex=False))
    yield tx, rx
    tx.close()
    rx.close()


def test_every_size_round_trips(pair) -> None:
    tx, rx = pair
    for size in range(0, 257):
        data = pattern(size, size)
        assert tx.put(data)
        slot, view = rx.get(timeout=1)
        assert view.readonly
        assert bytes(view) == data
        rx.release_buffer(slot)
    c = tx.counters()
    assert c["tx_messages"] == c["rx_messages"] == 257
    assert c["tx_bytes"] == c["rx_bytes"] == sum(range(257))


def test_wrap_around_many_laps_keeps_order(pair) -> None:
    tx, rx = pair
    n = 8 * 50 + 3
    received: list[bytes] = []

    def drain() -> None:
        while (got := rx.get(timeout=0)) is not None:
            slot, view = got
            received.append(bytes(view))
            rx.release_buffer(slot)

    for seq in range(n):
        size = seq % 257
        assert tx.put(pattern(seq, size))
        if seq % 3 == 2:  # let a few pile up, then drain
            drain()
    drain()
    # every message once, in order, with its own payload (size and contents) after 50 laps
    assert len(received) == n
    for seq, data in enumerate(received):
        assert data == pattern(seq, seq % 257), f"message {seq} out of order or corrupted"
    c = tx.counters()
    assert c["tx_messages"] == c["rx_messages"] == n and c["tx_drops"] == 0


def test_full_ring_back_pressure_then_credit(pair) -> None:
    tx, rx = pair
    for i in range(8):
        assert tx.put(bytes([i]) * 8, timeout=0)
    assert not tx.ready_to_send()
    assert tx.put(b"x" * 8, timeout=0.01) is False
    c = tx.counters()
    assert c["tx_full_events"] >= 1 and c["tx_drops"] == 0
    slot, view = rx.get(timeout=0)
    assert bytes(view) == bytes([0]) * 8
    rx.release_buffer(slot)
    assert tx.ready_to_send()
    assert tx.put(b"y" * 8, timeout=0)


def test_drop_policy_counts_drops() -> None:
    tx, rx = vega_local_pair(ChannelSpec(queue_size=4, max_message=64, mutex=False, on_full="drop"))
    sent = [tx.put(bytes([i]) * 16) for i in range(10)]
    assert sent == [True] * 4 + [False] * 6
    assert tx.counters()["tx_drops"] == 6
    got = []
    while (m := rx.get(timeout=0)) is not None:
        got.append(bytes(m[1])[0])
        rx.release_buffer(m[0])
    assert got == [0, 1, 2, 3]
    tx.close()
    rx.close()


def test_oversize_message_names_max_message(pair) -> None:
    tx, _ = pair
    with pytest.raises(MessageTooLargeError, match="257 bytes exceeds max_message=256"):
        tx.put(b"z" * 257)
    with pytest.raises(ValueError):
        tx.put_batch(b"z" * 300, np.array([300]))


def test_out_of_order_release_and_bad_release(pair) -> None:
    tx, rx = pair
    for i in range(8):
        tx.put(bytes([i]) * 8)
    held = [rx.get(timeout=0) for _ in range(8)]
    assert not tx.ready_to_send()
    rx.release_buffer(held[3][0])  # out of order: no credit yet
    assert not tx.ready_to_send()
    with pytest.raises(TransportError, match="not held"):
        rx.release_buffer(held[3][0])
    rx.release_buffer(held[0][0])
    assert tx.ready_to_send()
    for slot in (1, 2, 4, 5, 6, 7):
        rx.release_buffer(held[slot][0])
    assert rx.held() == 0
    with pytest.raises(TransportError, match="not held"):
        rx.release_buffer(0)
    with pytest.raises(TransportError):
        rx.release_buffer(99)


def test_claim_commit_in_place(pair) -> None:
    tx, rx = pair
    view = tx.claim()
    assert view is not None and len(view) == 256
    view[:5] = b"hello"
    with pytest.raises(TransportError, match="claim"):
        tx.put(b"no")  # a put while the claim is open
    tx.commit(5)
    slot, got = rx.get(timeout=0)
    assert bytes(got) == b"hello"
    rx.release_buffer(slot)
    view = tx.claim()
    tx.abandon()
    assert rx.get(timeout=0) is None
    with pytest.raises(TransportError, match="claim"):
        tx.commit(1)


def test_batch_put_and_get(pair) -> None:
    tx, rx = pair
    sizes = np.array([8, 0, 33, 256, 1, 64], dtype=np.uint32)
    data = b"".join(pattern(i, int(s)) for i, s in enumerate(sizes))
    assert tx.put_batch(data, sizes) == 6
    batch = rx.get_batch()
    assert batch is not None and list(batch.sizes) == list(sizes)
    for i, s in enumerate(sizes):
        assert bytes(batch.payload(i)) == pattern(i, int(s))
    rx.release_batch(batch)
    # a batch stops at the ring's end: 6 more start at slot 6, so 2 then 4
    assert tx.put_batch(data, sizes) == 6
    first = rx.get_batch()
    second = rx.get_batch()
    assert (first.first_slot, len(first), second.first_slot, len(second)) == (6, 2, 0, 4)
    rx.release_batch(first)
    rx.release_batch(second)


def test_batch_put_drops_what_does_not_fit() -> None:
    tx, rx = vega_local_pair(ChannelSpec(queue_size=4, max_message=64, mutex=False, on_full="drop"))
    assert tx.put_batch(b"a" * 80, np.full(10, 8, dtype=np.uint32)) == 4
    assert tx.counters()["tx_drops"] == 6
    tx.close()
    rx.close()


def test_mutex_on_two_producer_threads_stay_ordered_per_thread() -> None:
    tx, rx = vega_local_pair(ChannelSpec(queue_size=64, max_message=64, mutex=True))
    per_thread = 2000

    def produce(tag: int) -> None:
        for i in range(per_thread):
            assert tx.put(bytes([tag]) + i.to_bytes(4, "little"), timeout=10)

    threads = [threading.Thread(target=produce, args=(t,)) for t in (1, 2)]
    for t in threads:
        t.start()
    last = {1: -1, 2: -1}
    for _ in range(2 * per_thread):
        slot, view = rx.get(timeout=10)
        tag, i = view[0], int.from_bytes(view[1:5], "little")
        assert i == last[tag] + 1
        last[tag] = i
        rx.release_buffer(slot)
    for t in threads:
        t.join()
    assert last == {1: per_thread - 1, 2: per_thread - 1}
    tx.close()
    rx.close()


def test_mutex_off_refuses_a_second_thread() -> None:
    tx, rx = vega_local_pair(ChannelSpec(queue_size=16, max_message=64, mutex=False))
    assert tx.put(b"first")
    errors: list[Exception] = []

    def other() -> None:
        try:
            tx.put(b"second")
        except TransportError as e:
            errors.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1 and "mutex=true" in str(errors[0])
    tx.close()
    rx.close()


@pytest.mark.parametrize("wait", ["spin", "spin-yield", "spin-block"])
def test_wait_strategies_wake_a_waiting_receiver(wait: str) -> None:
    tx, rx = vega_local_pair(ChannelSpec(queue_size=4, max_message=64, mutex=True, wait=wait))
    got: list[bytes] = []

    def consume() -> None:
        for _ in range(200):
            slot, view = rx.get(timeout=5)
            got.append(bytes(view))
            rx.release_buffer(slot)

    t = threading.Thread(target=consume)
    t.start()
    for i in range(200):
        assert tx.put(i.to_bytes(8, "little"), timeout=5)
    t.join()
    assert got == [i.to_bytes(8, "little") for i in range(200)]
    assert rx.get(timeout=0.01) is None
    tx.close()
    rx.close()


def test_shm_channel_in_one_process_and_cleanup(tmp_path) -> None:
    spec = ChannelSpec(queue_size=8, max_message=128, mutex=False)
    name = "omdp-sanitizetest-ch0"
    rx = VegaReceiver.create(spec, name)
    assert stat.S_IMODE(os.stat(f"/dev/shm/{name}").st_mode) == 0o600
    tx = VegaSender.attach(spec, name)
    assert rx.peer_state() == "attached" and tx.peer_state() == "attached"
    tx.put(b"abc")
    slot, view = rx.get(timeout=1)
    assert bytes(view) == b"abc"
    rx.release_buffer(slot)
    tx.close()
    assert rx.peer_state() == "closed"
    with pytest.raises(TransportError, match="closed"):
        rx.get(timeout=1)
    rx.close()
    assert not os.path.exists(f"/dev/shm/{name}")
    assert bytes(view) == b"abc"  # the view's mapping outlives close: no crash


def test_sender_spec_must_match_the_channel() -> None:
    name = "omdp-sanitizetest-ch1"
    rx = VegaReceiver.create(ChannelSpec(queue_size=8, max_message=128), name)
    try:
        with pytest.raises(TransportError, match="queue_size"):
            VegaSender.attach(ChannelSpec(queue_size=16, max_message=128), name)
    finally:
        rx.close()


def test_pattern_check_catches_a_wrong_message(pair) -> None:
    tx, rx = pair
    sizes = np.array([16], dtype=np.uint32)
    tx.put(pattern(0, 16))
    tx.put(pattern(5, 16))  # should have been message 1
    bad = ffi.new("uint64_t *")
    first = ffi.new("uint64_t *")
    got = lib.omdp_tbench_recv_verify(rx.c_handle, 2, ffi.from_buffer("uint32_t[]", sizes), 1, 10**9, bad, first)
    assert (got, bad[0], first[0]) == (2, 1, 1)
