"""The ``mpi`` transport from Python: Vega's five calls over MPI messages (C: channel_mpi.h).

Both ends are ranks of one MPI job (``mpiexec``; docs/mpi.md). The endpoint names the
other end and the channel: ``PEER_RANK:CHANNEL`` (the receiver names its sender's rank, the
sender its receiver's; the channel number is the same on both sides and unique in the job).
MPI is initialised by ``mpi_init`` (explicitly, or on the first end opened), never at
import, so a process may fork before it. The receiver posts a receive into each of its
``queue_size`` slots and greets the sender; ``get`` lends a read-only view until
``release_buffer``, which returns the credit.

Where this build of omdp has no MPI part, or the process cannot start MPI, opening an end
raises ``MpiUnavailableError`` saying why (``mpi_unavailable()`` tells without raising).
"""
from __future__ import annotations

import mmap
import time
from typing import Any

from omdp.native import lib as vlib
from omdp.native_mpi import built, mpi_native
from omdp.transport.api import Buffer, ChannelNotFoundError, TransportError
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import ON_FULL_CODES, WAIT_CODES, WAIT_SLICE_NS
from omdp.transport.vega_status import PEER_STATES, raise_for, timeout_ns

HAVE_MPI_BUILD = built()
NO_MPI_BUILD = ("this build of omdp has no MPI module (no MPI was found when it was built): "
                "pip install '.[mpi]', then rebuild omdp with the MPI present: pip install --no-deps --force-reinstall .")


class MpiUnavailableError(TransportError):
    """The ``mpi`` transport cannot run here: no MPI part in this build, or MPI does not start."""


class MpiError(TransportError):
    """An MPI call failed (the message carries MPI's own text)."""


_job: tuple[int, int, int] | None = None
ffi: Any = None
lib: Any = None
"""omdp._native_mpi's, set by mpi_init (every end opens through it): loading the module
loads the MPI libraries, which only a process that uses MPI should."""


def mpi_unavailable() -> str | None:
    """Why this build cannot carry ``mpi`` channels, or None."""
    return None if HAVE_MPI_BUILD else NO_MPI_BUILD


def mpi_init() -> tuple[int, int]:
    """Start MPI in this process (once; MPI_THREAD_MULTIPLE asked): (rank, size)."""
    global _job, ffi, lib
    if not HAVE_MPI_BUILD:
        raise MpiUnavailableError(NO_MPI_BUILD)
    if lib is None:
        try:
            ffi, lib = mpi_native()
        except ImportError as e:
            raise MpiUnavailableError(f"omdp's MPI module does not load: {e}") from e
    if _job is None:
        rank, size, level = ffi.new("int *"), ffi.new("int *"), ffi.new("int *")
        rc = lib.omdp_mpi_init(rank, size, level)
        if rc:
            raise MpiUnavailableError(f"MPI did not start: {ffi.string(lib.omdp_mpi_init_error()).decode()}")
        _job = (int(rank[0]), int(size[0]), int(level[0]))
    return _job[0], _job[1]


def mpi_finalize() -> None:
    """End MPI in this process (after every end closed); MPI cannot start again after it."""
    if HAVE_MPI_BUILD and _job is not None:
        rc = lib.omdp_mpi_finalize()
        if rc:
            raise MpiError(ffi.string(lib.omdp_mpi_init_error()).decode())


def parse_mpi_endpoint(endpoint: str) -> tuple[int, int]:
    """``PEER_RANK:CHANNEL`` -> (rank, channel); ValueError naming what is wrong."""
    rank, sep, channel = endpoint.partition(":")
    if not sep or not rank.isdigit() or not channel.isdigit():
        raise ValueError(f"mpi endpoint {endpoint!r}: expected PEER_RANK:CHANNEL (two non-negative integers)")
    return int(rank), int(channel)


def _check_peer(endpoint: str) -> tuple[int, int]:
    peer, channel = parse_mpi_endpoint(endpoint)
    rank, size = mpi_init()
    if peer >= size or peer == rank:
        raise ValueError(f"mpi endpoint {endpoint!r}: rank {peer} is not another rank of this job "
                         f"(this is rank {rank} of {size})")
    if channel > int(lib.omdp_mpi_max_channel()):
        raise ValueError(f"mpi endpoint {endpoint!r}: channel {channel} is over this MPI's limit "
                         f"{int(lib.omdp_mpi_max_channel())}")
    return peer, channel


def _raise(rc: int, name: str, action: str, err: Any, max_message: int | None = None, size: int | None = None) -> None:
    if rc == lib.OMDP_MPI_E_MPI:
        raise MpiError(f"channel {name!r}: {action}: {ffi.string(err).decode(errors='replace')}")
    if rc == lib.OMDP_MPI_E_NO_INIT:
        raise MpiUnavailableError(f"channel {name!r}: {action}: MPI is not initialised in this process")
    if rc == vlib.OMDP_VEGA_E_LAYOUT:
        raise TransportError(f"channel {name!r}: {action}: {ffi.string(err).decode(errors='replace')}")
    if rc == vlib.OMDP_VEGA_E_PEER_DEAD and ffi.string(err):
        from omdp.transport.api import PeerDeadError

        raise PeerDeadError(f"channel {name!r}: {action}: the peer rank died "
                            f"({ffi.string(err).decode(errors='replace')})")
    raise_for(rc, name, action, max_message, size)


def _stats(st: Any) -> dict[str, int | str]:
    return {"messages": st.messages, "bytes": st.bytes, "full_events": st.full_events, "spins": st.spins,
            "drops": st.drops, "errors": st.errors, "credits": st.credits,
            "peer_state": PEER_STATES.get(st.peer_state, "unknown")}


class MpiReceiver:
    """The receiving end of an ``mpi`` channel."""

    def __init__(self, spec: ChannelSpec, endpoint: str) -> None:
        peer, channel = _check_peer(endpoint)
        # the slots live in a mapping Python owns: views lent by get outlive close safely
        self._slot_size = int(lib.omdp_mpi_slot_size(spec.max_message))
        self._mm = mmap.mmap(-1, spec.queue_size * self._slot_size)
        self._mv = memoryview(self._mm).toreadonly()
        out = ffi.new("omdp_mpi_receiver_t **")
        rc = lib.omdp_mpi_receiver_open(peer, channel, spec.queue_size, spec.max_message, WAIT_CODES[spec.wait],
                                        ffi.from_buffer(self._mm), out)
        self.spec = spec
        self.endpoint = endpoint
        self.name = f"mpi:{endpoint}"
        if rc:
            _raise(rc, self.name, "open", ffi.new("char[]", b"MPI_Irecv failed"))
        self._rx = out[0]
        self._msg = ffi.new("omdp_vega_msg_t *")
        self._st = ffi.new("omdp_mpi_stats_t *")

    def available(self) -> bool:
        """True when get would return a message at once."""
        return bool(lib.omdp_mpi_available(self._rx))

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message as ``(slot_id, view)``; None after ``timeout`` seconds or once
        ``stop`` was called."""
        if timeout is None:
            # slices, so Ctrl-C reaches Python between them
            while (rc := lib.omdp_mpi_get(self._rx, self._msg, WAIT_SLICE_NS)) == vlib.OMDP_VEGA_TIMEOUT:
                pass
        else:
            rc = lib.omdp_mpi_get(self._rx, self._msg, timeout_ns(timeout))
        if rc == 0:
            off = self._msg.slot_id * self._slot_size
            return self._msg.slot_id, self._mv[off:off + self._msg.size]
        if rc > 0:
            return None
        _raise(rc, self.name, "get", lib.omdp_mpi_receiver_error(self._rx))

    def release_buffer(self, slot_id: int) -> None:
        """Give the slot back: its receive is posted again and the sender gets the credit."""
        rc = lib.omdp_mpi_release(self._rx, slot_id)
        if rc:
            _raise(rc, self.name, f"release_buffer({slot_id})", lib.omdp_mpi_receiver_error(self._rx))

    def stop(self) -> None:
        """Make a get that waits (now or later) return None; any thread may call it."""
        lib.omdp_mpi_receiver_stop(self._rx)

    @property
    def c_handle(self) -> Any:
        """The C end (``omdp_mpi_receiver_t *``) for C loops (a native partition polls it)."""
        return self._rx

    def counters(self) -> dict[str, int | str]:
        """Messages, bytes, spins, errors, credit messages sent and the sender's state."""
        lib.omdp_mpi_receiver_stats(self._rx, self._st)
        return _stats(self._st)

    def close(self) -> None:
        """Tell the sender, cancel the posted receives."""
        if self._rx is not None:
            lib.omdp_mpi_receiver_close(self._rx)
            self._rx = None

    def __enter__(self) -> MpiReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MpiSender:
    """The sending end of an ``mpi`` channel: sends only while it holds the receiver's credit."""

    def __init__(self, spec: ChannelSpec, endpoint: str, connect_timeout: float = 10.0) -> None:
        peer, channel = _check_peer(endpoint)
        out = ffi.new("omdp_mpi_sender_t **")
        rc = lib.omdp_mpi_sender_open(peer, channel, spec.queue_size, spec.max_message, int(spec.mutex),
                                      WAIT_CODES[spec.wait], ON_FULL_CODES[spec.on_full], out)
        self.spec = spec
        self.endpoint = endpoint
        self.name = f"mpi:{endpoint}"
        if rc:
            _raise(rc, self.name, "open", ffi.new("char[]", b"MPI_Irecv failed"))
        self._tx = out[0]
        self._st = ffi.new("omdp_mpi_stats_t *")
        # the receiver greets once its receives are posted: wait for that, as other media wait to connect
        deadline = time.monotonic() + connect_timeout
        while not lib.omdp_mpi_ready_to_send(self._tx):
            if lib.omdp_mpi_sender_error(self._tx)[0] != b"\0" or time.monotonic() > deadline:
                why = ffi.string(lib.omdp_mpi_sender_error(self._tx)).decode(errors="replace")
                self.close()
                if why:
                    raise TransportError(f"channel {self.name!r}: connect: {why}")
                raise ChannelNotFoundError(f"channel {self.name!r}: no receiver greeted within {connect_timeout:g} s "
                                           f"(is rank {peer} running channel {channel}?)")
            time.sleep(0.0002)

    def ready_to_send(self) -> bool:
        """True when a credit is held (the receiver greeted us and has a free slot)."""
        return bool(lib.omdp_mpi_ready_to_send(self._tx))

    def put(self, data: Buffer, timeout: float | None = None) -> bool:
        """Send one message; False when dropped (on_full=drop), after ``timeout``, or once
        ``stop`` was called."""
        buf = data if data.__class__ is bytes else ffi.from_buffer(data)
        if timeout is None:
            while (rc := lib.omdp_mpi_put(self._tx, buf, len(buf), WAIT_SLICE_NS)) == vlib.OMDP_VEGA_TIMEOUT:
                pass
        else:
            rc = lib.omdp_mpi_put(self._tx, buf, len(buf), timeout_ns(timeout))
        if rc == 0:
            return True
        if rc > 0:
            return False
        _raise(rc, self.name, "put", lib.omdp_mpi_sender_error(self._tx), self.spec.max_message, len(buf))
        return False

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the receiver released everything sent; False after ``timeout``."""
        rc = lib.omdp_mpi_flush(self._tx, timeout_ns(timeout))
        if rc < 0:
            _raise(rc, self.name, "flush", lib.omdp_mpi_sender_error(self._tx))
        return rc == 0

    def stop(self) -> None:
        """Make a put that waits for a credit (now or later) return False; any thread may call it."""
        lib.omdp_mpi_sender_stop(self._tx)

    @property
    def c_handle(self) -> Any:
        """The C end (``omdp_mpi_sender_t *``) for C loops (a native partition writes to it)."""
        return self._tx

    def counters(self) -> dict[str, int | str]:
        """Messages, bytes, full events, spins, drops, credit messages taken, the receiver's state."""
        lib.omdp_mpi_sender_stats(self._tx, self._st)
        return _stats(self._st)

    def close(self) -> None:
        """Say goodbye (with the count sent) and wait, bounded, for sends in flight."""
        if self._tx is not None:
            lib.omdp_mpi_sender_close(self._tx)
            self._tx = None

    def __enter__(self) -> MpiSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
