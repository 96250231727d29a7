"""POSIX shared-memory segments of a replay (omdp/replay.h): create, map, unlink, and reap
the ones a crashed service left behind.

Names are ``/omdp-replay-<run_id>-ctl`` and ``/omdp-replay-<run_id>-intended``; both start
with a magic number and the creator's pid and start time (omdp/replay.h), so a later service can tell whose they are.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from omdp.native import ffi, lib
from omdp.transport.shm_names import not_a_segment

SHM_PREFIX = "omdp-replay-"
_DEV_SHM = Path("/dev/shm")


class ShmError(OSError):
    """A segment could not be created or mapped; the message names it and the cause."""


def ctl_name(run_id: str) -> str:
    return f"/{SHM_PREFIX}{run_id}-ctl"


def intended_name(run_id: str) -> str:
    return f"/{SHM_PREFIX}{run_id}-intended"


class Segment:
    """One mapped segment: its name, base pointer and size. ``close`` unmaps it; the
    creator also ``unlink``s the name."""

    def __init__(self, name: str, base: object, size: int, owner: bool) -> None:
        self.name = name
        self.base = base
        self.size = size
        self.owner = owner

    @classmethod
    def create(cls, name: str, size: int) -> "Segment":
        err = ffi.new("char[]", 256)
        base = lib.omdp_replay_shm_create(name.encode(), size, err, 256)
        if base == ffi.NULL:
            raise ShmError(ffi.string(err).decode(errors="replace"))
        return cls(name, base, size, owner=True)

    @classmethod
    def open(cls, name: str, writable: bool = False) -> "Segment":
        err = ffi.new("char[]", 256)
        size = ffi.new("uint64_t *")
        base = lib.omdp_replay_shm_open(name.encode(), size, 1 if writable else 0, err, 256)
        if base == ffi.NULL:
            raise ShmError(ffi.string(err).decode(errors="replace"))
        return cls(name, base, int(size[0]), owner=False)

    def buffer(self) -> object:
        """The whole segment as a writable buffer (numpy views go through it)."""
        return ffi.buffer(self.base, self.size)

    def prefault(self) -> None:
        """Touch every page now (each page's first byte written back), so the senders' first pass over
        the segment takes no page faults in the middle of a paced send."""
        pages = np.frombuffer(self.buffer(), dtype=np.uint8)[::4096]
        pages[:] = pages

    def close(self) -> None:
        if self.base is not None:
            lib.omdp_replay_shm_unmap(self.base, self.size)
            self.base = None

    def unlink(self) -> None:
        lib.omdp_replay_shm_unlink(self.name.encode())


def reap_stale_segments() -> list[str]:
    """Unlink replay segments whose creator is dead (a service that crashed): its pid is gone,
    or now names another process (start time differs). Returns their names. Segments of live
    services, and files that are not ours, are left alone."""
    from omdp.transport.shm_inventory import replay_owner_alive

    reaped: list[str] = []
    if not _DEV_SHM.is_dir():
        return reaped
    for path in _DEV_SHM.glob(f"{SHM_PREFIX}*"):
        if not_a_segment(path):
            continue  # a FIFO or link under our prefix: not ours to open or remove
        if replay_owner_alive(path.name) is False:
            name = "/" + path.name
            lib.omdp_replay_shm_unlink(name.encode())
            reaped.append(name)
    return reaped
