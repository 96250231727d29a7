"""A night that covers several capture dates: each date's feeds tables are gathered into
the night's report directory (every row keeping its capture date), and the report's
figures draw each capture apart."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from ops.spark.common.report_schemas import FEEDS_MESSAGES_PER_PACKET, FEEDS_RATE_PER_SECOND
from ops.spark.common.report_tables import table_path, write_rows
from ops.spark.feeds.feeds_job import FeedsResult
from ops.spark.report.nightly_job import gather_feeds_tables
from ops.spark.report.report_plots import plot_messages_per_packet, plot_rate_profile

DATES = ("2008-02-04", "2008-02-05")


def _per_second(date: str, seconds: int, base: int) -> list[dict]:
    t0 = 1_202_000_000_000_000_000 + base
    return [{"date": date, "line": None, "second_ns": t0 + s * 1_000_000_000, "packets": 24_000 + s,
             "messages": 336_000 + s, "bytes": 1} for s in range(seconds)]


def _day(tmp: Path, date: str, base: int) -> FeedsResult:
    out = tmp / date
    out.mkdir()
    tables = {
        "feeds_rate_per_second": write_rows(_per_second(date, 5, base), out, "feeds_rate_per_second",
                                            FEEDS_RATE_PER_SECOND),
        "feeds_messages_per_packet": write_rows([{"date": date, "line": None, "messages_per_packet": 14,
                                                  "packets": 100}], out, "feeds_messages_per_packet",
                                                FEEDS_MESSAGES_PER_PACKET),
    }
    return FeedsResult(date=date, files=1, files_skipped=0, packets=0, messages=0, seconds=0.0,
                       decode_seconds=0.0, decode_cpu_seconds=0.0, write_cpu_seconds=0.0, tables=tables)


def test_every_capture_dates_rows_in_the_nights_tables(tmp_path: Path) -> None:
    feeds = [_day(tmp_path, d, k * 86_400_000_000_000) for k, d in enumerate(DATES)]
    night = tmp_path / "2026-12-01"
    (night).mkdir()
    stale = write_rows(_per_second("1999-01-01", 1, 0), night, "feeds_rate_per_second", FEEDS_RATE_PER_SECOND)
    gather_feeds_tables(feeds, night)
    rows = pq.read_table(stale).to_pylist()
    assert sorted({r["date"] for r in rows}) == list(DATES) and len(rows) == 10, "an earlier night's rows replaced"
    mpp = pq.read_table(table_path(night, "feeds_messages_per_packet")).to_pylist()
    assert [(r["date"], r["packets"]) for r in mpp] == [(DATES[0], 100), (DATES[1], 100)]
    assert not list(night.glob(".*")), "no temporary file left"


def test_the_figures_draw_each_capture_date(tmp_path: Path) -> None:
    per_second = _per_second(DATES[0], 5, 0) + _per_second(DATES[1], 3, 86_400_000_000_000)
    profile = [{"date": d, "line": None, "window_ms": w, "peak_pps": 30_000.0, "peak_mps": 400_000.0}
               for d in DATES for w in (100, 10)]
    assert plot_rate_profile([], [], tmp_path / "empty.png") is None and not (tmp_path / "empty.png").exists()
    drawn = plot_rate_profile(per_second, profile, tmp_path / "rate.png")
    assert drawn.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and drawn.stat().st_size > 10_000
    hist = [{"date": d, "line": None, "messages_per_packet": 14, "packets": 100} for d in DATES]
    assert plot_messages_per_packet(hist, tmp_path / "mpp.png").stat().st_size > 10_000
