"""The control protocol between the supervisor and a partition process: JSON lines.

The partition writes events on its stdout and reads commands on its stdin; its stderr is
its log. Pipes work the same through ``ip netns exec`` or a remote shell, so nothing here
assumes one host.

  partition -> supervisor   {"event": "listening", "endpoints": {"<channel id>": "..."}, "clock": {...}}
                            {"event": "connected"}
                            {"event": "clock-pong", "t1": ns, "t2": ns}     answer to a ping
                            {"event": "heartbeat", "stats": {...}, "channels": {...}}
                            {"event": "ended" | "stopped", "report": {...}}
                            {"event": "failed", "error": "...", "report": {...}}
  supervisor -> partition   {"cmd": "connect", "endpoints": {...}}   open senders
                            {"cmd": "clock-ping"}                    stamp and answer (clock_sync)
                            {"cmd": "clock-set", "correction_ns": N} correct this host's stamps
                            {"cmd": "start"}                         run the loop
                            {"cmd": "stop"}                          sources stop, queues drain
                            {"cmd": "stop-now"}                      leave at once
                            {"cmd": "peers-gone", "partition": NAME, "inputs": [ids], "outputs": [ids]}
                                                                     NAME died: these channels end there

A partition whose stdin reaches end of file (its supervisor is gone) stops at once.
"""
from __future__ import annotations

import json
import os
import select
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
        self._unread: list[dict[str, Any]] = []
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

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The next message (one left by ``wait_for`` first), or None after ``timeout``
        seconds; raises ControlError at end of file."""
        deadline = time.monotonic() + timeout
        while not self._unread:
            if self.eof:
                raise ControlError("end of input")
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if select.select([self.fd], [], [], left)[0]:
                self._unread.extend(self.feed())
        return self._unread.pop(0)

    def take_unread(self) -> list[dict[str, Any]]:
        """Messages read by ``wait_for`` after the one it returned, not yet handed out."""
        out, self._unread = self._unread, []
        return out

    def wait_for(self, key: str, wanted: set[str], timeout: float) -> dict[str, Any]:
        """Block until a message whose ``key`` is in ``wanted`` arrives (others before it are
        skipped; messages after it, read in the same chunk, wait for the next call), or
        raise ControlError on timeout / end of file."""
        deadline = time.monotonic() + timeout
        while True:
            while self._unread:
                msg = self._unread.pop(0)
                if msg.get(key) in wanted:
                    return msg
            if self.eof:
                raise ControlError(f"end of input while waiting for {'/'.join(sorted(wanted))}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlError(f"no {'/'.join(sorted(wanted))} within {timeout:.0f} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                self._unread.extend(self.feed())


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
