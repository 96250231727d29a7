"""Every medium speaks the same contract: a sender process and a receiver, opened from a
spec dict and an endpoint, carry messages in order (fused: two threads of one process)."""
from __future__ import annotations

import multiprocessing as mp
import sys
import threading
from typing import Any

import pytest

from omdp.transport import open_receiver, open_sender
from omdp.transport import mpqueue
from omdp.transport.api import MessageTooLargeError, Receiver, Sender
from omdp.transport.shm_names import new_run_id, shm_name

CTX = mp.get_context("fork")
N = 500


def payload(i: int) -> bytes:
    return i.to_bytes(4, "little") * (1 + i % 50)


def send_all(spec: dict, endpoint: str, received: Any) -> None:
    tx = open_sender(spec, endpoint)
    assert isinstance(tx, Sender)
    ok = all(tx.put(payload(i), timeout=10) for i in range(N))
    received.wait(20)  # zmq drops what a closed sender's connection still held
    tx.close()
    sys.exit(0 if ok else 3)


def endpoint_for(transport: str, tmp_path) -> str:
    if transport == "vega-shm":
        return shm_name(new_run_id(), "media")
    if transport in ("tcp", "vega-tcp"):
        return "127.0.0.1:0"
    if transport == "zmq":
        return f"ipc://{tmp_path}/media.sock"
    return f"media-{transport}"


@pytest.mark.parametrize("transport", ["fused", "vega-shm", "tcp", "vega-tcp", "zmq", "mpqueue"])
def test_same_contract_on_every_medium(transport: str, tmp_path) -> None:
    spec = {"transport": transport, "queue_size": 8, "max_message": 256, "mutex": False, "wait": "spin-yield"}
    endpoint = endpoint_for(transport, tmp_path)
    if transport == "mpqueue":
        mpqueue.create_endpoint(endpoint, open_spec(spec))
    rx = open_receiver(spec, endpoint)
    assert isinstance(rx, Receiver)
    endpoint = getattr(rx, "endpoint", endpoint)
    received = CTX.Event()
    if transport == "fused":
        worker = threading.Thread(target=lambda: send_all_thread(spec, endpoint))
    else:
        worker = CTX.Process(target=send_all, args=(spec, endpoint, received))
    worker.start()
    for i in range(N):
        got = rx.get(timeout=10)
        assert got is not None, f"message {i} did not come"
        slot, view = got
        assert bytes(view) == payload(i)
        rx.release_buffer(slot)
    received.set()
    worker.join(10)
    if transport != "fused":
        assert worker.exitcode == 0
    rx.close()


def send_all_thread(spec: dict, endpoint: str) -> None:
    tx = open_sender(spec, endpoint)
    for i in range(N):
        tx.put(payload(i), timeout=10)
    with pytest.raises(MessageTooLargeError):
        tx.put(b"x" * 257)
    tx.close()


def open_spec(spec: dict):
    from omdp.transport import load_spec

    return load_spec(spec)
