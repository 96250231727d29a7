"""Vega over shared memory between processes: order and integrity of checksummed
payloads of every size, all wait strategies, peer crash detection (never a hang), and
segment cleanup after SIGKILL of either side. Channels here wait with spin-yield unless
the strategy is what is tested: two pure spinners starve each other on a loaded 2-core box."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from omdp.native import ffi, lib
from omdp.transport.api import PeerDeadError
from omdp.transport.shm_names import clean_stale, new_run_id, read_stats, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver, VegaSender

HANG_GUARD_S = 60.0
"""How long a wait may take before the test calls it a hang: waits end on events, never on
this, except on a host too loaded to run the test at all."""

CTX = mp.get_context("fork")
MAX = 1000  # not a multiple of 8: payload padding is exercised
SIZES = np.array(sorted(set(list(range(0, MAX, 37)) + [1, 7, 8, 9, 63, 64, 65, MAX - 1, MAX])), dtype=np.uint32)
TIMEOUT_NS = 20_000_000_000


def fresh_name() -> str:
    return shm_name(new_run_id(), "edge")


def gone(name: str) -> bool:
    return not Path("/dev/shm", name).exists()


def send_pattern(name: str, spec: ChannelSpec, n: int) -> None:
    tx = VegaSender.attach(spec, name)
    sent = lib.omdp_tbench_send_pattern(tx.c_handle, n, ffi.from_buffer("uint32_t[]", SIZES), len(SIZES), TIMEOUT_NS)
    tx.close()
    sys.exit(0 if sent == n else 3)


def receive_verified(rx: VegaReceiver, n: int) -> None:
    bad = ffi.new("uint64_t *")
    first_bad = ffi.new("uint64_t *")
    got = lib.omdp_tbench_recv_verify(rx.c_handle, n, ffi.from_buffer("uint32_t[]", SIZES), len(SIZES), TIMEOUT_NS,
                                      bad, first_bad)
    assert got == n, f"received {got} of {n}"
    assert bad[0] == 0, f"{bad[0]} corrupt or out-of-order messages, first at #{first_bad[0]}"


def run_pair(spec: ChannelSpec, n: int) -> None:
    name = fresh_name()
    rx = VegaReceiver.create(spec, name)
    child = CTX.Process(target=send_pattern, args=(name, spec, n))
    child.start()
    try:
        receive_verified(rx, n)
        child.join(HANG_GUARD_S)
        assert child.exitcode == 0
        c = rx.counters()
        assert c["rx_messages"] == c["tx_messages"] == n
    finally:
        if child.is_alive():
            child.kill()
        rx.close()
    assert gone(name)


def test_order_and_integrity_every_size() -> None:
    run_pair(ChannelSpec(queue_size=64, max_message=MAX, mutex=False, wait="spin-yield"), 200_000)


@pytest.mark.slow
def test_order_and_integrity_millions() -> None:
    run_pair(ChannelSpec(queue_size=128, max_message=MAX, mutex=True, wait="spin-yield"), 5_000_000)


# two pure spinners take seconds on a loaded 2-core box
@pytest.mark.parametrize("wait", [pytest.param("spin", marks=pytest.mark.full), "spin-yield", "spin-block"])
def test_wait_strategies_across_processes(wait: str) -> None:
    run_pair(ChannelSpec(queue_size=8, max_message=MAX, mutex=False, wait=wait), 20_000)


def attach_and_hang(name: str, spec: ChannelSpec, fill: bool) -> None:
    tx = VegaSender.attach(spec, name)
    if fill:
        tx.put(b"last words")
    time.sleep(60)


def create_and_hang(name: str, spec: ChannelSpec) -> None:
    rx = VegaReceiver.create(spec, name)
    time.sleep(60)
    rx.close()


def wait_for_sender(rx: VegaReceiver) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while rx.peer_state() == "absent":
        assert time.monotonic() < deadline
        time.sleep(0.005)


@pytest.mark.parametrize("wait", ["spin", "spin-block"])
def test_receiver_detects_killed_sender_and_cleans_up(wait: str) -> None:
    spec = ChannelSpec(queue_size=8, max_message=64, mutex=False, wait=wait)
    name = fresh_name()
    rx = VegaReceiver.create(spec, name)
    child = CTX.Process(target=attach_and_hang, args=(name, spec, True))
    child.start()
    wait_for_sender(rx)
    slot, view = rx.get(timeout=HANG_GUARD_S)
    assert bytes(view) == b"last words"
    rx.release_buffer(slot)
    os.kill(child.pid, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(PeerDeadError, match="died"):
        rx.get()  # unbounded: must end in an error, not hang
    assert time.monotonic() - t0 < 5
    child.join()
    assert rx.peer_state() == "dead"
    rx.close()
    assert gone(name)


def test_sender_detects_killed_receiver_and_cleans_up() -> None:
    spec = ChannelSpec(queue_size=4, max_message=64, mutex=False)
    name = fresh_name()
    child = CTX.Process(target=create_and_hang, args=(name, spec))
    child.start()
    tx = VegaSender.attach(spec, name)
    for _ in range(4):
        assert tx.put(b"x" * 8)
    os.kill(child.pid, signal.SIGKILL)
    child.join()  # reaped or not (zombie), the pid counts as dead
    with pytest.raises(PeerDeadError):
        tx.put(b"y" * 8)  # ring full, no credit will come
    assert tx.peer_state() == "dead"
    tx.close()
    assert gone(name)


def test_zombie_peer_counts_as_dead() -> None:
    spec = ChannelSpec(queue_size=4, max_message=64, mutex=False)
    name = fresh_name()
    child = CTX.Process(target=create_and_hang, args=(name, spec))
    child.start()
    tx = VegaSender.attach(spec, name)
    os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + HANG_GUARD_S
    while tx.peer_state() != "dead":  # not joined: a zombie until the end of the test
        assert time.monotonic() < deadline
        time.sleep(0.01)
    tx.close()
    child.join()
    assert gone(name)


def test_both_killed_leaves_a_segment_that_clean_removes() -> None:
    spec = ChannelSpec(queue_size=4, max_message=64, mutex=False)
    run = new_run_id()
    name = shm_name(run, "edge")
    rx_proc = CTX.Process(target=create_and_hang, args=(name, spec))
    rx_proc.start()
    deadline = time.monotonic() + HANG_GUARD_S
    while read_stats(name) is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    tx_proc = CTX.Process(target=attach_and_hang, args=(name, spec, False))
    tx_proc.start()
    deadline = time.monotonic() + HANG_GUARD_S
    while read_stats(name)["tx_state"] != "attached":
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert clean_stale(run) == []  # live sides: never removed
    os.kill(tx_proc.pid, signal.SIGKILL)
    os.kill(rx_proc.pid, signal.SIGKILL)
    tx_proc.join()
    rx_proc.join()
    st = read_stats(name)
    assert st["tx_state"] == "dead" and st["rx_state"] == "dead"
    assert clean_stale(run) == [name]
    assert gone(name)


def test_counters_readable_from_outside_while_running() -> None:
    spec = ChannelSpec(queue_size=16, max_message=64, mutex=False)
    name = fresh_name()
    rx = VegaReceiver.create(spec, name)
    child = CTX.Process(target=send_pattern, args=(name, ChannelSpec(queue_size=16, max_message=MAX, mutex=False), 1))
    child.start()
    child.join(HANG_GUARD_S)
    assert child.exitcode != 0  # a sender whose spec differs is refused
    rx.close()

    name = fresh_name()
    rx = VegaReceiver.create(spec, name)
    tx = VegaSender.attach(spec, name)
    for _ in range(20):
        tx.put(b"12345678", timeout=0)
    outside = read_stats(name)
    assert outside["tx_messages"] == 16 and outside["tx_full_events"] == 4 and outside["rx_messages"] == 0
    assert outside["tx_pid"] == outside["rx_pid"] == os.getpid()
    tx.close()
    rx.close()
