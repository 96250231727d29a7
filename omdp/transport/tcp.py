"""The ``tcp`` transport from Python: the five calls over a TCP stream (C: tcp_channel.h).

The endpoint is ``host:port``. The receiver listens there (port 0 picks a free port; the
receiver's ``endpoint`` says which) and the sender connects. Payloads land in
receiver-owned slots; ``get`` lends a read-only view until ``release_buffer``.
"""
from __future__ import annotations

import mmap
from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.transport.api import Buffer
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import ON_FULL_CODES, WAIT_CODES, WAIT_SLICE_NS
from omdp.transport.vega_status import PEER_STATES, raise_for, timeout_ns


def parse_endpoint(endpoint: str) -> tuple[str, int]:
    """``host:port`` -> (host, port); raises ValueError naming what is wrong."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"tcp endpoint {endpoint!r}: expected host:port with a port 0-65535")
    return host or "127.0.0.1", int(port)


def _stats(st: Any) -> dict[str, int | str]:
    return {"messages": st.messages, "bytes": st.bytes, "full_events": st.full_events, "spins": st.spins,
            "drops": st.drops, "errors": st.errors, "peer_state": PEER_STATES.get(st.peer_state, "unknown")}


class TcpReceiver:
    """The receiving end of a ``tcp`` channel."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        host, port = parse_endpoint(endpoint)
        out = ffi.new("omdp_tcp_receiver_t **")
        # the slots live in a mapping Python owns: views lent by get outlive close safely
        self._slot_size = int(lib.omdp_tcp_slot_size(spec.max_message))
        self._mm = mmap.mmap(-1, spec.queue_size * self._slot_size)
        self._mv = memoryview(self._mm).toreadonly()
        rc = lib.omdp_tcp_receiver_listen(host.encode(), port, spec.queue_size, spec.max_message,
                                          WAIT_CODES[spec.wait], ffi.from_buffer(self._mm), out)
        if rc:
            raise_for(rc, endpoint, "listen")
        self.spec = spec
        self._rx = out[0]
        self.endpoint = f"{host}:{lib.omdp_tcp_receiver_port(self._rx)}"
        self.name = self.endpoint
        self._msg = ffi.new("omdp_vega_msg_t *")
        self._st = ffi.new("omdp_tcp_stats_t *")

    def accept(self, timeout: float | None = None) -> bool:
        """Wait for the sender to connect (get and available also accept, lazily)."""
        return lib.omdp_tcp_receiver_accept(self._rx, timeout_ns(timeout)) == 0

    def available(self) -> bool:
        """True when get would return a message at once."""
        return bool(lib.omdp_tcp_available(self._rx))

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message as ``(slot_id, view)``; None after ``timeout`` seconds."""
        if timeout is None:
            while (rc := lib.omdp_tcp_get(self._rx, self._msg, WAIT_SLICE_NS)) == lib.OMDP_VEGA_TIMEOUT:
                pass
        else:
            rc = lib.omdp_tcp_get(self._rx, self._msg, timeout_ns(timeout))
        if rc == 0:
            off = self._msg.slot_id * self._slot_size
            return self._msg.slot_id, self._mv[off:off + self._msg.size]
        if rc > 0:
            return None
        raise_for(rc, self.name, "get")

    def release_buffer(self, slot_id: int) -> None:
        """Give the slot back (the next frames may land in it)."""
        rc = lib.omdp_tcp_release(self._rx, slot_id)
        if rc:
            raise_for(rc, self.name, f"release_buffer({slot_id})")

    @property
    def c_handle(self) -> Any:
        """The C end (``omdp_tcp_receiver_t *``) for C loops (a native partition polls it)."""
        return self._rx

    def counters(self) -> dict[str, int | str]:
        """Messages, bytes, spins, errors and the sender's state as last seen."""
        lib.omdp_tcp_receiver_stats(self._rx, self._st)
        return _stats(self._st)

    def close(self) -> None:
        """Stop listening and drop the connection."""
        if self._rx is not None:
            lib.omdp_tcp_receiver_close(self._rx)
            self._rx = None

    def __enter__(self) -> TcpReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TcpSender:
    """The sending end of a ``tcp`` channel (TCP_NODELAY; back-pressure is the window)."""

    def __init__(self, spec: ChannelSpec, endpoint: str, connect_timeout: float = 10.0) -> None:
        host, port = parse_endpoint(endpoint)
        out = ffi.new("omdp_tcp_sender_t **")
        rc = lib.omdp_tcp_sender_connect(host.encode(), port, spec.queue_size, spec.max_message, int(spec.mutex),
                                         ON_FULL_CODES[spec.on_full], timeout_ns(connect_timeout), out)
        if rc == lib.OMDP_VEGA_E_LAYOUT:
            raise_for(lib.OMDP_VEGA_E_BAD_SPEC, endpoint,
                      "connect: the receiver refused the hello (queue_size/max_message differ from its spec)")
        if rc:
            raise_for(rc, endpoint, "connect")
        self.spec = spec
        self.name = endpoint
        self._tx = out[0]
        self._st = ffi.new("omdp_tcp_stats_t *")

    def ready_to_send(self) -> bool:
        """True when the socket takes more bytes now."""
        return bool(lib.omdp_tcp_ready_to_send(self._tx))

    def put(self, data: Buffer, timeout: float | None = None) -> bool:
        """Send one message; False when dropped or the socket stayed full for ``timeout``."""
        # bytes go to C as they are; other buffers through a cffi view
        buf = data if data.__class__ is bytes else ffi.from_buffer(data)
        rc = lib.omdp_tcp_put(self._tx, buf, len(buf), -1 if timeout is None else timeout_ns(timeout))
        if rc == 0:
            return True
        if rc > 0:
            return False
        raise_for(rc, self.name, "put", self.spec.max_message, len(buf))

    def put_batch(self, data: Buffer | np.ndarray, sizes: np.ndarray, timeout: float | None = None) -> int:
        """Send ``len(sizes)`` messages laid back to back in ``data`` in as few writes as fit."""
        sizes = np.ascontiguousarray(sizes, dtype=np.uint32)
        buf = ffi.from_buffer(data)
        if int(sizes.sum(dtype=np.uint64)) > len(buf):
            raise ValueError(f"put_batch: sizes add up to {int(sizes.sum())} bytes, data holds {len(buf)}")
        rc = lib.omdp_tcp_put_batch(self._tx, buf, ffi.from_buffer("uint32_t[]", sizes), len(sizes),
                                    -1 if timeout is None else timeout_ns(timeout))
        if rc < 0:
            raise_for(rc, self.name, "put_batch", self.spec.max_message, int(sizes.max(initial=0)))
        return int(rc)

    @property
    def c_handle(self) -> Any:
        """The C end (``omdp_tcp_sender_t *``) for C loops (a native partition writes to it)."""
        return self._tx

    def counters(self) -> dict[str, int | str]:
        """Messages, bytes, full events, drops and the receiver's state as last seen."""
        lib.omdp_tcp_sender_stats(self._tx, self._st)
        return _stats(self._st)

    def close(self) -> None:
        """Say goodbye and close the stream."""
        if self._tx is not None:
            lib.omdp_tcp_sender_close(self._tx)
            self._tx = None

    def __enter__(self) -> TcpSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
