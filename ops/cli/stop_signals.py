"""Ctrl-C and SIGTERM stop a long-running command the same way.

Python turns SIGINT into ``KeyboardInterrupt`` only when SIGINT was not ignored at start, and a
script's background job (``cmd &`` in a non-interactive shell, ``nohup``, many service
managers) starts with SIGINT ignored; SIGTERM, what ``kill`` and systemd send, would end the
process without running its cleanup at all. Inside ``stop_on_signals()`` both raise
``KeyboardInterrupt`` in the main thread, so the command's ``finally`` stops servers and
removes shared memory either way.
"""
from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt while inside; the old handlers come back after."""
    old = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
