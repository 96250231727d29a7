"""The ``vega-ib`` transport from Python: the Vega ring mirrored with RDMA WRITEs.

Endpoint: ``HOST:PORT[@DEVICE[:PORT[:GID_INDEX]]]``. ``HOST:PORT`` is the receiver's
bootstrap listener (port 0 picks one; ``receiver.endpoint`` says which); the part after
``@`` chooses this side's InfiniBand device, port and GID index (default: the first device
with an active port 1, GID index 0; RoCE usually wants the index of a RoCE v2 GID).

Control path (Python, pyverbs: ``ib_verbs``): device, port state, PD, registration of each
side's copy of the region for remote writes; the bootstrap (``ib_bootstrap``) carries QP
number, PSN, LID/GID, rkey, address and the ring's layout. Data path (C: vega_ib.h): one
RDMA WRITE per put, signaled every ``signal_every``; the receiver polls its memory; a
release writes the credit back. The ends are ``VegaSender`` / ``VegaReceiver`` with the
same calls as vega-shm. pyverbs is imported only here, only when a vega-ib end is opened.

Errors name the device or the peer: ``IbUnavailableError`` ("No IB devices found", a
missing device, a port that is not ACTIVE, pyverbs or the C path missing),
``ChannelNotFoundError`` when no receiver answers at the endpoint in time, and
``PeerDeadError`` when a write completes in error (the peer's process or port is gone).
"""
from __future__ import annotations

import logging
import mmap
import socket
import threading
import time
from typing import Any

from omdp.native import ffi, lib
from omdp.transport.api import ChannelNotFoundError, PeerGoneError, TransportError
from omdp.transport.ib_bootstrap import (
    BootstrapError,
    check_hello,
    check_side,
    hello,
    recv_line,
    send_line,
    side_message,
)
from omdp.transport.ib_verbs import NO_IB_BUILD, IbDeviceChoice, IbRegion, IbUnavailableError, ib_unavailable
from omdp.transport.spec import ChannelSpec
from omdp.transport.tcp import parse_endpoint
from omdp.transport.vega import VegaBatch, VegaReceiver, VegaSender, c_knobs
from omdp.transport.vega_status import PEER_STATES

__all__ = ["IbUnavailableError", "VegaIbReceiver", "VegaIbSender", "ib_unavailable", "parse_ib_endpoint"]

log = logging.getLogger("omdp.vega_ib")
SETUP_TIMEOUT_S = 10.0
"""Each bootstrap step after the connection is made."""


def parse_ib_endpoint(endpoint: str) -> tuple[str, int, IbDeviceChoice]:
    """``HOST:PORT[@DEVICE[:PORT[:GID_INDEX]]]`` -> (host, port, device choice)."""
    address, _, device = endpoint.partition("@")
    try:
        host, port = parse_endpoint(address)
    except ValueError:
        raise ValueError(f"vega-ib endpoint {endpoint!r}: expected HOST:PORT[@DEVICE[:PORT[:GID_INDEX]]]") from None
    return host, port, IbDeviceChoice.parse(device or None)


def _require_build() -> None:
    if not hasattr(lib, "omdp_vib_open"):
        raise IbUnavailableError(NO_IB_BUILD)


def _knobs(spec: ChannelSpec) -> dict[str, Any]:
    return {"queue_size": spec.queue_size, "max_message": spec.max_message, "mutex": spec.mutex, "wait": spec.wait,
            "on_full": spec.on_full, "signal_every": spec.signal_every}


def _c_knobs(spec: ChannelSpec) -> tuple[int, ...]:
    return (*c_knobs(spec), spec.signal_every)


def _region(spec: ChannelSpec) -> tuple[mmap.mmap, int, int]:
    size = int(lib.omdp_vega_region_size(spec.queue_size, spec.max_message))
    mm = mmap.mmap(-1, size)
    return mm, size, int(ffi.cast("uintptr_t", ffi.from_buffer(mm)))


def _c_error(err: Any) -> str:
    return ffi.string(err).decode(errors="replace")


def _remote(side: dict[str, Any], ib: IbRegion) -> Any:
    """The C view of the peer's side, with the path settings both sides agree on."""
    if side["ethernet"] != ib.facts.ethernet:
        raise BootstrapError(f"vega-ib: link layers differ (this side {'RoCE' if ib.facts.ethernet else 'IB'}, "
                             f"the peer {'RoCE' if side['ethernet'] else 'IB'})")
    r = ffi.new("omdp_vib_remote_t *")
    r.qp_num, r.psn, r.lid, r.rkey, r.addr = side["qp_num"], side["psn"], side["lid"], side["rkey"], side["addr"]
    r.gid = list(bytes.fromhex(side["gid"]))
    r.use_gid = int(ib.facts.ethernet)
    r.sgid_index = ib.facts.gid_index
    r.mtu = min(side["mtu"], ib.facts.mtu)
    return r


def _own_side(link: Any, ib: IbRegion, address: int) -> dict[str, Any]:
    f = ib.facts
    return side_message(int(lib.omdp_vib_qp_num(link)), int(lib.omdp_vib_psn(link)), f.lid, f.gid, ib.rkey, address,
                        f.mtu, f.ethernet)


def link_counters(link: Any) -> dict[str, int | str]:
    """Writes posted (inline, signaled), completions, send-queue waits, drops, peer state."""
    st = ffi.new("omdp_vib_stats_t *")
    lib.omdp_vib_stats(link, st)
    return {"writes": st.writes, "bytes": st.bytes, "inline_writes": st.inline_writes, "signaled": st.signaled,
            "completions": st.completions, "sq_full_waits": st.sq_full_waits, "dropped": st.dropped,
            "peer_state": PEER_STATES.get(st.peer_state, "unknown"), "broken": bool(st.broken)}


def _with_link_error(e: PeerGoneError, link: Any) -> PeerGoneError:
    text = _c_error(lib.omdp_vib_error(link)) if link is not None else ""
    return type(e)(f"{e} ({text})") if text else e


def _open_link(role: int, spec: ChannelSpec, ib: IbRegion, base: Any, size: int, layout: Any) -> Any:
    out = ffi.new("omdp_vib_t **")
    err = ffi.new("char[]", lib.OMDP_VIB_ERR_LEN)
    rc = lib.omdp_vib_open(role, ib.context_ptr, ib.pd_ptr, ib.facts.port, base, size, ib.lkey, *_c_knobs(spec),
                           layout, out, err, lib.OMDP_VIB_ERR_LEN)
    if rc:
        raise TransportError(f"vega-ib on {ib.facts.device} port {ib.facts.port}: {_c_error(err)}")
    return out[0]


def _connect_link(link: Any, side: dict[str, Any], ib: IbRegion, peer: str) -> None:
    err = ffi.new("char[]", lib.OMDP_VIB_ERR_LEN)
    if lib.omdp_vib_connect(link, _remote(side, ib), err, lib.OMDP_VIB_ERR_LEN):
        raise TransportError(f"vega-ib to {peer}: {_c_error(err)}")


class VegaIbReceiver(VegaReceiver):
    """The receiving end of a ``vega-ib`` channel: the real ring, written by the peer's HCA."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        host, port, choice = parse_ib_endpoint(endpoint)
        _require_build()
        mm, size, address = _region(spec)
        self._ib = IbRegion(choice, address, size)
        self._link: Any = None
        self._listener: socket.socket | None = None
        try:
            self._link = _open_link(lib.OMDP_VEGA_MIRROR_RECEIVER, spec, self._ib, ffi.from_buffer(mm), size, ffi.NULL)
            self._listener = socket.create_server((host, port))
        except BaseException:
            self._release()
            raise
        self.endpoint = f"{host}:{self._listener.getsockname()[1]}"
        self._address = address
        self._stopping = threading.Event()
        self.setup_error: str | None = None
        super().__init__(spec, self.endpoint, mm, lib.omdp_vib_receiver(self._link))
        self._accepter = threading.Thread(target=self._accept, name=f"vega-ib setup {self.endpoint}", daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        """Take the first sender whose setup succeeds (a bad one is logged and dropped)."""
        assert self._listener is not None
        self._listener.settimeout(0.2)
        while not self._stopping.is_set():
            try:
                conn, addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            peer = f"{addr[0]}:{addr[1]}"
            try:
                self._setup(conn, peer)
            except (TransportError, OSError) as e:
                self.setup_error = str(e)
                log.error("vega-ib receiver %s: setup with %s failed: %s", self.endpoint, peer, e)
                conn.close()
                continue
            self._listener.close()
            return

    def _setup(self, conn: socket.socket, peer: str) -> None:
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        buf = bytearray()
        knobs = _knobs(self.spec)
        why = check_hello(recv_line(conn, peer, deadline, buf), knobs, peer)
        if why:
            send_line(conn, {"verdict": False, "why": why})
            raise BootstrapError(f"vega-ib peer {peer}: {why}")
        layout = bytes(self._mm[: ffi.sizeof("omdp_vega_layout_t")])
        send_line(conn, {"verdict": True, "layout": layout.hex(), "side": _own_side(self._link, self._ib, self._address)})
        side = check_side(recv_line(conn, peer, deadline, buf).get("side"), peer)
        _connect_link(self._link, side, self._ib, peer)
        send_line(conn, {"ready": True})
        lib.omdp_vib_watch(self._link, conn.detach())

    def accept(self, timeout: float | None = None) -> bool:
        """Wait until a sender's setup is done."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.peer_state() == "absent":
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.001)
        return True

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message as ``(slot_id, view)`` (see ``VegaReceiver.get``)."""
        try:
            return super().get(timeout)
        except PeerGoneError as e:
            raise _with_link_error(e, self._link) from None

    def get_batch(self, max_count: int | None = None, timeout: float | None = 0) -> VegaBatch | None:
        """Up to ``max_count`` messages in consecutive slots (see ``VegaReceiver.get_batch``)."""
        try:
            return super().get_batch(max_count, timeout)
        except PeerGoneError as e:
            raise _with_link_error(e, self._link) from None

    def link_counters(self) -> dict[str, int | str]:
        """The credit writes this side posted, and the sender's state."""
        return link_counters(self._link)

    @property
    def c_link(self) -> Any:
        """The ``omdp_vib_t *`` (a native partition binds it with omdp_chan_vib_in_ops)."""
        return self._link

    def _release(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._link is not None:
            lib.omdp_vib_close(self._link)
            self._link = None
        self._ib.close()

    def close(self) -> None:
        """Stop the setup listener, say goodbye, destroy the QP, deregister, close."""
        if getattr(self, "_accepter", None) is not None:
            self._stopping.set()
            if self._listener is not None:
                self._listener.close()
            self._accepter.join(SETUP_TIMEOUT_S)
            self._accepter = None
        if self._link is not None:
            self._rx = None
            self._release()


class VegaIbSender(VegaSender):
    """The sending end of a ``vega-ib`` channel: builds slots in its copy, one RDMA WRITE each."""

    def __init__(self, spec: ChannelSpec, endpoint: str, connect_timeout: float = 10.0) -> None:
        host, port, choice = parse_ib_endpoint(endpoint)
        _require_build()
        if port == 0:
            raise ValueError(f"vega-ib endpoint {endpoint!r}: a sender needs the receiver's port")
        peer = f"{host}:{port}"
        sock = _connect(host, port, connect_timeout)
        self._link: Any = None
        self._ib: IbRegion | None = None
        try:
            deadline = time.monotonic() + SETUP_TIMEOUT_S
            buf = bytearray()
            send_line(sock, hello(_knobs(spec)))
            welcome = recv_line(sock, peer, deadline, buf)
            if welcome.get("verdict") is not True:
                raise TransportError(f"vega-ib receiver {peer} refused this sender: {welcome.get('why', welcome)}")
            side = check_side(welcome.get("side"), peer)
            try:
                layout = bytes.fromhex(str(welcome.get("layout", "")))
            except ValueError:
                layout = b""
            if len(layout) != ffi.sizeof("omdp_vega_layout_t"):
                raise BootstrapError(f"vega-ib peer {peer}: layout is not {ffi.sizeof('omdp_vega_layout_t')} bytes")
            mm, size, address = _region(spec)
            self._ib = IbRegion(choice, address, size)
            self._link = _open_link(lib.OMDP_VEGA_MIRROR_SENDER, spec, self._ib, ffi.from_buffer(mm), size,
                                    ffi.from_buffer(layout))
            _connect_link(self._link, side, self._ib, peer)
            send_line(sock, {"side": _own_side(self._link, self._ib, address)})
            if recv_line(sock, peer, deadline, buf).get("ready") is not True:
                raise BootstrapError(f"vega-ib peer {peer}: no ready after setup")
            lib.omdp_vib_watch(self._link, sock.detach())
        except BaseException:
            sock.close()
            self._release()
            raise
        super().__init__(spec, peer, mm, lib.omdp_vib_sender(self._link))

    def put(self, data: Any, timeout: float | None = None) -> bool:
        """Copy one message into the ring and write it to the receiver (see ``VegaSender.put``)."""
        try:
            return super().put(data, timeout)
        except PeerGoneError as e:
            raise _with_link_error(e, self._link) from None

    def link_counters(self) -> dict[str, int | str]:
        """Writes posted (inline, signaled), completions, drops, the receiver's state."""
        return link_counters(self._link)

    @property
    def c_link(self) -> Any:
        """The ``omdp_vib_t *`` (a native partition binds it with omdp_chan_vib_out_ops)."""
        return self._link

    def _release(self) -> None:
        if self._link is not None:
            lib.omdp_vib_close(self._link)
            self._link = None
        if self._ib is not None:
            self._ib.close()
            self._ib = None

    def close(self) -> None:
        """Flush the writes in flight, say goodbye, destroy the QP, deregister, close."""
        if self._link is not None:
            self._tx = None
            self._release()


def _connect(host: str, port: int, timeout: float) -> socket.socket:
    """The bootstrap connection, retried until ``timeout`` while nobody listens."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.create_connection((host, port), timeout=max(0.1, min(2.0, deadline - time.monotonic())))
        except OSError as e:
            if time.monotonic() >= deadline:
                raise ChannelNotFoundError(f"vega-ib receiver {host}:{port} unreachable within {timeout:g} s "
                                           f"({e.strerror or e})") from None
            time.sleep(0.05)
