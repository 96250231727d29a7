"""Sizes and CRC-32s of a capture's files, as its manifest records them (``checksums``).

``omdp synth`` records every file it wrote; a reader checks the sizes before it plans
anything (cheap) and the CRCs before it plays the packets (zlib's CRC-32 reads 2 GB/s, a
fraction of the replay's own reading), so a capture whose files no longer match its
manifest - overwritten in place, cut short by a full disk, edited - is refused with the
file and what differs instead of being played.
"""
from __future__ import annotations

import zlib
from pathlib import Path

CHUNK = 1 << 22


class ChecksumMismatch(ValueError):
    """A capture file that differs from what its manifest records."""


def file_check(path: Path) -> dict[str, int]:
    """``{"bytes": size, "crc32": crc}`` of the file at ``path``."""
    crc = 0
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return {"bytes": size, "crc32": crc}


def check_size(path: Path, recorded: dict[str, int]) -> None:
    """ChecksumMismatch when ``path``'s size is not the recorded one."""
    size = path.stat().st_size
    if size != recorded["bytes"]:
        raise ChecksumMismatch(f"{path}: {size:,} bytes, but the manifest records {recorded['bytes']:,} "
                               "(the file changed or was cut short after the capture was written)")


def check_file(path: Path, recorded: dict[str, int]) -> None:
    """ChecksumMismatch when ``path``'s size or CRC-32 is not the recorded one."""
    check_size(path, recorded)
    got = file_check(path)
    if got["crc32"] != recorded["crc32"]:
        raise ChecksumMismatch(f"{path}: CRC-32 {got['crc32']:08x}, but the manifest records "
                               f"{recorded['crc32']:08x} (the file changed after the capture was written)")
