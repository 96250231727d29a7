"""The lines of one capture directory that a replay sends: their multicast endpoints from
``manifest.json`` (docs/manifest.md: ``lines[].a/b.group/port``, ``lines[].files.a``) and
their packets from the files it names, or ``line<NN>.pcap`` and its rotated files; for an
OBI capture whose copy B is sent, each line's B files too (``lines[].files.b``, or
``line<NN>-b.pcap``), so copy B carries B's own gaps and bad checksums.

Everything that can be wrong with the input is found here, before anything is sent: a
missing directory, manifest or pcap, a corrupt or cut-short pcap, a line the manifest does
not list, a file whose size (checked on opening) or CRC-32 (checked before its packets are
read) differs from the manifest's ``checksums``. Each error says which file or line and why.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
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
    b_files: tuple[str, ...] = ()


def line_file(capture_dir: Path, line: int, copy: str = "a") -> Path:
    """First capture file of a line's copy (docs/architecture.md "Data layout": line<NN>.pcap,
    line<NN>-b.pcap)."""
    return capture_dir / f"line{line:02d}{'-b' if copy == 'b' else ''}.pcap"


PAIRED_FORMATS = ("obi-v6",)
"""Feed formats whose B files a replay sends on copy B (``copy_pairing`` keys OBI block
headers); a FAST V2 capture sends its A files on both copies."""


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
        named = {}
        for copy in ("a", "b"):
            files = entry.get("files", {}).get(copy, []) if isinstance(entry.get("files"), dict) else []
            if not isinstance(files, list) or not all(isinstance(f, str) and "/" not in f for f in files):
                raise CaptureInputError(f"{path}: files of line {line} must be a list of file names")
            named[copy] = tuple(files)
        out[line] = LineEndpoints(line=line, groups=groups, files=named["a"], b_files=named["b"])
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
    b_files: dict[int, list[Path]] = field(default_factory=dict)
    """Lines whose B copy is sent from its own files: those files (``open``'s ``b_copy``)."""

    @classmethod
    def open(cls, capture_dir: Path, lines: tuple[int, ...] | None = None, copies: tuple[str, ...] = (),
             check_sizes: bool = True, b_copy: bool = False) -> "CaptureSet":
        """Check the manifest, the lines asked for, their endpoints for ``copies``, that
        their files exist and (``check_sizes``) have the sizes the manifest records. With
        ``b_copy`` and a capture of a PAIRED_FORMATS format, each line's B files too, where
        the capture has them. Cheap: no packet is read."""
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
        b_files: dict[int, list[Path]] = {}
        if b_copy and manifest.get("feed_format") in PAIRED_FORMATS:
            for ln in wanted:
                named_b = [capture_dir / f for f in endpoints[ln].b_files]
                for f in named_b:
                    if not f.is_file():
                        raise CaptureInputError(f"{f}: missing (the manifest names it for line {ln}'s B copy)")
                found_b = named_b or rotated_paths(line_file(capture_dir, ln, "b"))
                if found_b:
                    b_files[ln] = found_b
        checks = (manifest.get("checksums") or {}) if check_sizes else {}
        for path in (p for ln in wanted for p in files[ln] + b_files.get(ln, [])):
            if path.name in checks:
                try:
                    check_size(path, checks[path.name])
                except ChecksumMismatch as e:
                    raise CaptureInputError(str(e)) from None
        return cls(capture_dir=capture_dir, manifest=manifest, endpoints={ln: endpoints[ln] for ln in wanted}, files=files,
                   b_files=b_files)

    @property
    def lines(self) -> list[int]:
        return sorted(self.files)

    def read(self) -> dict[int, list[Capture]]:
        """Map every A file and locate its packets; a corrupt or cut-short pcap is an error."""
        out = self._read(self.files)
        if sum(len(c) for caps in out.values() for c in caps) == 0:
            raise CaptureInputError(f"{self.capture_dir}: the selected lines hold no packets")
        return out

    def read_b(self) -> dict[int, list[Capture]]:
        """The same for the B files of the lines that have them (``b_files``)."""
        return self._read(self.b_files)

    def _read(self, files: dict[int, list[Path]]) -> dict[int, list[Capture]]:
        out: dict[int, list[Capture]] = {}
        checks = self.manifest.get("checksums") or {}
        for ln in sorted(files):
            caps = []
            for path in files[ln]:
                if path.name in checks:
                    try:
                        check_file(path, checks[path.name])
                    except ChecksumMismatch as e:
                        raise CaptureInputError(str(e)) from None
                    except OSError as e:
                        raise CaptureInputError(f"{path}: {e.strerror or e}") from None
                caps.append(read_checked_pcap(path))
            out[ln] = caps
        return out

    def file_sizes(self) -> dict[Path, int]:
        """Size of every file, so a sender can check it maps what the service read."""
        return {p: p.stat().st_size for ln in self.lines for p in self.files_of(ln)}

    def files_of(self, line: int) -> list[Path]:
        """Every file a line's replay maps: its A files and any B files."""
        return self.files[line] + self.b_files.get(line, [])
