"""The lines of one capture directory that a replay sends: their multicast endpoints from
``manifest.json`` (docs/manifest.md: ``lines[].a/b.group/port``, ``lines[].files.a``) and
their packets from the files it names, or ``line<NN>.pcap`` and its rotated files.

Everything that can be wrong with the input is found here, before anything is sent: a
missing directory, manifest or pcap, a corrupt or cut-short pcap, a line the manifest does
not list, a file whose size (checked on opening) or CRC-32 (checked before its packets are
read) differs from the manifest's ``checksums``. Each error says which file or line and why.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from feedhandlers.captures import Capture, PcapError, read_pcap, rotated_paths
from omdp.errors import InputError
from ops.capture.checksums import ChecksumMismatch, check_file, check_size
from ops.replay.config import MAX_LINE, line_ranges


class CaptureInputError(InputError):
    """The capture directory cannot be replayed as asked; the message names the file or line."""


@dataclass(frozen=True)
class LineEndpoints:
    """Where a line's copies go: copy ('A'/'B') -> (multicast group, UDP port); and the
    line's A capture files when the manifest names them (in rotation order)."""

    line: int
    groups: dict[str, tuple[str, int]]
    files: tuple[str, ...] = ()


def line_file(capture_dir: Path, line: int) -> Path:
    """First capture file of a line (docs/architecture.md "Data layout": line<NN>.pcap)."""
    return capture_dir / f"line{line:02d}.pcap"


def _endpoint(entry: dict, copy: str, where: str) -> tuple[str, int] | None:
    spec = entry.get(copy.lower()) or entry.get(copy)
    if spec is None:
        return None
    try:
        group, port = str(spec["group"]), int(spec["port"])
    except (KeyError, TypeError, ValueError):
        raise CaptureInputError(f"{where}: copy {copy} of line {entry.get('line')} needs 'group' and 'port'") from None
    if not 1 <= port <= 65535:
        raise CaptureInputError(f"{where}: port of copy {copy} of line {entry.get('line')}: {port} is not 1..65535")
    return group, port


def load_manifest(capture_dir: Path) -> tuple[dict, dict[int, LineEndpoints]]:
    """The manifest and, per line it lists, the line's endpoints."""
    if not capture_dir.is_dir():
        raise CaptureInputError(f"{capture_dir}: no such capture directory")
    path = capture_dir / "manifest.json"
    if not path.is_file():
        raise CaptureInputError(f"{path}: missing (every capture directory has a manifest.json)")
    try:
        manifest = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CaptureInputError(f"{path}: not readable JSON ({e})") from None
    lines = manifest.get("lines") if isinstance(manifest, dict) else None
    if not isinstance(lines, list) or not lines:
        raise CaptureInputError(f"{path}: has no 'lines' list")
    out: dict[int, LineEndpoints] = {}
    for entry in lines:
        if not isinstance(entry, dict) or not isinstance(entry.get("line"), int):
            raise CaptureInputError(f"{path}: every entry of 'lines' needs an integer 'line'")
        line = entry["line"]
        if not 1 <= line <= MAX_LINE:
            raise CaptureInputError(f"{path}: line {line} is outside 1-{MAX_LINE}")
        groups = {c: ep for c in ("A", "B") if (ep := _endpoint(entry, c, str(path))) is not None}
        files = entry.get("files", {}).get("a", []) if isinstance(entry.get("files"), dict) else []
        if not isinstance(files, list) or not all(isinstance(f, str) and "/" not in f for f in files):
            raise CaptureInputError(f"{path}: files of line {line} must be a list of file names")
        out[line] = LineEndpoints(line=line, groups=groups, files=tuple(files))
    return manifest, out


def read_checked_pcap(path: Path) -> Capture:
    """A line's pcap, mapped and its packets located; a file that cannot be replayed whole
    (corrupt, cut short, frames cut by the snaplen or with a bad header, an impossible
    payload) raises CaptureInputError naming the file and the first problem."""
    try:
        cap = read_pcap(path)
    except PcapError as e:
        raise CaptureInputError(f"corrupt pcap: {e}") from None
    except OSError as e:
        raise CaptureInputError(f"{path}: {e.strerror or e}") from None
    if cap.meta.get("truncated"):
        raise CaptureInputError(f"corrupt pcap: {cap.meta['truncated_tail'].describe()} "
                                "(cut short or still being written)")
    if cap.meta.get("malformed_frames") is not None:
        raise CaptureInputError(f"corrupt pcap: {cap.meta['malformed_frames'].describe()}: their messages "
                                "could not be sent")
    if len(cap) and (int(cap.lengths.min()) == 0 or int(cap.lengths.max()) > 65507):
        raise CaptureInputError(f"corrupt pcap: {path}: a UDP payload of {int(cap.lengths.max())} bytes or empty")
    return cap


@dataclass
class CaptureSet:
    """The selected lines of a capture directory, checked; ``read()`` loads their packets."""

    capture_dir: Path
    manifest: dict
    endpoints: dict[int, LineEndpoints]
    files: dict[int, list[Path]]

    @classmethod
    def open(cls, capture_dir: Path, lines: tuple[int, ...] | None = None, copies: tuple[str, ...] = (),
             check_sizes: bool = True) -> "CaptureSet":
        """Check the manifest, the lines asked for, their endpoints for ``copies``, that
        their files exist and (``check_sizes``) have the sizes the manifest records. Cheap:
        no packet is read."""
        capture_dir = Path(capture_dir)
        manifest, endpoints = load_manifest(capture_dir)
        wanted = tuple(sorted(endpoints)) if lines is None else lines
        absent = [ln for ln in wanted if ln not in endpoints]
        if absent:
            raise CaptureInputError(
                f"{capture_dir}: line {', '.join(map(str, absent))} not in the manifest (it lists {line_ranges(sorted(endpoints))})"
            )
        files: dict[int, list[Path]] = {}
        for ln in wanted:
            for copy in copies:
                if copy not in endpoints[ln].groups:
                    raise CaptureInputError(f"{capture_dir / 'manifest.json'}: line {ln} has no multicast group for copy {copy}")
            named = [capture_dir / f for f in endpoints[ln].files]
            for f in named:
                if not f.is_file():
                    raise CaptureInputError(f"{f}: missing (the manifest names it for line {ln})")
            found = named or rotated_paths(line_file(capture_dir, ln))
            if not found:
                raise CaptureInputError(f"{line_file(capture_dir, ln)}: missing (line {ln} is in the manifest)")
            files[ln] = found
        checks = (manifest.get("checksums") or {}) if check_sizes else {}
        for path in (p for ln in wanted for p in files[ln]):
            if path.name in checks:
                try:
                    check_size(path, checks[path.name])
                except ChecksumMismatch as e:
                    raise CaptureInputError(str(e)) from None
        return cls(capture_dir=capture_dir, manifest=manifest, endpoints={ln: endpoints[ln] for ln in wanted}, files=files)

    @property
    def lines(self) -> list[int]:
        return sorted(self.files)

    def read(self) -> dict[int, list[Capture]]:
        """Map every file and locate its packets; a corrupt or cut-short pcap is an error."""
        out: dict[int, list[Capture]] = {}
        total = 0
        checks = self.manifest.get("checksums") or {}
        for ln in self.lines:
            caps = []
            for path in self.files[ln]:
                if path.name in checks:
                    try:
                        check_file(path, checks[path.name])
                    except ChecksumMismatch as e:
                        raise CaptureInputError(str(e)) from None
                    except OSError as e:
                        raise CaptureInputError(f"{path}: {e.strerror or e}") from None
                cap = read_checked_pcap(path)
                caps.append(cap)
                total += len(cap)
            out[ln] = caps
        if total == 0:
            raise CaptureInputError(f"{self.capture_dir}: the selected lines hold no packets")
        return out

    def file_sizes(self) -> dict[Path, int]:
        """Size of every file, so a sender can check it maps what the service read."""
        return {p: p.stat().st_size for ln in self.lines for p in self.files[ln]}
