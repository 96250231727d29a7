"""The ``tcp`` transport between processes: order and integrity, back-pressure, drops,
orderly close versus a killed peer, the hello that refuses a mismatched spec."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time

import numpy as np
import pytest

from omdp.native import ffi, lib
from omdp.transport import open_receiver, open_sender
from omdp.transport.api import MessageTooLargeError, PeerClosedError, PeerDeadError, TransportError
from omdp.transport.spec import ChannelSpec

CTX = mp.get_context("fork")
SPEC = ChannelSpec(transport="tcp", queue_size=16, max_message=1000, mutex=False)


def pattern(seq: int, size: int) -> bytes:
    buf = ffi.new("uint8_t[]", max(size, 1))
    lib.omdp_tbench_fill(buf, size, seq)
    return bytes(ffi.buffer(buf, size))


def sizes_for(n: int) -> list[int]:
    return [(i * 37) % 1001 for i in range(n)]


def send_patterns(endpoint: str, n: int, batched: bool) -> None:
    tx = open_sender(SPEC, endpoint)
    sizes = sizes_for(n)
    if batched:
        data = b"".join(pattern(i, s) for i, s in enumerate(sizes))
        ok = tx.put_batch(data, np.array(sizes, dtype=np.uint32)) == n
    else:
        ok = all(tx.put(pattern(i, s)) for i, s in enumerate(sizes))
    tx.close()
    sys.exit(0 if ok else 3)


@pytest.mark.parametrize("batched", [False, True])
def test_order_and_integrity(batched: bool) -> None:
    n = 3000
    rx = open_receiver(SPEC, "127.0.0.1:0")
    child = CTX.Process(target=send_patterns, args=(rx.endpoint, n, batched))
    child.start()
    for i, size in enumerate(sizes_for(n)):
        slot, view = rx.get(timeout=10)
        assert bytes(view) == pattern(i, size), f"message {i}"
        rx.release_buffer(slot)
    with pytest.raises(PeerClosedError):
        rx.get(timeout=10)
    child.join(10)
    assert child.exitcode == 0
    assert rx.counters()["messages"] == n
    rx.close()


def hang_after_connect(endpoint: str) -> None:
    tx = open_sender(SPEC, endpoint)
    tx.put(b"hello")
    time.sleep(60)


def test_killed_sender_is_dead_not_closed() -> None:
    rx = open_receiver(SPEC, "127.0.0.1:0")
    child = CTX.Process(target=hang_after_connect, args=(rx.endpoint,))
    child.start()
    slot, view = rx.get(timeout=10)
    assert bytes(view) == b"hello"
    rx.release_buffer(slot)
    os.kill(child.pid, signal.SIGKILL)
    with pytest.raises(PeerDeadError):
        rx.get(timeout=10)
    child.join()
    rx.close()


def test_back_pressure_drop_and_oversize() -> None:
    spec = ChannelSpec(transport="tcp", queue_size=2, max_message=65536, mutex=False, on_full="drop")
    rx = open_receiver(spec, "127.0.0.1:0")
    tx = open_sender(spec, rx.endpoint)
    with pytest.raises(MessageTooLargeError, match="max_message=65536"):
        tx.put(b"x" * 65537)
    big = b"y" * 65536
    sent = sum(tx.put(big) for _ in range(2000))  # the receiver never reads: kernel buffers fill
    assert 0 < sent < 2000
    assert tx.counters()["drops"] == 2000 - sent
    tx.close()
    rx.close()


def test_receiver_closed_under_a_sender() -> None:
    rx = open_receiver(SPEC, "127.0.0.1:0")
    tx = open_sender(SPEC, rx.endpoint)
    assert rx.accept(timeout=5)
    rx.close()
    with pytest.raises(TransportError):
        for _ in range(100000):
            tx.put(b"z" * 512)
    tx.close()


def test_mismatched_spec_is_refused() -> None:
    rx = open_receiver(SPEC, "127.0.0.1:0")
    with pytest.raises(TransportError, match="queue_size/max_message"):
        open_sender(SPEC.model_copy(update={"queue_size": 32}), rx.endpoint, connect_timeout=5)
    rx.close()
