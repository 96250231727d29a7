"""Vega from Python: the five calls over the C ring (native/include/omdp/vega.h).

``VegaReceiver.create(spec, name)`` makes a channel in POSIX shared memory and
``VegaSender.attach(spec, name)`` joins it; ``vega_local_pair(spec)`` makes both ends over
process-private memory (the ``fused`` medium). Each call crosses into C once, batch calls
once per batch. Received payloads are zero-copy, read-only views of the slot, valid until
the slot is released; they come from a mapping Python owns, so a view kept past ``close``
still points at mapped memory (never a crash).

The module-level functions are the paper's five calls by name::

    ready_to_send(tx); put(tx, data); available(rx); slot, view = get(rx); release_buffer(rx, slot)
"""
from __future__ import annotations

import errno
import mmap
import os
import stat
from abc import ABC, abstractmethod
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.transport.api import Buffer, ChannelNotFoundError, TransportError
from omdp.transport.shm_names import SHM_DIR, check_endpoint, stats_dict
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega_status import PEER_STATES, raise_for, timeout_ns

WAIT_CODES = {"spin": lib.OMDP_VEGA_WAIT_SPIN, "spin-yield": lib.OMDP_VEGA_WAIT_SPIN_YIELD,
              "spin-block": lib.OMDP_VEGA_WAIT_SPIN_BLOCK}
ON_FULL_CODES = {"block": lib.OMDP_VEGA_ON_FULL_BLOCK, "drop": lib.OMDP_VEGA_ON_FULL_DROP}
SLOT_HEADER = lib.OMDP_VEGA_SLOT_HEADER
WAIT_SLICE_NS = 100_000_000
"""Unbounded waits run in C in slices of this length so Python can see signals between."""
# The per-message calls, bound once: a cffi attribute lookup costs as much as a third of a call.
_get = lib.omdp_vega_get
_put = lib.omdp_vega_put
_release = lib.omdp_vega_release
_TIMEOUT = lib.OMDP_VEGA_TIMEOUT


def c_knobs(spec: ChannelSpec) -> tuple[int, int, int, int, int]:
    """queue_size, max_message, mutex, wait, on_full as the C calls take them."""
    return spec.queue_size, spec.max_message, int(spec.mutex), WAIT_CODES[spec.wait], ON_FULL_CODES[spec.on_full]


def _check_matches(spec: ChannelSpec, st: dict[str, int | str], name: str) -> None:
    """A sender's spec must describe the channel the receiver made."""
    wanted = {"queue_size": spec.queue_size, "max_message": spec.max_message, "mutex": int(spec.mutex),
              "wait": WAIT_CODES[spec.wait], "on_full": ON_FULL_CODES[spec.on_full]}
    for field, value in wanted.items():
        if st[field] != value:
            raise TransportError(f"channel {name!r}: sender spec {field}={getattr(spec, field)!r} differs from "
                                 f"the channel's ({st[field]!r}, as its receiver created it)")


def _map_shm(name: str, size: int, writable: bool) -> mmap.mmap:
    fd = os.open(SHM_DIR / name, (os.O_RDWR if writable else os.O_RDONLY) | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{SHM_DIR / name}: not a shared memory segment (not a regular file)")
        return mmap.mmap(fd, size, access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ)
    finally:
        os.close(fd)


class _End(ABC):
    """What both ends share: the mapping Python owns, counters, peer state."""

    def __init__(self, spec: ChannelSpec, name: str, mm: mmap.mmap) -> None:
        self.spec = spec
        self.name = name
        self._mm = mm
        self._base = ffi.from_buffer(mm)
        self._stats = ffi.new("omdp_vega_stats_t *")
        self._stride = int(lib.omdp_vega_slot_stride(spec.max_message))
        self._slots_offset = int(lib.omdp_vega_slots_offset())

    def counters(self) -> dict[str, int | str]:
        """Messages, bytes, full-ring events, spins, drops, errors and both sides' states."""
        lib.omdp_vega_stats(self._base, self._stats)
        return stats_dict(self._stats)

    def _slot_payload_offset(self, slot_id: int) -> int:
        return self._slots_offset + slot_id * self._stride + SLOT_HEADER

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Leave the channel."""


class VegaSender(_End):
    """The sending end of a Vega channel (paper: ready_to_send, put; plus claim/commit,
    batch put and put with a timeout)."""

    def __init__(self, spec: ChannelSpec, name: str, mm: mmap.mmap, tx: Any) -> None:
        super().__init__(spec, name, mm)
        self._tx = tx
        self._claim_view: memoryview | None = None
        self._mv = memoryview(mm)

    @classmethod
    def attach(cls, spec: ChannelSpec, name: str, connect_timeout: float = 10.0) -> VegaSender:
        """Join the shared-memory channel ``name`` made by its receiver, waiting for it at
        most ``connect_timeout`` seconds."""
        check_endpoint(name)
        out = ffi.new("omdp_vega_sender_t **")
        st = ffi.new("omdp_vega_stats_t *")
        deadline = time.monotonic() + connect_timeout
        while True:
            # check the spec against the channel before taking its one sender side
            rc = lib.omdp_vega_stats_shm(name.encode(), st)
            if rc == lib.OMDP_VEGA_OK:
                _check_matches(spec, stats_dict(st), name)
                rc = lib.omdp_vega_sender_attach_shm(name.encode(), out)
            if rc != lib.OMDP_VEGA_E_NOT_FOUND:
                break
            if time.monotonic() >= deadline:
                raise ChannelNotFoundError(f"channel {name!r}: no receiver made it within {connect_timeout} s")
            time.sleep(0.002)
        if rc != lib.OMDP_VEGA_OK:
            raise_for(rc, name, "attach sender")
        tx = out[0]
        try:
            mm = _map_shm(name, int(lib.omdp_vega_region_size(spec.queue_size, spec.max_message)), writable=True)
        except BaseException:
            lib.omdp_vega_sender_close(tx)
            raise
        return cls(spec, name, mm, tx)

    def ready_to_send(self) -> bool:
        """True when a slot is free, so put would not wait."""
        return bool(lib.omdp_vega_ready_to_send(self._tx))

    def put(self, data: Buffer, timeout: float | None = None) -> bool:
        """Copy one message into the ring. False when dropped (on_full=drop) or when no
        slot freed within ``timeout``; raises MessageTooLargeError, PeerGoneError."""
        # bytes go to C as they are; other buffers through a cffi view
        buf = data if data.__class__ is bytes else ffi.from_buffer(data)
        rc = _put(self._tx, buf, len(buf), -1 if timeout is None else timeout_ns(timeout))
        if rc == 0:
            return True
        if rc > 0:
            return False
        raise_for(rc, self.name, "put", self.spec.max_message, len(buf))

    def put_batch(self, data: Buffer | np.ndarray, sizes: np.ndarray, timeout: float | None = None) -> int:
        """Put ``len(sizes)`` messages laid back to back in ``data``; returns how many went
        in (the rest dropped by on_full=drop, or the wait for a slot timed out)."""
        sizes = np.ascontiguousarray(sizes, dtype=np.uint32)
        buf = ffi.from_buffer(data)
        if int(sizes.sum(dtype=np.uint64)) > len(buf):
            raise ValueError(f"put_batch: sizes add up to {int(sizes.sum())} bytes, data holds {len(buf)}")
        rc = lib.omdp_vega_put_batch(self._tx, buf, ffi.from_buffer("uint32_t[]", sizes), len(sizes),
                                     timeout_ns(timeout))
        if rc < 0:
            raise_for(rc, self.name, "put_batch", self.spec.max_message, int(sizes.max(initial=0)))
        return int(rc)

    def claim(self, timeout: float | None = 0) -> memoryview | None:
        """A writable view of the next slot's ``max_message`` payload bytes, to build a
        message in place; None when no slot is free within ``timeout`` (default: don't
        wait). Finish with ``commit(size)`` or ``abandon()``."""
        t = timeout_ns(timeout)
        ptr = lib.omdp_vega_claim(self._tx) if t == 0 else lib.omdp_vega_claim_wait(self._tx, t)
        if ptr == ffi.NULL:
            return None
        off = int(ffi.cast("uintptr_t", ptr)) - int(ffi.cast("uintptr_t", self._base))
        self._claim_view = self._mv[off:off + self.spec.max_message]
        return self._claim_view

    def commit(self, size: int) -> None:
        """Publish the claimed slot holding ``size`` payload bytes."""
        rc = lib.omdp_vega_commit(self._tx, size)
        if rc:
            raise_for(rc, self.name, "commit", self.spec.max_message, size)
        self._claim_view = None

    def abandon(self) -> None:
        """Give the claimed slot back unsent."""
        rc = lib.omdp_vega_abandon(self._tx)
        if rc:
            raise_for(rc, self.name, "abandon")
        self._claim_view = None

    def peer_state(self) -> str:
        """The receiver: attached, closed or dead."""
        return PEER_STATES[lib.omdp_vega_sender_peer(self._tx)]

    @property
    def c_handle(self) -> Any:
        """The ``omdp_vega_sender_t *`` for C loops (a native partition calls vega.h)."""
        return self._tx

    def close(self) -> None:
        """Leave the channel; the segment goes when both ends have closed."""
        if self._tx is not None:
            lib.omdp_vega_sender_close(self._tx)
            self._tx = None


@dataclass
class VegaBatch:
    """Messages in consecutive slots from one ``get_batch``: ``payloads`` is a read-only
    (count, max_message) uint8 view of the slots, row i holding ``sizes[i]`` bytes."""

    first_slot: int
    sizes: np.ndarray
    payloads: np.ndarray

    def __len__(self) -> int:
        return len(self.sizes)

    def payload(self, i: int) -> memoryview:
        """Message ``i`` as a memoryview of exactly its bytes."""
        return memoryview(self.payloads[i, : int(self.sizes[i])])


class VegaReceiver(_End):
    """The receiving end of a Vega channel (paper: available, get, release_buffer; plus
    batch get)."""

    def __init__(self, spec: ChannelSpec, name: str, mm: mmap.mmap, rx: Any) -> None:
        super().__init__(spec, name, mm)
        self._rx = rx
        self._msg = ffi.new("omdp_vega_msg_t *")
        self._mv = memoryview(mm).toreadonly()
        q = spec.queue_size
        self._slots = np.frombuffer(mm, dtype=np.uint8, count=q * self._stride,
                                    offset=self._slots_offset).reshape(q, self._stride)
        self._slots.flags.writeable = False
        self._payload0 = self._slot_payload_offset(0)
        self._sizes = np.zeros(q, dtype=np.uint32)
        self._sizes_c = ffi.from_buffer("uint32_t[]", self._sizes)
        self._first = ffi.new("uint32_t *")

    @classmethod
    def create(cls, spec: ChannelSpec, name: str) -> VegaReceiver:
        """Make the shared-memory channel ``name`` (mode 0600) and hold its receiving end."""
        check_endpoint(name)
        out = ffi.new("omdp_vega_receiver_t **")
        rc = lib.omdp_vega_receiver_create_shm(name.encode(), *c_knobs(spec), out)
        if rc != lib.OMDP_VEGA_OK:
            raise_for(rc, name, "create receiver")
        try:
            mm = _map_shm(name, int(lib.omdp_vega_region_size(spec.queue_size, spec.max_message)), writable=False)
        except BaseException:
            lib.omdp_vega_receiver_close(out[0])
            raise
        return cls(spec, name, mm, out[0])

    def available(self) -> bool:
        """True when get would return a message at once."""
        return bool(lib.omdp_vega_available(self._rx))

    def _wait(self, call: Any, timeout: float | None) -> int:
        """Run a C wait in slices when unbounded, so signals reach Python."""
        if timeout is not None:
            return call(timeout_ns(timeout))
        while True:
            rc = call(WAIT_SLICE_NS)
            if rc != lib.OMDP_VEGA_TIMEOUT:
                return rc

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message as ``(slot_id, view)``; None when none came within ``timeout``
        (None: wait as long as it takes). Raises PeerGoneError when the sender is gone and
        all it sent was read."""
        rx, msg = self._rx, self._msg
        if timeout is None:
            rc = _get(rx, msg, WAIT_SLICE_NS)
            while rc == _TIMEOUT:
                rc = _get(rx, msg, WAIT_SLICE_NS)
        else:
            rc = _get(rx, msg, timeout_ns(timeout))
        if rc == 0:
            slot = msg.slot_id
            off = self._payload0 + slot * self._stride
            return slot, self._mv[off:off + msg.size]
        if rc > 0:
            return None
        raise_for(rc, self.name, "get")

    def get_batch(self, max_count: int | None = None, timeout: float | None = 0) -> VegaBatch | None:
        """Up to ``max_count`` messages in consecutive slots (stopping at the ring's end);
        waits for the first like ``get`` (default: no wait). Release with
        ``release_batch``."""
        n_max = self.spec.queue_size if max_count is None else min(max_count, self.spec.queue_size)
        n = lib.omdp_vega_get_run(self._rx, self._sizes_c, n_max, self._first)
        if n == 0 and timeout != 0:
            rx = self._rx
            rc = self._wait(lambda t: lib.omdp_vega_wait_data(rx, t), timeout)
            if rc > 0:
                return None
            if rc < 0:
                raise_for(rc, self.name, "get_batch")
            n = lib.omdp_vega_get_run(self._rx, self._sizes_c, n_max, self._first)
        if n < 0:
            raise_for(int(n), self.name, "get_batch")
        if n == 0:
            return None
        first = int(self._first[0])
        return VegaBatch(first, self._sizes[:n].copy(),
                         self._slots[first:first + n, SLOT_HEADER:SLOT_HEADER + self.spec.max_message])

    def release_buffer(self, slot_id: int) -> None:
        """Give slot ``slot_id`` (from get) back to the sender: the credit."""
        rc = _release(self._rx, slot_id)
        if rc:
            raise_for(rc, self.name, f"release_buffer({slot_id})")

    def release_batch(self, batch: VegaBatch) -> None:
        """Release every slot of ``batch`` with one credit write."""
        rc = lib.omdp_vega_release_batch(self._rx, batch.first_slot, len(batch))
        if rc:
            raise_for(rc, self.name, f"release_batch({batch.first_slot}, {len(batch)})")

    def held(self) -> int:
        """Messages taken and not yet released."""
        return int(lib.omdp_vega_held(self._rx))

    def peer_state(self) -> str:
        """The sender: absent (not yet attached), attached, closed or dead."""
        return PEER_STATES[lib.omdp_vega_receiver_peer(self._rx)]

    @property
    def c_handle(self) -> Any:
        """The ``omdp_vega_receiver_t *`` for C loops (a native partition calls vega.h)."""
        return self._rx

    def close(self) -> None:
        """Leave the channel; the segment goes when both ends have closed (or the sender
        is dead or never came)."""
        if self._rx is not None:
            lib.omdp_vega_receiver_close(self._rx)
            self._rx = None


def vega_local_pair(spec: ChannelSpec, name: str = "local") -> tuple[VegaSender, VegaReceiver]:
    """Both ends of one ring in this process's private memory (the ``fused`` medium:
    threads of one partition). Same protocol, same calls; no pid checks."""
    size = int(lib.omdp_vega_region_size(spec.queue_size, spec.max_message))
    mm = mmap.mmap(-1, size)
    tx = ffi.new("omdp_vega_sender_t **")
    rx = ffi.new("omdp_vega_receiver_t **")
    rc = lib.omdp_vega_local_pair(ffi.from_buffer(mm), size, *c_knobs(spec), tx, rx)
    if rc != lib.OMDP_VEGA_OK:
        raise_for(rc, name, "make local pair")
    return VegaSender(spec, name, mm, tx[0]), VegaReceiver(spec, name, mm, rx[0])


# The paper's five calls, by name.

def ready_to_send(sender: VegaSender) -> bool:
    """Is there room to send a new buffer?"""
    return sender.ready_to_send()


def put(sender: VegaSender, data: Buffer, size: int | None = None) -> bool:
    """Copy ``data`` (its first ``size`` bytes when given) into the channel."""
    return sender.put(data if size is None else memoryview(data)[:size])


def available(receiver: VegaReceiver) -> bool:
    """Is new data available?"""
    return receiver.available()


def get(receiver: VegaReceiver) -> tuple[int, memoryview]:
    """The next buffer as ``(slot_id, view)``, waiting by the channel's strategy."""
    got = receiver.get()
    if got is None:
        raise TransportError(f"channel {receiver.name!r}: an unbounded get returned nothing")
    return got


def release_buffer(receiver: VegaReceiver, slot_id: int) -> None:
    """Release a buffer obtained by get."""
    receiver.release_buffer(slot_id)
