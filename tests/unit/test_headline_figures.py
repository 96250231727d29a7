"""The honest headline everywhere: the dashboard's first card and the nightly report lead
with latency from intended beside from fh_in and say the difference is queueing before
the feed handler; the run summary names the stamps' clock and its drift."""
from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

from ops.pipeline.run_report import stamp_clock_line
from ops.spark.common.report_tables import write_arrow
from ops.spark.report.report_html import headline_rows, render_report

INDEX = Path(__file__).resolve().parents[2] / "ops" / "dashboard" / "static" / "index.html"


def test_dashboard_first_card_is_latency_from_intended_with_the_note() -> None:
    page = INDEX.read_text()
    cards = re.findall(r'<div class="kpi" id="([a-z0-9-]+)"', page)
    assert cards[:2] == ["kpi-intended", "kpi-e2e"]
    note = page[page.index('id="kpi-note"'):]
    assert "queueing before the feed handler" in note[:400]


def test_nightly_page_leads_with_latency_from_intended_beside_fh_in(tmp_path: Path) -> None:
    rows = [
        {"run_id": "r1", "config": "c", "rate_x": 10.0, "hop": "e2e_fh", "p50_ns": 7_000, "p99_ns": 20_000, "mean_ns": 8_000},
        {"run_id": "r1", "config": "c", "rate_x": 10.0, "hop": "e2e_intended", "p50_ns": 50_000, "p99_ns": 900_000,
         "mean_ns": 90_000},
        {"run_id": "r1", "config": "c", "rate_x": 10.0, "hop": "fh", "p50_ns": 3_000, "p99_ns": 9_000, "mean_ns": 4_000},
    ]
    assert headline_rows(rows) == [{"run_id": "r1", "config": "c", "rate_x": 10.0, "intended_p50_ns": 50_000,
                                    "intended_p99_ns": 900_000, "fh_p50_ns": 7_000, "fh_p99_ns": 20_000}]
    write_arrow(pa.Table.from_pylist(rows), tmp_path, "latency_breakdown")
    page = render_report(tmp_path, "2026-12-01").read_text()
    section = page[page.index("<h2>Headline"):page.index("<h2>Files skipped")]
    assert "queueing before the feed handler" in section
    heads = re.findall(r"<th>([^<]*)</th>", section)
    assert heads[3:] == ["from intended p50", "from intended p99", "from fh_in p50", "from fh_in p99"]
    cells = re.findall(r"<td>([^<]*)</td>", section)
    assert cells[3:] == ["50.0 us", "900 us", "7.00 us", "20.0 us"], cells


def test_stamp_clock_line_names_the_clock_and_the_drift() -> None:
    assert stamp_clock_line({}) is None
    clocks = {"app": {"clock": "tsc", "max_abs_drift_ns": 180, "stated_error_ns": 12_372, "drift_checks": 40,
                      "drift_over_error": 0},
              "replay": {"clock": "realtime"}}
    line = stamp_clock_line(clocks)
    assert line is not None
    assert line.startswith("stamps: realtime and tsc clock (1 of 2 partitions on the TSC)")
    assert "at most 180 ns over 40 checks (stated calibration error 12,372 ns; 0 checks beyond it)" in line
    clocks["app"]["checked_bound_ns"] = 240
    assert ("at most 180 ns over 40 checks: stamps within 240 ns of it by the checks (stated calibration error "
            "12,372 ns; 0 checks beyond it)") in stamp_clock_line(clocks)
    clocks["app"]["drift_over_error"] = 2   # CLOCK_REALTIME stepped: the checks bound nothing
    assert "stamps within" not in stamp_clock_line(clocks)
