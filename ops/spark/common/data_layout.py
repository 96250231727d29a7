"""Where the nightly jobs find their inputs and put their outputs under ``--data DIR``
(docs/architecture.md "Data layout"), and how a capture file's name says its line, copy and part.

    captures/<date>/line<NN>[-b][.<k>].pcap, manifest.json    (input: feeds)
    runs/<date>/<run_id>/*.parquet, plan.json                (input: latency)
    ticks/date=<date>/line=<NN>/part-*.parquet               (output: feeds, the tick table)
    tick_windows/date=<date>/line=<NN>/part-*.parquet        (output: feeds, 10 ms counts per file)
    reports/<date>/<table>/part-*.parquet, index.html, *.png  (output: summary tables, page)
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_DIR = "./omdp-data"

_CAPTURE_NAME = re.compile(r"^line(?P<line>\d+)(?P<copy>-[ab])?(?:\.(?P<part>\d+))?\.pcap$")


def check_date(date: str) -> str:
    """Return ``date`` if it is a YYYY-MM-DD calendar date, else raise ValueError."""
    dt.date.fromisoformat(date)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ValueError(f"date {date!r} is not YYYY-MM-DD")
    return date


@dataclass(frozen=True)
class CaptureFile:
    """One pcap file of a day's captures: ``copy`` is "A" (``lineNN``) or "B" (``lineNN-b``),
    ``part`` the rotation index (0 for the first file, k for ``lineNN.<k>.pcap``)."""

    path: str
    line: int
    copy: str
    part: int
    size: int


def parse_capture_name(path: Path) -> tuple[int, str, int] | None:
    """(line, copy, part) from a capture file name, or None if it is not one."""
    m = _CAPTURE_NAME.match(path.name)
    if m is None:
        return None
    copy = "B" if m.group("copy") == "-b" else "A"
    return int(m.group("line")), copy, int(m.group("part") or 0)


@dataclass(frozen=True)
class DataLayout:
    """The directories of one ``--data`` root, made absolute: executors on a cluster run in
    their own working directories and must get the paths the driver means."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).resolve())

    def captures(self, date: str) -> Path:
        """``captures/<date>/``."""
        return self.root / "captures" / check_date(date)

    def manifest(self, date: str) -> Path:
        """``captures/<date>/manifest.json``."""
        return self.captures(date) / "manifest.json"

    def runs(self, date: str) -> Path:
        """``runs/<date>/`` (one directory per run)."""
        return self.root / "runs" / check_date(date)

    def reports_root(self) -> Path:
        """``reports/`` (one directory per night)."""
        return self.root / "reports"

    def reports(self, date: str) -> Path:
        """``reports/<date>/``."""
        return self.reports_root() / check_date(date)

    def ticks(self) -> Path:
        """``ticks/``: the tick table, partitioned by ``date`` and ``line``."""
        return self.root / "ticks"

    def tick_windows(self) -> Path:
        """``tick_windows/``: the tick table's 10 ms windows per capture file (packets,
        messages, bytes), partitioned like it; what the feeds job's rate profiles read."""
        return self.root / "tick_windows"

    def capture_files(self, date: str, copies: str = "A") -> list[CaptureFile]:
        """The day's capture files of the given copies ("A", "B" or "AB"), ordered by line,
        copy and part. Files whose names are not capture names are ignored."""
        found: list[CaptureFile] = []
        folder = self.captures(date)
        if not folder.is_dir():
            return found
        for path in folder.iterdir():
            parsed = parse_capture_name(path)
            if parsed is None or not path.is_file():
                continue
            line, copy, part = parsed
            if copy in copies:
                found.append(CaptureFile(str(path.resolve()), line, copy, part, path.stat().st_size))
        found.sort(key=lambda f: (f.line, f.copy, f.part))
        return found

    def previous_report_dates(self, date: str, nights: int) -> list[str]:
        """Dates of the report directories within ``nights`` days before ``date``, newest
        first."""
        return _dated_children(self.reports_root(), date, nights)

    def previous_run_dates(self, date: str, nights: int) -> list[str]:
        """Dates of the run directories (``runs/<date>/``) within ``nights`` days before
        ``date``, newest first: the nights a baseline can be computed from."""
        return _dated_children(self.root / "runs", date, nights)


def _dated_children(root: Path, date: str, nights: int) -> list[str]:
    """Names of ``root``'s YYYY-MM-DD folders within ``nights`` days before ``date``, newest first."""
    day = dt.date.fromisoformat(check_date(date))
    earliest = day - dt.timedelta(days=nights)
    dates = []
    if root.is_dir():
        for child in root.iterdir():
            try:
                d = dt.date.fromisoformat(child.name)
            except ValueError:
                continue
            if earliest <= d < day and child.is_dir():
                dates.append(child.name)
    return sorted(dates, reverse=True)
