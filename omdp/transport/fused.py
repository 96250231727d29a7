"""The ``fused`` medium as a channel: both ends of a Vega ring in this process's memory.

A fused edge inside one partition is normally a direct ``emit`` call (no channel at all);
this gives code that wants the five calls between threads of one process the same ring
and the same calls, without shared memory or pid checks. Endpoints are names in a
process-wide table: ``open_receiver`` makes the pair, ``open_sender`` picks its sender up.
"""
from __future__ import annotations

import threading
import time

from omdp.transport.api import ChannelExistsError, ChannelNotFoundError
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver, VegaSender, vega_local_pair

_waiting_senders: dict[str, VegaSender] = {}
_lock = threading.Lock()


def open_fused_receiver(spec: ChannelSpec, endpoint: str) -> VegaReceiver:
    """Make the in-process ring ``endpoint``; its sender waits for ``open_fused_sender``."""
    with _lock:
        if endpoint in _waiting_senders:
            raise ChannelExistsError(f"fused channel {endpoint!r} already exists in this process")
        tx, rx = vega_local_pair(spec, endpoint)
        _waiting_senders[endpoint] = tx
    return rx


def open_fused_sender(spec: ChannelSpec, endpoint: str, connect_timeout: float = 10.0) -> VegaSender:
    """The sender of the in-process ring ``endpoint`` (made by its receiver)."""
    deadline = time.monotonic() + connect_timeout
    while True:
        with _lock:
            tx = _waiting_senders.pop(endpoint, None)
        if tx is not None:
            if tx.spec != spec:
                _waiting_senders[endpoint] = tx
                raise ValueError(f"fused channel {endpoint!r}: sender spec {spec} differs from the receiver's {tx.spec}")
            return tx
        if time.monotonic() >= deadline:
            raise ChannelNotFoundError(f"fused channel {endpoint!r}: no receiver in this process")
        time.sleep(0.001)
