"""The first process of an isolated namespace host: ``python -m omdp.runtime.host_keeper``.

The supervisor starts it as ``ip netns exec NS unshare --mount --pid --fork --mount-proc``
so it is PID 1 of a fresh PID namespace, in a mount namespace of its own, inside the host's
network namespace. It mounts a private tmpfs on /dev/shm (so no channel can reach another
host through shared memory), says ``ready`` on stdout, then reaps the orphans of the
namespace until its stdin closes. The host's partitions join its namespaces with
``nsenter``; when the keeper exits, the kernel ends every process left in the host.
"""
from __future__ import annotations

import ctypes
import os
import select
import sys

MS_NOSUID = 0x2
MS_NODEV = 0x4
SHM_MOUNT_OPTIONS = b"mode=1777"


def mount_private_shm(path: str = "/dev/shm") -> None:
    """A fresh tmpfs on ``path`` (mount namespace private to this host); raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"omdp-host-shm", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, SHM_MOUNT_OPTIONS) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {path}: {os.strerror(err)}")


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> int:
    """Mount, report, reap until stdin closes; exit status 0 (or 1 when the mount failed)."""
    try:
        mount_private_shm()
    except OSError as e:
        print(f"host keeper: {e}", file=sys.stderr, flush=True)
        return 1
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    fd = sys.stdin.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        _reap()
        if ready and not os.read(fd, 4096):
            return 0


if __name__ == "__main__":
    sys.exit(main())
