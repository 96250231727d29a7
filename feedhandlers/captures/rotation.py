"""Names of rotated capture files.

A line's capture is ``line<NN>.pcap``; when a writer rotates (docs/architecture.md: at <= 256 MB) the
next files are ``line<NN>.1.pcap``, ``line<NN>.2.pcap``, ... in order. The first file keeps
the plain name so an unrotated capture needs no suffix.
"""
from __future__ import annotations

from pathlib import Path

DEFAULT_ROTATE_BYTES = 256 * 1024 * 1024


def rotated_path(base: str | Path, k: int) -> Path:
    """File ``k`` of the rotated capture whose first file is ``base``."""
    base = Path(base)
    if k < 0:
        raise ValueError("rotation index must be >= 0")
    if k == 0:
        return base
    return base.with_name(f"{base.stem}.{k}{base.suffix}")


def rotated_paths(base: str | Path) -> list[Path]:
    """The existing files of a rotated capture, in order (empty if ``base`` is absent)."""
    out: list[Path] = []
    k = 0
    while rotated_path(base, k).exists():
        out.append(rotated_path(base, k))
        k += 1
    return out
