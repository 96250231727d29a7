"""What the pipeline needs to know about a capture: its lines (endpoints and files), the
root -> underlying id map and its recorded rate, read from ``captures/<date>/manifest.json``.

The manifest is read the way the replay service reads it (``ops.replay.capture_set``), so a
capture the replay accepts is one the pipeline accepts; only the fields used here are
looked at (a tolerant reader: the manifest's full schema is the generator's).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from feedhandlers.feed_handler import FEED_FORMATS, Endpoint
from ops.replay.capture_set import CaptureInputError, CaptureSet

__all__ = ["CaptureInfo", "CaptureInputError", "capture_dir", "open_capture"]


def capture_dir(data_dir: str | Path, capture_date: str | dt.date) -> Path:
    """``<data>/captures/<YYYY-MM-DD>`` (docs/architecture.md "Data layout")."""
    date = capture_date if isinstance(capture_date, dt.date) else dt.date.fromisoformat(str(capture_date))
    return Path(data_dir) / "captures" / f"{date:%Y-%m-%d}"


def latest_capture_date(data_dir: str | Path) -> str | None:
    """The newest ``captures/<YYYY-MM-DD>`` holding a manifest, if any."""
    found = sorted(p.parent.name for p in (Path(data_dir) / "captures").glob("*/manifest.json"))
    return found[-1] if found else None


@dataclass(frozen=True)
class CaptureInfo:
    """A capture directory, checked: lines, files, endpoints, roots and underlyings."""

    directory: Path
    date: dt.date
    lines: list[int]
    files: dict[int, list[Path]]
    endpoints: dict[int, dict[str, Endpoint]]
    root_underlying: dict[str, int]
    underlying_symbols: dict[int, str]
    recorded_pps: float
    messages_per_packet: float
    line_packets: dict[int, int]
    """Packets per line as the manifest counts them (lines it does not count are absent)."""
    feed_format: str = "opra-fast-v2"
    """The manifest's ``feed_format``: ``opra-fast-v2`` (older manifests) or ``obi-v6``."""
    underlying_series: dict[int, int] = field(default_factory=dict)
    """Series per underlying id where the manifest counts them (``omdp synth`` captures); empty
    for a capture that does not."""

    def line_files(self) -> list[Path]:
        """Every capture file, line by line."""
        return [p for ln in self.lines for p in self.files[ln]]


def open_capture(directory: str | Path, check_sizes: bool = True) -> CaptureInfo:
    """Check a capture directory and read what the pipeline needs from its manifest.
    Raises CaptureInputError naming the file and the problem. ``check_sizes``: the files'
    sizes against the manifest's checksums (off for a reader that judges each file itself)."""
    cs = CaptureSet.open(Path(directory), check_sizes=check_sizes)
    m = cs.manifest
    where = cs.capture_dir / "manifest.json"
    try:
        date = dt.date.fromisoformat(str(m["date"]))
        symbols = {int(u["id"]): str(u["symbol"]) for u in m.get("underlyings", [])}
        by_symbol = {s: i for i, s in symbols.items()}
        roots = {str(r): by_symbol[str(u)] for r, u in (m.get("roots") or {}).items()}
        rate = m.get("rate") or {}
        pps = float(rate.get("packets_per_second") or 0.0)
        mpp = float(rate.get("messages_per_packet") or 0.0)
        feed_format = str(m.get("feed_format") or "opra-fast-v2")
        if feed_format not in FEED_FORMATS:
            raise ValueError(f"feed_format {feed_format!r} is none of {', '.join(FEED_FORMATS)}")
        series = {int(u["id"]): int(u["series"]) for u in m.get("underlyings", []) if u.get("series")}
        counted = {int(ln["line"]): int(ln["packets"]) for ln in m.get("lines", [])
                   if isinstance(ln, dict) and "line" in ln and ln.get("packets")}
    except KeyError as e:
        raise CaptureInputError(f"{where}: a root names underlying {e} that 'underlyings' does not list") from None
    except (TypeError, ValueError) as e:
        raise CaptureInputError(f"{where}: date, underlyings, roots, rate or feed_format malformed ({e})") from None
    endpoints = {ln: {c: Endpoint(group=g, port=p) for c, (g, p) in cs.endpoints[ln].groups.items()} for ln in cs.lines}
    return CaptureInfo(directory=cs.capture_dir, date=date, lines=cs.lines, files=cs.files, endpoints=endpoints,
                       root_underlying=roots, underlying_symbols=symbols, recorded_pps=pps, messages_per_packet=mpp,
                       line_packets={ln: n for ln, n in counted.items() if ln in cs.lines}, feed_format=feed_format,
                       underlying_series=series)
