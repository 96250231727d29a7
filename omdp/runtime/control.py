"""The control protocol between the supervisor and a partition process: JSON lines.

The partition writes events on its stdout and reads commands on its stdin; its stderr is
its log. Pipes work the same through ``ip netns exec`` or a remote shell, so nothing here
assumes one host.

  partition -> supervisor   {"event": "listening", "endpoints": {"<channel id>": "..."}}
                            {"event": "connected"}
                            {"event": "heartbeat", "stats": {...}, "channels": {...}}
                            {"event": "ended" | "stopped", "report": {...}}
                            {"event": "failed", "error": "...", "report": {...}}
  supervisor -> partition   {"cmd": "connect", "endpoints": {...}}   open senders
                            {"cmd": "start"}                         run the loop
                            {"cmd": "stop"}                          sources stop, queues drain
                            {"cmd": "stop-now"}                      leave at once

A partition whose stdin reaches end of file (its supervisor is gone) stops at once.
"""
from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, BinaryIO

EXIT_ENDED = 0
EXIT_FAILED = 1
EXIT_STOPPED = 3
"""A partition's exit status: ended normally, failed, or left on a hard stop."""


class ControlError(RuntimeError):
    """The peer broke the protocol or went away."""


class LineReader:
    """Newline-separated JSON objects from a file descriptor, without blocking on partial
    lines (the caller selects on ``fd``)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""
        self.eof = False

    def feed(self) -> list[dict[str, Any]]:
        """Read what is there (call when ``fd`` is readable) and return complete messages."""
        data = os.read(self.fd, 65536)
        if not data:
            self.eof = True
            return []
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        out = []
        for line in lines:
            if line.strip():
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ControlError(f"not a control message: {line[:200]!r} ({e})") from None
                if not isinstance(msg, dict):
                    raise ControlError(f"not a control message: {line[:200]!r}")
                out.append(msg)
        return out

    def wait_for(self, key: str, wanted: set[str], timeout: float) -> dict[str, Any]:
        """Block until a message whose ``key`` is in ``wanted`` arrives (others are skipped),
        or raise ControlError on timeout / end of file."""
        import select

        deadline = time.monotonic() + timeout
        pending: list[dict[str, Any]] = []
        while True:
            for msg in pending:
                if msg.get(key) in wanted:
                    return msg
            pending = []
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlError(f"no {'/'.join(sorted(wanted))} within {timeout:.0f} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                pending = self.feed()
                if self.eof and not pending:
                    raise ControlError(f"end of input while waiting for {'/'.join(sorted(wanted))}")


class LineWriter:
    """Writes JSON lines to a binary stream, one whole line per call, from any thread."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def send(self, **msg: Any) -> None:
        """Write one message and flush; a closed peer raises ControlError."""
        line = json.dumps(msg, separators=(",", ":"), default=str).encode() + b"\n"
        with self._lock:
            try:
                self._stream.write(line)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError) as e:
                raise ControlError(f"control stream closed: {e}") from None
