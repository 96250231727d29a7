"""Captures: OPRA packets on disk, as classic nanosecond pcaps (Ethernet/IPv4/UDP to a line's
multicast group) or SIAC test files (4-byte big-endian length + packet), read and written a
batch at a time as arrays (``Capture``)."""
from __future__ import annotations

from pathlib import Path

from feedhandlers.captures.capture import Capture, pack_payloads
from feedhandlers.captures.pcap import (PCAP_MAGIC_NS, PCAP_MAGIC_US, MalformedFrames, PcapError, PcapWriter,
                                        TruncatedTail, read_pcap, write_pcap)
from feedhandlers.captures.rotation import DEFAULT_ROTATE_BYTES, rotated_path, rotated_paths
from feedhandlers.captures.siac import SiacFileError, read_siac, write_siac, write_siac_batch

FORMATS = ("pcap", "siac")


def read_capture(path: str | Path, fmt: str | None = None) -> Capture:
    """Read a capture file; ``fmt`` is 'pcap' or 'siac', or None to tell by the pcap magic."""
    path = Path(path)
    if fmt is None:
        with open(path, "rb") as f:
            head = f.read(4)
        magics = (PCAP_MAGIC_NS, PCAP_MAGIC_US)
        is_pcap = len(head) == 4 and (int.from_bytes(head, "little") in magics or int.from_bytes(head, "big") in magics)
        if not is_pcap:
            if not head:
                raise SiacFileError(f"{path}: empty file (0 bytes), not a capture")
            try:
                return read_siac(path)
            except SiacFileError as e:
                raise SiacFileError(f"{path}: not a capture: no pcap magic, and not a SIAC test file either "
                                    f"({str(e).removeprefix(f'{path}: ')})") from None
        fmt = "pcap"
    if fmt == "pcap":
        return read_pcap(path)
    if fmt == "siac":
        return read_siac(path)
    raise ValueError(f"unknown capture format {fmt!r} (known: {', '.join(FORMATS)})")


__all__ = [
    "Capture",
    "DEFAULT_ROTATE_BYTES",
    "FORMATS",
    "PcapError",
    "PcapWriter",
    "SiacFileError",
    "MalformedFrames",
    "TruncatedTail",
    "pack_payloads",
    "read_capture",
    "read_pcap",
    "read_siac",
    "rotated_path",
    "rotated_paths",
    "write_pcap",
    "write_siac",
    "write_siac_batch",
]
