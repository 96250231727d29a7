"""The ``vega-tcp`` transport between processes: the Vega ring mirrored over TCP keeps order
and bytes over many laps (single and batched calls, every wait strategy), credits travel
back, a killed peer is dead and an orderly one closed on both sides, a mismatched spec or
an absent receiver is refused, and a peer writing outside its window breaks the stream
without touching the ring."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import socket
import struct
import sys
import time
from multiprocessing.connection import Connection

import numpy as np
import pytest

from omdp.native import ffi, lib
from omdp.transport import open_receiver, open_sender
from omdp.transport.api import ChannelNotFoundError, PeerClosedError, PeerDeadError, TransportError
from omdp.transport.spec import ChannelSpec

HANG_GUARD_S = 60.0
"""How long a wait may take before the test calls it a hang: waits end on events, never on
this, except on a host too loaded to run the test at all."""

CTX = mp.get_context("fork")


def spec(**kw: object) -> ChannelSpec:
    return ChannelSpec(**{"transport": "vega-tcp", "queue_size": 8, "max_message": 1000, "mutex": False,
                          "wait": "spin-yield", **kw})


def pattern(seq: int, size: int) -> bytes:
    buf = ffi.new("uint8_t[]", max(size, 1))
    lib.omdp_tbench_fill(buf, size, seq)
    return bytes(ffi.buffer(buf, size))


def sizes_for(n: int) -> list[int]:
    return [(i * 37) % 1001 for i in range(n)]


def send_patterns(s: ChannelSpec, endpoint: str, n: int, batched: bool) -> None:
    tx = open_sender(s, endpoint)
    sizes = sizes_for(n)
    if batched:
        data = b"".join(pattern(i, k) for i, k in enumerate(sizes))
        ok = tx.put_batch(data, np.array(sizes, dtype=np.uint32), timeout=HANG_GUARD_S) == n
    else:
        ok = all(tx.put(pattern(i, k), timeout=HANG_GUARD_S) for i, k in enumerate(sizes))
    counters = tx.link_counters()
    tx.close()
    sys.exit(0 if ok and counters["stream_errors"] == 0 else 3)


@pytest.mark.parametrize(("batched", "wait"), [(False, "spin-yield"), (True, "spin-yield"), (False, "spin-block")])
def test_order_and_integrity_over_many_laps(batched: bool, wait: str) -> None:
    n = 2000
    s = spec(wait=wait)
    rx = open_receiver(s, "127.0.0.1:0")
    child = CTX.Process(target=send_patterns, args=(s, rx.endpoint, n, batched))
    child.start()
    got = 0
    while got < n:
        batch = rx.get_batch(5, timeout=HANG_GUARD_S)
        assert batch is not None, f"message {got} did not come"
        for k in range(len(batch)):
            assert bytes(batch.payload(k)) == pattern(got + k, sizes_for(n)[got + k]), f"message {got + k}"
        got += len(batch)
        rx.release_batch(batch)
    with pytest.raises(PeerClosedError):
        rx.get(timeout=HANG_GUARD_S)
    child.join(HANG_GUARD_S)
    assert child.exitcode == 0
    link = rx.link_counters()
    assert link["writes_in"] >= n and link["stream_errors"] == 0 and link["peer_state"] == "closed"
    assert rx.counters()["rx_messages"] == n
    rx.close()


def hang_after_put(s: ChannelSpec, endpoint: str) -> None:
    tx = open_sender(s, endpoint)
    tx.put(b"hello")
    time.sleep(60)


def test_killed_sender_is_dead_after_what_it_sent_is_read() -> None:
    s = spec()
    rx = open_receiver(s, "127.0.0.1:0")
    child = CTX.Process(target=hang_after_put, args=(s, rx.endpoint))
    child.start()
    assert rx.accept(timeout=HANG_GUARD_S)
    deadline = time.monotonic() + HANG_GUARD_S
    while not rx.available():
        assert time.monotonic() < deadline, "the sender's message never arrived"
        time.sleep(0.001)
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    slot, view = rx.get(timeout=HANG_GUARD_S)
    assert bytes(view) == b"hello"
    rx.release_buffer(slot)
    with pytest.raises(PeerDeadError):
        rx.get(timeout=HANG_GUARD_S)
    assert rx.peer_state() == "dead"
    rx.close()


def receive_then_hang(s: ChannelSpec, conn: Connection) -> None:
    rx = open_receiver(s, "127.0.0.1:0")
    conn.send(rx.endpoint)
    time.sleep(60)


@pytest.mark.parametrize("how", ["kill", "close"])
def test_sender_with_a_full_ring_learns_the_receiver_left(how: str) -> None:
    s = spec()
    parent, child_end = CTX.Pipe()
    child = CTX.Process(target=receive_then_hang if how == "kill" else close_after_accept, args=(s, child_end))
    child.start()
    endpoint = parent.recv()
    tx = open_sender(s, endpoint)
    for i in range(s.queue_size):
        assert tx.put(b"x" * 16, timeout=HANG_GUARD_S)
    if how == "kill":
        os.kill(child.pid, signal.SIGKILL)
    error = PeerDeadError if how == "kill" else PeerClosedError
    with pytest.raises(error):
        tx.put(b"one too many", timeout=HANG_GUARD_S)
    child.join(HANG_GUARD_S)
    tx.close()


def close_after_accept(s: ChannelSpec, conn: Connection) -> None:
    rx = open_receiver(s, "127.0.0.1:0")
    conn.send(rx.endpoint)
    rx.accept(timeout=HANG_GUARD_S)
    while rx.counters()["rx_messages"] == 0 and not rx.available():
        time.sleep(0.001)
    rx.close()


def test_mismatched_spec_and_absent_receiver_are_refused() -> None:
    rx = open_receiver(spec(), "127.0.0.1:0")
    with pytest.raises(TransportError, match="refused the hello"):
        open_sender(spec(queue_size=16), rx.endpoint, connect_timeout=5)
    rx.close()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ChannelNotFoundError, match="nobody listened within 0.3 s"):
        open_sender(spec(), f"127.0.0.1:{free_port}", connect_timeout=0.3)
    assert time.monotonic() - t0 < 5


def test_a_write_outside_the_window_breaks_the_stream_and_touches_nothing() -> None:
    s = spec()
    rx = open_receiver(s, "127.0.0.1:0")
    host, port = rx.endpoint.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(struct.pack("<8I", 0x4354564F, 1, s.queue_size, s.max_message, 0, 1, 0, 0))
        welcome = b""
        while len(welcome) < 8 + ffi.sizeof("omdp_vega_layout_t"):
            welcome += raw.recv(4096)
        assert struct.unpack("<I", welcome[:4])[0] == 1
        slots = int(lib.omdp_vega_slots_offset())
        layout_before, slots_before = bytes(rx._mm[:128]), bytes(rx._mm[slots:])
        # a "write" into the control block (offset 0): not the sender's to write
        raw.sendall(struct.pack("<IIQ", 1, 8, 0) + b"\xff" * 8)
        with pytest.raises(PeerDeadError, match="outside the peer's window"):
            rx.get(timeout=HANG_GUARD_S)
        assert bytes(rx._mm[:128]) == layout_before and bytes(rx._mm[slots:]) == slots_before
    assert rx.link_counters()["stream_errors"] == 1
    rx.close()


def test_a_tcp_receiver_is_not_taken_for_a_vega_tcp_one() -> None:
    rx = open_receiver({"transport": "tcp", "queue_size": 8, "max_message": 1000}, "127.0.0.1:0")
    with pytest.raises(TransportError, match="not a vega-tcp receiver"):
        open_sender(spec(), rx.endpoint, connect_timeout=5)
    rx.close()
