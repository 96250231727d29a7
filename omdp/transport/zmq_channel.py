"""The ``zmq`` medium (benchmarks only): pyzmq PUSH/PULL over ``ipc://``.

What a Python user would reach for; it speaks the five calls so the benchmark drives it
like every other medium. Every message is a Python call into libzmq on both sides; the
high-water marks stand in for ``queue_size``. Peer crashes are not detected (zmq
reconnects silently), and when a sender closes, messages its connection still carried
that the receiver had not taken may be discarded (zmq's rule for a departed peer): a sender
closes once its receiver confirmed, out of band. Measurements only, not pipelines.
"""
from __future__ import annotations

import itertools
import os
import time

import zmq

from omdp.transport.api import Buffer, MessageTooLargeError, TransportError
from omdp.transport.spec import ChannelSpec


def ipc_address(endpoint: str) -> str:
    """``ipc://PATH`` from an endpoint given as that or as a bare path."""
    return endpoint if endpoint.startswith("ipc://") else f"ipc://{endpoint}"


class ZmqReceiver:
    """PULL socket bound at the endpoint; held frames are the 'slots'."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        self.spec = spec
        self.name = ipc_address(endpoint)
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.PULL)
        self._sock.setsockopt(zmq.RCVHWM, spec.queue_size)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.bind(self.name)
        self._held: dict[int, zmq.Frame] = {}
        self._ids = itertools.count()
        self.messages = 0

    def available(self) -> bool:
        """True when a message is queued."""
        return bool(self._sock.poll(0, zmq.POLLIN))

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message; None after ``timeout`` seconds."""
        if timeout is not None and not self._sock.poll(int(timeout * 1000), zmq.POLLIN):
            return None
        frame = self._sock.recv(copy=False)
        slot = next(self._ids)
        self._held[slot] = frame
        self.messages += 1
        return slot, frame.buffer

    def release_buffer(self, slot_id: int) -> None:
        """Drop the held frame."""
        if self._held.pop(slot_id, None) is None:
            raise TransportError(f"channel {self.name!r}: release_buffer({slot_id}) of a message not held")

    def close(self) -> None:
        """Close the socket and its context."""
        self._held.clear()
        self._sock.close(0)
        self._ctx.term()


class ZmqSender:
    """PUSH socket connected to the endpoint."""

    def __init__(self, spec: ChannelSpec, endpoint: str, connect_timeout: float = 10.0) -> None:
        self.spec = spec
        self.name = ipc_address(endpoint)
        path = self.name[len("ipc://"):]
        deadline = time.monotonic() + connect_timeout
        while not os.path.exists(path):
            if time.monotonic() >= deadline:
                raise TransportError(f"channel {self.name!r}: no receiver bound within {connect_timeout} s")
            time.sleep(0.002)
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.PUSH)
        self._sock.setsockopt(zmq.SNDHWM, spec.queue_size)
        self._sock.setsockopt(zmq.LINGER, -1)  # close delivers everything queued
        self._sock.connect(self.name)
        self.drops = 0

    def ready_to_send(self) -> bool:
        """True when the socket takes a message now."""
        return bool(self._sock.poll(0, zmq.POLLOUT))

    def put(self, data: Buffer, timeout: float | None = None) -> bool:
        """Send one message (copied by zmq); False when dropped or full for ``timeout``."""
        if len(data) > self.spec.max_message:
            raise MessageTooLargeError(f"channel {self.name!r}: message of {len(data)} bytes exceeds "
                                       f"max_message={self.spec.max_message}")
        if self.spec.on_full == "drop" or timeout is not None:
            wait_ms = 0 if self.spec.on_full == "drop" else int((timeout or 0) * 1000)
            if not self._sock.poll(wait_ms, zmq.POLLOUT):
                self.drops += self.spec.on_full == "drop"
                return False
        self._sock.send(data, copy=True)
        return True

    def close(self) -> None:
        """Close the socket (waiting until queued messages are out) and its context."""
        self._sock.close()
        self._ctx.term()
