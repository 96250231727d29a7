"""Vega's C status codes (vega.h ``OMDP_VEGA_*``) turned into Python results and errors.

Positive codes are "try again" outcomes the callers return as False/None; negative codes
are errors, raised here with the channel's name and what was being done.
"""
from __future__ import annotations

import os
from typing import NoReturn

from omdp.native import ffi, lib
from omdp.transport.api import (
    ChannelExistsError,
    ChannelNotFoundError,
    MessageTooLargeError,
    PeerClosedError,
    PeerDeadError,
    TransportError,
)

PEER_STATES = {
    lib.OMDP_VEGA_PEER_ABSENT: "absent",
    lib.OMDP_VEGA_PEER_ATTACHED: "attached",
    lib.OMDP_VEGA_PEER_CLOSED: "closed",
    lib.OMDP_VEGA_PEER_DEAD: "dead",
}

_MEANING = {
    lib.OMDP_VEGA_E_CORRUPT: "a slot's begin word carries a size over max_message (corrupt ring)",
    lib.OMDP_VEGA_E_BAD_SLOT: "release_buffer of a slot that is not held (never taken, or released twice)",
    lib.OMDP_VEGA_E_THREAD: "a mutex=false sender was used from a second thread; set mutex=true to share it",
    lib.OMDP_VEGA_E_BAD_SPEC: "a knob is out of range",
    lib.OMDP_VEGA_E_LAYOUT: "the segment is not a Vega ring of this version",
    lib.OMDP_VEGA_E_BUSY: "the channel already has (or had) a sender; a ring takes one sender in its life",
    lib.OMDP_VEGA_E_BAD_NAME: "the name must be 1-200 characters of [A-Za-z0-9._-]",
    lib.OMDP_VEGA_E_CLAIM: "claim/commit out of order (commit without claim, or a second claim or put from the claiming thread)",
}


def raise_for(rc: int, channel: str, action: str, max_message: int | None = None, size: int | None = None) -> NoReturn:
    """Raise the error for negative status ``rc`` of ``action`` on ``channel``."""
    where = f"channel {channel!r}: {action}"
    if rc == lib.OMDP_VEGA_E_TOO_BIG:
        raise MessageTooLargeError(f"{where}: message of {size} bytes exceeds max_message={max_message}")
    if rc == lib.OMDP_VEGA_E_PEER_CLOSED:
        raise PeerClosedError(f"{where}: the peer closed the channel")
    if rc == lib.OMDP_VEGA_E_PEER_DEAD:
        raise PeerDeadError(f"{where}: the peer process died without closing (crash or kill)")
    if rc == lib.OMDP_VEGA_E_EXISTS:
        raise ChannelExistsError(f"{where}: a segment of this name exists; if its run is dead, `omdp shm clean` removes it")
    if rc == lib.OMDP_VEGA_E_NOT_FOUND:
        raise ChannelNotFoundError(f"{where}: no such channel (is the receiver up?)")
    if rc == lib.OMDP_VEGA_E_SYS:
        err = ffi.errno
        raise TransportError(f"{where}: system call failed: {os.strerror(err)} (errno {err})")
    raise TransportError(f"{where}: {_MEANING.get(rc, f'status {rc}')}")


def timeout_ns(timeout: float | None) -> int:
    """Seconds (None: no limit) as the C calls' nanoseconds (-1: no limit)."""
    if timeout is None:
        return -1
    if timeout <= 0:
        return 0
    return int(timeout * 1e9)
