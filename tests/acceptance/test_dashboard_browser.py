"""The dashboard page in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by selenium) loads the page of a running pipeline (the demo's
fused topology on a synthetic capture, losses injected), waits for the charts to fill,
saves a screenshot to test-artifacts/dashboard.png, and once the run has ended (its
figures standing still) checks that the numbers on the page are the API's. Skips where
Chromium is absent."""
from __future__ import annotations

import base64
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pipeline_support import CAPTURE_DATE

from ops.dashboard.serve import start_dashboard
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="headless Chromium absent: apt-get install chromium chromium-driver",
)


def chromium(profile: Path) -> object:
    """Headless Chromium with a fresh profile and nothing reaching out to the network."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1440,1000",
                 f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    return webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))


def wait_for(driver: object, script: str, timeout: float = 30.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"page never satisfied: {script}")


def shown(text: str) -> float | None:
    """A number as the page prints it ('1,234.5', '12.34', 'n/a' -> None)."""
    if text.strip() in ("n/a", "–"):
        return None
    return float(re.sub(r"[^0-9.\-]", "", text))


def assert_shown(text: str, value: float | None) -> None:
    """The page's text is the API's value, to the digits the page prints."""
    got = shown(text)
    if value is None:
        assert got is None, text
        return
    decimals = len(text.split(".")[1]) if "." in text else 0
    assert got == pytest.approx(value, abs=0.5 * 10 ** -decimals + 1e-9), (text, value)


def test_page_of_a_running_pipeline(data_dir: Path, tmp_path: Path) -> None:
    errors: list[BaseException] = []
    browser: dict[str, object] = {}

    def watch(url: str) -> None:
        """During the run: the page loads, fills its charts, and is photographed."""
        try:
            driver = browser["driver"]
            driver.get(url)
            check_charts_fill(driver)
            ARTIFACTS.mkdir(exist_ok=True)
            shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
            (ARTIFACTS / "dashboard.png").write_bytes(base64.b64decode(shot["data"]))
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)

    def hook(run_id: str, run_dir: Path) -> Callable[[], None]:
        server = start_dashboard(run_id, port=0, run_dir=run_dir)
        watcher = threading.Thread(target=watch, args=(server.url,))
        watcher.start()

        def stop() -> None:
            watcher.join()
            try:
                if "driver" in browser and not errors:
                    # the run has ended and its figures stand still: the page's are the API's
                    check_numbers(browser["driver"], server.url)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
            finally:
                server.stop()

        return stop

    pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE,
                       RunOptions(rate="1x", seconds=15.0, loop=True, sample_every=16, drops="A:0.002", seed=9))
    # The browser starts before the run: started beside the partitions' start it took most of
    # a short run to load its first page, and the run had ended before the page was read.
    browser["driver"] = chromium(tmp_path / "chromium-profile")
    browser["driver"].get("about:blank")
    try:
        run = run_pipeline(pp, data_dir, dashboard=hook)
    finally:
        if "driver" in browser:
            browser["driver"].quit()
    assert run.result.ok, run.result.failure
    if errors:
        raise errors[0]
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 50_000


def check_charts_fill(driver: object) -> None:
    """Snapshots arrive and every chart has data: four hops stacked with the measured end to
    end, seconds of percentile lines, one bar per feed line, a rate series. (A chart's data
    is an empty list until its first trace is drawn: the wait asks for data[0] first.)"""
    wait_for(driver, "return Number(document.body.dataset.snapshots || 0) >= 3")
    wait_for(driver, "const c = document.getElementById('chart-lines'); "
                     "return c.data && c.data[0] && c.data[0].x.length >= 3 && c.data[0].y.filter(v => v != null).length >= 2")
    assert driver.execute_script("return document.getElementById('chart-breakdown').data.length") == 5
    assert driver.execute_script("return document.getElementById('chart-breakdown').data[0].x.every(v => v > 0)")
    assert driver.execute_script("return document.getElementById('chart-ingest').data[0].y.length") == 4
    assert driver.execute_script("return document.getElementById('chart-rate').data[0].x.length") >= 2
    assert driver.execute_script("return document.querySelector('#live b').textContent") == "live"
    # normally mid-run; a machine slow to start the browser may see the run stopping already
    assert driver.execute_script("return document.getElementById('run-state').textContent") in ("running", "stopping")


def check_numbers(driver: object, url: str) -> None:
    """Compare the page with the API at the instant of the page's latest snapshot."""
    seen = int(driver.execute_script("return document.body.dataset.snapshots"))
    wait_for(driver, f"return Number(document.body.dataset.snapshots) >= {seen + 2}")
    ts = driver.execute_script("return document.body.dataset.snapshotTs")
    hops = {h["hop"]: h for h in httpx.get(url + "api/v1/latency", params={"window": "10s", "at": ts},
                                           timeout=10).json()["hops"]}
    ingest = httpx.get(url + "api/v1/ingest", timeout=10).json()
    signals = httpx.get(url + "api/v1/signals", params={"limit": 1}, timeout=10).json()
    run = httpx.get(url + "api/v1/run", timeout=10).json()

    rows = driver.execute_script(
        "return [...document.querySelectorAll('#hop-table tbody tr')].map(tr => [tr.dataset.hop, "
        "Object.fromEntries([...tr.querySelectorAll('td[data-field]')].map(td => [td.dataset.field, td.textContent]))])")
    assert [r[0] for r in rows] == list(hops)
    for hop, cells in rows:
        for field, text in cells.items():
            assert_shown(text, hops[hop][field])
    kpi = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.kpi [data-field]')].map(e => "
        "[e.closest('.kpi').id + '.' + e.dataset.field, e.textContent]))")
    assert_shown(kpi["kpi-e2e.p50_us"], hops["e2e"]["p50_us"])
    assert_shown(kpi["kpi-e2e.p99_us"], hops["e2e"]["p99_us"])
    assert_shown(kpi["kpi-e2e.count"], hops["e2e"]["count"])
    assert_shown(kpi["kpi-intended.p99_us"], hops["e2e_intended"]["p99_us"])
    assert_shown(kpi["kpi-missed.messages_missed"], ingest["totals"]["messages_missed"])
    assert ingest["totals"]["messages_missed"] > 0
    assert_shown(kpi["kpi-signals.total"], signals["total"])
    assert_shown(kpi["kpi-rate.target"], run["target_pps"])
    lines = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#line-table tbody tr')].map(tr => [tr.dataset.line, "
        "Object.fromEntries([...tr.querySelectorAll('td[data-field]')].map(td => [td.dataset.field, "
        "[td.textContent, td.className]]))]))")
    for row in ingest["lines"]:
        cells = lines[str(row["line"])]
        for field in ("messages_received", "messages_missed", "packets_duplicate", "decode_errors"):
            assert_shown(cells[field][0], row[field])
        assert (cells["messages_missed"][1] == "bad") == (row["messages_missed"] > 0), "missed messages highlighted"
    if signals["signals"]:
        shown_series = driver.execute_script("return document.querySelector('#signals li .series').textContent")
        assert shown_series == signals["signals"][0]["series"]
