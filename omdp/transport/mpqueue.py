"""The ``mpqueue`` medium (benchmarks only): a ``multiprocessing.Queue`` per channel.

A queue cannot be found by name, so the parent makes it with ``create_endpoint(name,
spec)`` before it forks its processes; ``open_sender``/``open_receiver`` in the children
pick it up by that name. Messages are pickled bytes through a pipe and a feeder thread:
what a Python user gets from the standard library.
"""
from __future__ import annotations

import itertools
import multiprocessing as mp
import queue as queue_mod
from multiprocessing.queues import Queue
from typing import Any

from omdp.transport.api import Buffer, ChannelNotFoundError, MessageTooLargeError, TransportError
from omdp.transport.spec import ChannelSpec

_queues: dict[str, Queue[Any]] = {}


def create_endpoint(name: str, spec: ChannelSpec, context: Any = None) -> str:
    """Make the queue of channel ``name`` (call before forking the two ends); returns name."""
    ctx = context or mp.get_context("fork")
    _queues[name] = ctx.Queue(maxsize=spec.queue_size)
    return name


def _lookup(name: str) -> Queue[Any]:
    try:
        return _queues[name]
    except KeyError:
        raise ChannelNotFoundError(f"mpqueue channel {name!r}: make it with create_endpoint before forking") from None


class MpQueueReceiver:
    """The get side of the queue."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        self.spec = spec
        self.name = endpoint
        self._q = _lookup(endpoint)
        self._held: dict[int, bytes] = {}
        self._ids = itertools.count()

    def available(self) -> bool:
        """True when the queue is not empty (approximate, as multiprocessing says)."""
        return not self._q.empty()

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message; None after ``timeout`` seconds."""
        try:
            data = self._q.get(timeout=timeout)
        except queue_mod.Empty:
            return None
        slot = next(self._ids)
        self._held[slot] = data
        return slot, memoryview(data)

    def release_buffer(self, slot_id: int) -> None:
        """Forget the held message."""
        if self._held.pop(slot_id, None) is None:
            raise TransportError(f"channel {self.name!r}: release_buffer({slot_id}) of a message not held")

    def close(self) -> None:
        """Let go of the queue."""
        self._held.clear()


class MpQueueSender:
    """The put side of the queue."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        self.spec = spec
        self.name = endpoint
        self._q = _lookup(endpoint)
        self.drops = 0

    def ready_to_send(self) -> bool:
        """True when the queue is not full (approximate)."""
        return not self._q.full()

    def put(self, data: Buffer, timeout: float | None = None) -> bool:
        """Queue one message (pickled); False when dropped or full for ``timeout``."""
        if len(data) > self.spec.max_message:
            raise MessageTooLargeError(f"channel {self.name!r}: message of {len(data)} bytes exceeds "
                                       f"max_message={self.spec.max_message}")
        try:
            if self.spec.on_full == "drop":
                self._q.put_nowait(bytes(data))
            else:
                self._q.put(bytes(data), timeout=timeout)
        except queue_mod.Full:
            self.drops += self.spec.on_full == "drop"
            return False
        return True

    def close(self) -> None:
        """Flush the feeder thread."""
        self._q.close()
        self._q.join_thread()
