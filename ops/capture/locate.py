"""Which files make up a capture: per OPRA line, its pcaps in rotation order.

A capture directory written by ``omdp synth`` has a manifest naming every line's files;
without one, ``line<NN>.pcap`` files (and their rotations ``line<NN>.<k>.pcap``) are
taken as found, B copies (``line<NN>-b...``) only when asked for. A single pcap file is a
capture of one line.
"""
from __future__ import annotations

import re
from pathlib import Path

from ops.synth.manifest import MANIFEST_FILE, load_manifest

_LINE_FILE = re.compile(r"^line(\d+)(-b)?(?:\.(\d+))?\.pcap$")


class CaptureNotFound(FileNotFoundError):
    """A path that holds no capture we can read."""


def capture_lines(path: str | Path, copy: str = "a") -> dict[int, list[Path]]:
    """``{line: [files in order]}`` of the capture at ``path`` (directory or pcap file)."""
    path = Path(path)
    if copy not in ("a", "b"):
        raise ValueError(f"copy must be 'a' or 'b', not {copy!r}")
    if path.is_file():
        m = _LINE_FILE.match(path.name)
        return {int(m.group(1)) if m else 1: [path]}
    if not path.is_dir():
        raise CaptureNotFound(f"{path}: no such capture file or directory")
    if (path / MANIFEST_FILE).exists():
        manifest = load_manifest(path)
        out = {ln.line: [path / f for f in ln.files.get(copy, [])] for ln in manifest.lines}
        missing = [str(f) for files in out.values() for f in files if not f.exists()]
        if missing:
            raise CaptureNotFound(f"{path}: files named in the manifest are missing: {', '.join(missing[:5])}")
        found_files = {k: v for k, v in out.items() if v}
        if not found_files:
            raise CaptureNotFound(f"{path}: the manifest names no files of copy {copy.upper()}")
        return found_files
    found: dict[int, list[tuple[int, Path]]] = {}
    for f in path.iterdir():
        m = _LINE_FILE.match(f.name)
        if m and (m.group(2) is not None) == (copy == "b"):
            found.setdefault(int(m.group(1)), []).append((int(m.group(3) or 0), f))
    if not found:
        raise CaptureNotFound(f"{path}: no line<NN>{'-b' if copy == 'b' else ''}.pcap files and no {MANIFEST_FILE}")
    return {ln: [f for _, f in sorted(files)] for ln, files in sorted(found.items())}
