"""The ``vega-tcp`` transport from Python: the Vega ring mirrored over TCP (vega_tcp.h).

The endpoint is ``host:port``: the receiver listens there (port 0 picks a free port; its
``endpoint`` says which) and the sender connects. Each side holds its own copy of the ring
in memory Python owns, and runs the same calls as vega-shm (``VegaSender`` /
``VegaReceiver``: put, put_batch, claim/commit, get, get_batch, release); the C link ships
every slot and credit to the peer's copy, where a thread applies it. A dead peer ends
waits with ``PeerDeadError``, one that closed in order with ``PeerClosedError``.
"""
from __future__ import annotations

import mmap
from typing import Any

from omdp.native import ffi, lib
from omdp.transport.api import PeerGoneError, TransportError
from omdp.transport.spec import ChannelSpec
from omdp.transport.tcp import parse_endpoint
from omdp.transport.vega import VegaBatch, VegaReceiver, VegaSender, c_knobs
from omdp.transport.vega_status import PEER_STATES, raise_for, timeout_ns


def _region(spec: ChannelSpec) -> tuple[mmap.mmap, int]:
    """Zeroed, page-aligned memory for one copy of the ring, owned by Python."""
    size = int(lib.omdp_vega_region_size(spec.queue_size, spec.max_message))
    return mmap.mmap(-1, size), size


def link_counters(link: Any) -> dict[str, int | str]:
    """Records sent to and applied from the peer, dropped writes, stream errors, peer state."""
    st = ffi.new("omdp_vtcp_stats_t *")
    lib.omdp_vtcp_stats(link, st)
    return {"writes_out": st.writes_out, "bytes_out": st.bytes_out, "writes_in": st.writes_in,
            "bytes_in": st.bytes_in, "dropped_out": st.dropped_out, "stream_errors": st.stream_errors,
            "peer_state": PEER_STATES.get(st.peer_state, "unknown"), "connected": bool(st.connected)}


def _with_stream_error(e: PeerGoneError, link: Any) -> PeerGoneError:
    text = ffi.string(lib.omdp_vtcp_error(link)).decode() if link is not None else ""
    return type(e)(f"{e} (stream error: {text})") if text else e


class _Linked:
    """What both ends of a vega-tcp channel add to their ring end: the TCP link."""

    _link: Any

    def link_counters(self) -> dict[str, int | str]:
        """The link's counters (records in and out, stream errors, the peer's state)."""
        return link_counters(self._link)

    @property
    def c_link(self) -> Any:
        """The ``omdp_vtcp_t *`` (a native partition binds it with omdp_chan_vtcp_in_ops or
        omdp_chan_vtcp_out_ops)."""
        return self._link

    def _close_link(self) -> bool:
        """Say goodbye, let the link drain, close; False when already closed."""
        if self._link is None:
            return False
        lib.omdp_vtcp_close(self._link)
        self._link = None
        return True


class VegaTcpReceiver(_Linked, VegaReceiver):
    """The receiving end of a ``vega-tcp`` channel: the real ring, written by the peer."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        host, port = parse_endpoint(endpoint)
        mm, size = _region(spec)
        out = ffi.new("omdp_vtcp_t **")
        rc = lib.omdp_vtcp_receiver_listen(host.encode(), port, ffi.from_buffer(mm), size, *c_knobs(spec), out)
        if rc:
            raise_for(rc, endpoint, "listen")
        self._link = out[0]
        self.endpoint = f"{host}:{lib.omdp_vtcp_port(self._link)}"
        super().__init__(spec, self.endpoint, mm, lib.omdp_vtcp_receiver(self._link))

    def accept(self, timeout: float | None = None) -> bool:
        """Wait for the sender's handshake (get and available do not need it first)."""
        return lib.omdp_vtcp_accept(self._link, timeout_ns(timeout)) == 0

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message as ``(slot_id, view)`` (see ``VegaReceiver.get``)."""
        try:
            return super().get(timeout)
        except PeerGoneError as e:
            raise _with_stream_error(e, self._link) from None

    def get_batch(self, max_count: int | None = None, timeout: float | None = 0) -> VegaBatch | None:
        """Up to ``max_count`` messages in consecutive slots (see ``VegaReceiver.get_batch``)."""
        try:
            return super().get_batch(max_count, timeout)
        except PeerGoneError as e:
            raise _with_stream_error(e, self._link) from None

    def close(self) -> None:
        """Say goodbye, let the link drain, close; the ring's memory stays for lent views."""
        if self._close_link():
            self._rx = None


class VegaTcpSender(_Linked, VegaSender):
    """The sending end of a ``vega-tcp`` channel: builds slots in its copy, ships each."""

    def __init__(self, spec: ChannelSpec, endpoint: str, connect_timeout: float = 10.0) -> None:
        host, port = parse_endpoint(endpoint)
        mm, size = _region(spec)
        out = ffi.new("omdp_vtcp_t **")
        rc = lib.omdp_vtcp_sender_connect(host.encode(), port, ffi.from_buffer(mm), size, *c_knobs(spec),
                                          timeout_ns(connect_timeout), out)
        if rc == lib.OMDP_VEGA_E_LAYOUT:
            raise TransportError(f"channel {endpoint!r}: connect: the receiver refused the hello (queue_size, "
                                 "max_message, mutex, wait or on_full differ from its spec, or it is not a vega-tcp "
                                 "receiver)")
        if rc == lib.OMDP_VEGA_E_NOT_FOUND:
            raise_for(rc, endpoint, f"connect: nobody listened within {connect_timeout} s")
        if rc:
            raise_for(rc, endpoint, "connect")
        self._link = out[0]
        super().__init__(spec, endpoint, mm, lib.omdp_vtcp_sender(self._link))

    def put(self, data: Any, timeout: float | None = None) -> bool:
        """Copy one message into the ring and ship it (see ``VegaSender.put``)."""
        try:
            return super().put(data, timeout)
        except PeerGoneError as e:
            raise _with_stream_error(e, self._link) from None

    def close(self) -> None:
        """Say goodbye, let the link drain, close."""
        if self._close_link():
            self._tx = None
