"""One multicast feed per group and port on a host.

Two runs multicasting the same capture on one host hear each other: each feed handler
joins the groups both replayers send to, and sees every packet twice or out of order (half
the messages "missed", hundreds of thousands of duplicates, and exit status 0). Giving each
run its own groups would need every capture rewritten, so a run takes a lock per group and
port it sends to or joins instead, and a second run on any of them is refused, naming the
run and process that holds it.

A lock is a file ``<group>_<port>.lock`` under ``LOCK_DIR`` (``$OMDP_LOCK_DIR``, default
``<tmp>/omdp-locks``), held with ``flock`` by the ``omdp run`` process and holding the run id
and pid of its holder. The kernel lets go of an ``flock`` when its holder dies, so a lock of
a killed run is taken over by the next run (which says so); nothing is left to clean.
"""
from __future__ import annotations

import errno
import fcntl
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

LOCK_DIR_ENV = "OMDP_LOCK_DIR"


class MulticastBusy(RuntimeError):
    """Another live run holds one of the groups and ports."""


def lock_dir() -> Path:
    """Where the host's multicast locks live."""
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "omdp-locks")


def _holder(fd: int) -> tuple[str, int | None]:
    """(run id, pid) written in a lock file ('?', None when unreadable)."""
    try:
        text = os.pread(fd, 256, 0).decode(errors="replace").split()
        return (text[0], int(text[1])) if len(text) >= 2 else ("?", None)
    except (OSError, ValueError):
        return "?", None


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class MulticastLock:
    """The locks of one run's groups and ports, held until ``release``."""

    run_id: str
    fds: list[int] = field(default_factory=list)
    taken_over: list[str] = field(default_factory=list)
    """Locks a dead run had left (``group:port of run X, pid N``), now this run's."""

    @classmethod
    def acquire(cls, run_id: str, endpoints: Iterable[tuple[str, int]]) -> MulticastLock:
        """Lock every (group, port) for ``run_id`` or raise MulticastBusy (holding none)."""
        d = lock_dir()
        d.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(d, 0o1777)  # any user's run locks here, as in /tmp
        except PermissionError:
            pass
        lock = cls(run_id)
        try:
            for group, port in sorted(set(endpoints)):
                lock._take(d / f"{group}_{port}.lock", f"{group}:{port}")
        except BaseException:
            lock.release()
            raise
        return lock

    def _take(self, path: Path, what: str) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            os.fchmod(fd, 0o666)  # another user's run must be able to take it (the umask took bits away)
        except PermissionError:
            pass  # someone else's file: it was made so
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            run, pid = _holder(fd)
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise MulticastBusy(f"multicast {what} is in use by run {run} (pid {pid}) on this host ({path}): two "
                                "runs on the same groups would mix each other's feeds; wait for it to end, or "
                                "use ring input") from None
        run, pid = _holder(fd)
        if pid is not None and pid != os.getpid():
            self.taken_over.append(f"{what} of run {run}, pid {pid}" + ("" if not _alive(pid) else " (alive, "
                                   "but no longer holding it)"))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{self.run_id} {os.getpid()}\n".encode(), 0)
        self.fds.append(fd)

    def release(self) -> None:
        """Let go of every lock (the files stay, emptied: no holder)."""
        for fd in self.fds:
            try:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self.fds.clear()

    def __enter__(self) -> MulticastLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
