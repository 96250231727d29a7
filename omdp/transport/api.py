"""The transport contract: Vega's five calls, for every medium.

A sender and a receiver are the two ends of one point-to-point channel. Operators never
see which medium carries them. ``put`` copies one message into the channel; ``get`` lends a
zero-copy view of the next message until ``release_buffer`` hands the slot back (the credit).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

Buffer = bytes | bytearray | memoryview


@runtime_checkable
class Sender(Protocol):
    """The sending end of a channel."""

    def ready_to_send(self) -> bool:
        """True when a slot is free, so ``put`` would not wait."""

    def put(self, data: Buffer, timeout: float | None = None) -> bool:
        """Send one message. With ``on_full=block`` waits for a slot (at most ``timeout``
        seconds when given, then returns False); with ``on_full=drop`` a full ring counts a
        drop and returns False at once. Raises ``ValueError`` for a message over
        ``max_message`` and ``PeerGoneError`` when the receiver died."""

    def close(self) -> None:
        """Release this end; the medium's resources go when both ends closed."""


@runtime_checkable
class Receiver(Protocol):
    """The receiving end of a channel."""

    def available(self) -> bool:
        """True when ``get`` would return a message at once."""

    def get(self, timeout: float | None = None) -> tuple[int, memoryview] | None:
        """The next message as ``(slot_id, view)``; the view stays valid until
        ``release_buffer(slot_id)``. Waits by the channel's strategy (at most ``timeout``
        seconds when given, then returns None). Raises ``PeerGoneError`` when the sender died
        with nothing left to read."""

    def release_buffer(self, slot_id: int) -> None:
        """Give the slot of a message from ``get`` back to the sender (a credit)."""

    def close(self) -> None:
        """Release this end."""


class TransportError(RuntimeError):
    """A channel failed: the message names the channel and the cause."""


class PeerGoneError(TransportError):
    """The other end of the channel died or closed (detected by pid / heartbeat)."""


class PeerClosedError(PeerGoneError):
    """The other end closed the channel in order (and, at a receiver, all was read)."""


class PeerDeadError(PeerGoneError):
    """The other end's process is gone without closing (crash, SIGKILL)."""


class MessageTooLargeError(TransportError, ValueError):
    """A message longer than the channel's ``max_message``."""


class ChannelExistsError(TransportError):
    """A receiver tried to create a channel whose name is taken (a stale segment of a dead
    run: ``omdp shm clean`` removes those)."""


class ChannelNotFoundError(TransportError):
    """A sender found no channel at its endpoint within its connect timeout."""
