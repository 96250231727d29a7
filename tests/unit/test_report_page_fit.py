"""The nightly report page as an operator reads it: latencies in the unit that reads best
(a 4.3 s queue is 4.31 s), no empty figure panel, no row whose every figure is zero, and
(in a real headless browser) every table within a 1,400 px page."""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from ops.spark.common.report_schemas import PERCENTILES
from ops.spark.common.report_tables import write_arrow
from ops.spark.report.report_html import render_report

HOPS = ("fh", "to_de", "de", "to_mc", "e2e_fh", "e2e_intended")


def _night(reports: Path) -> Path:
    def breakdown(run: str, hop: str, ns: float) -> dict:
        return {"date": "2026-12-01", "run_id": run, "sweep_id": "", "topology": "opra-fused", "config": "fused",
                "rate_x": 10.0, "target_pps": 240_000.0, "hop": hop, "hop_order": HOPS.index(hop), "count": 20_000,
                "mean_ns": ns, **{p.name: ns for p in PERCENTILES}, "min_ns": int(ns / 2), "max_ns": int(ns * 3)}

    queued = 4_311_744_000.0
    write_arrow(pa.Table.from_pylist(
        [breakdown(run, hop, queued if hop == "e2e_intended" and run.endswith("a") else 2_000.0 * (1 + i))
         for run in ("20261201T010203p111a", "20261201T020304p222b") for i, hop in enumerate(HOPS)]),
        reports, "latency_breakdown")
    write_arrow(pa.Table.from_pylist([
        {"date": "2026-12-01", "run_id": "20261201T010203p111a", "line": 1, "packets_received": 1_000,
         "messages_received": 14_000, "messages_missed": 0, "packets_duplicate": 0, "decode_errors": 0},
        {"date": "2026-12-01", "run_id": "20261201T010203p111a", "line": 2, "packets_received": 0,
         "messages_received": 0, "messages_missed": 0, "packets_duplicate": 0, "decode_errors": 0},
    ]), reports, "latency_ingest")
    long_path = "/srv/omdp-data/captures/2008-02-04/" + "very-long-directory-name/" * 6 + "line01-part0007.pcap"
    write_arrow(pa.Table.from_pylist([
        {"date": "2008-02-04", "path": long_path, "line": 1, "copy": "A", "part": 7, "bytes": 123_456_789,
         "packets": 1_234_567, "messages": 17_283_938, "bad_packets": 0, "status": "ok"}]), reports, "feeds_files")
    write_arrow(pa.Table.from_pylist([{
        "date": "2008-02-04", "lines": 24, "files": 48, "files_skipped": 0, "packets": 123_456_789,
        "messages": 1_728_395_046, "bad_packets": 0, "messages_per_packet": 14.0, "span_s": 23_400.0,
        "mean_pps": 24_000.0, "peak_1s_pps": 96_000.0, "peak_100ms_pps": 150_000.0, "peak_10ms_pps": 400_000.0,
        "mean_mps": 336_000.0, "peak_100ms_mps": 2_100_000.0, "peak_10ms_mps": 5_600_000.0, "rate_x": 1.0,
        "peak_1s_rate_x": 4.0}]), reports, "feeds_day")
    return render_report(reports, "2026-12-01")


def test_the_page_reads_in_human_units_without_empty_panels_or_zero_rows(tmp_path: Path) -> None:
    page = _night(tmp_path).read_text()
    assert "<td>4.31 s</td>" in page and "4,311" not in page
    assert "src='latency_breakdown.png'" in page and (tmp_path / "latency_breakdown.png").stat().st_size > 10_000
    for nothing in ("sweeps.png", "rate_profile.png", "messages_per_packet.png"):  # no sweep, no per-second feed rows
        assert nothing not in page and not (tmp_path / nothing).exists(), nothing
    ingest = page[page.index("<h3>Ingest per line</h3>"):page.index("<h3>Signals</h3>")]
    assert ingest.count("<tr>") == 2 and "1 row(s) whose every figure is zero left out" in ingest  # header and line 1


@pytest.mark.full  # a headless browser
def test_every_table_fits_a_1400_px_page(tmp_path: Path) -> None:
    chromium, driver_path = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("headless Chromium absent: apt-get install chromium chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    (tmp_path / "report").mkdir()
    page = _night(tmp_path / "report")
    opts = Options()
    opts.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--hide-scrollbars",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(driver_path))
    try:
        driver.get(page.as_uri())
        width = driver.execute_script("return document.documentElement.clientWidth")
        assert width <= 1400
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width
        rights = driver.execute_script(
            "return [...document.querySelectorAll('table, img')].map(t => t.getBoundingClientRect().right)")
        assert rights and max(rights) <= width, rights
    finally:
        driver.quit()
