"""The dashboard page in headless Chromium on a short run of real parts
(tests/dashboard_support.py): the documented screenshot command completes for a finished
run and for a live one (the stream ends), and the charts draw what they claim - y tick
labels on the per-second chart when the data sit within one decade, no legend entry for a
line with nothing to draw, the replayer's achieved rate drawn, the ingest chart's x labels
the whole line numbers and its missed axis whole numbers. Skips where Chromium is absent."""
from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import LiveFeed

from ops.dashboard.serve import DashboardServer, start_dashboard

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = [
    pytest.mark.full,  # a 3 s run and a browser
    pytest.mark.skipif(not CHROMIUM, reason="headless Chromium absent: apt-get install chromium chromium-driver"),
]


def screenshot(url: str, out: Path, timeout: float = 90.0) -> subprocess.CompletedProcess[bytes]:
    """The screenshot command of docs/dashboard.md ("Screenshots")."""
    return subprocess.run(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1440,1500",
         f"--user-data-dir={out.parent / 'profile'}", f"--screenshot={out}", "--virtual-time-budget=8000", url],
        capture_output=True, timeout=timeout, check=False, cwd=out.parent)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardServer]:
    feed = LiveFeed(tmp_path_factory.mktemp("finished") / "run", pps=1200.0).start()
    time.sleep(3.2)
    feed.stop()
    with start_dashboard(feed.run_dir, port=0) as server:
        yield server


def test_screenshot_of_a_finished_run_completes(finished: DashboardServer, tmp_path: Path) -> None:
    out = tmp_path / "finished.png"
    started = time.monotonic()
    r = screenshot(finished.url, out)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert out.stat().st_size > 50_000
    assert time.monotonic() - started < 60


def test_screenshot_of_a_live_run_completes(tmp_path: Path) -> None:
    feed = LiveFeed(tmp_path / "run", pps=1200.0).start()
    try:
        with start_dashboard(feed.run_id, port=0) as server:
            feed.wait_running(1.5, since_start=True)
            out = tmp_path / "live.png"
            r = screenshot(server.url + "?snapshots=2", out)
            assert r.returncode == 0, r.stderr.decode()[-2000:]
            assert out.stat().st_size > 50_000
    finally:
        feed.stop()


@pytest.fixture(scope="module")
def page(finished: DashboardServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    if not CHROMEDRIVER:
        pytest.skip("chromedriver absent: apt-get install chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--no-first-run", "--window-size=1440,1500",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
    try:
        driver.get(finished.url)
        deadline = time.monotonic() + 30
        while not driver.execute_script("return document.body.dataset.streamEnded === '1'"):
            assert time.monotonic() < deadline, "the finished run's stream never ended"
            time.sleep(0.2)
        yield driver
    finally:
        driver.quit()


def tick_labels(driver: object, chart: str, axis: str) -> list[str]:
    return driver.execute_script(
        f"return [...document.querySelectorAll('#{chart} .{axis}tick text')].map(t => t.textContent)")


def legend(driver: object, chart: str) -> list[str]:
    return driver.execute_script(
        f"return [...document.querySelectorAll('#{chart} .legend .traces .legendtext')].map(t => t.textContent)")


def test_the_runs_charts_draw(page: object) -> None:
    assert len(tick_labels(page, "chart-lines", "y")) >= 2
    drawn = page.execute_script("return document.getElementById('chart-lines').data.map(t => t.name)")
    assert drawn and legend(page, "chart-lines") == drawn
    rate = page.execute_script("return document.getElementById('chart-rate').data.map(t => [t.name, t.y])")
    achieved = [y for name, y in rate if name.startswith("replayer achieved")]
    assert achieved and len([v for v in achieved[0] if v]) >= 2, rate
    lines = page.execute_script("return [...document.querySelectorAll('#line-table tbody tr')].map(tr => tr.dataset.line)")
    assert tick_labels(page, "chart-ingest", "x") == lines


def test_per_second_chart_within_one_decade(page: object) -> None:
    """20 to 70 us: labelled ticks; p99 and p99.9 n/a in every second: not in the legend, named in the note."""
    page.execute_script("""
        st.history.clear();
        for (let i = 0; i < 8; i++) {
          const e2e = {p50_us: 20 + i, p90_us: 40 + i, p99_us: null, p99_9_us: null};
          addSecond({second: 1700000000 + i, hops: {e2e, e2e_intended: {p99_us: i === 3 ? null : 60 + i}}});
        }
        renderLines();""")
    labels = tick_labels(page, "chart-lines", "y")
    assert len([t for t in labels if t.strip()]) >= 3, labels
    assert all(20 * 0.85 <= float(t) <= 67 * 1.15 for t in labels), labels
    assert legend(page, "chart-lines") == ["p50", "p90", "p99 from intended"]
    note = page.execute_script("return document.getElementById('lines-note').textContent")
    assert "p99, p99.9" in note


def test_ingest_chart_of_24_lines_without_missed(page: object) -> None:
    page.execute_script("""
        renderIngest({lines: Array.from({length: 24}, (_, i) => ({line: i + 1, messages_per_s: 14000 + 10 * i,
          packets_per_s: 1000, messages_received: 1e6, messages_missed: 0, missed_ratio: 0, packets_duplicate: 0,
          decode_errors: 0}))});""")
    assert tick_labels(page, "chart-ingest", "x") == [str(i) for i in range(1, 25)]
    inside = page.execute_script("""
        const box = document.getElementById('chart-ingest').getBoundingClientRect();
        return [...document.querySelectorAll('#chart-ingest .xtick text')].every(t => {
          const r = t.getBoundingClientRect(); return r.bottom <= box.bottom && r.top >= box.top; });""")
    assert inside
    assert tick_labels(page, "chart-ingest", "y2") == ["0", "1"]


def test_page_with_a_read_token_shows_the_figures(tmp_path: Path, finished: DashboardServer) -> None:
    """A dashboard with a read token: the page given ?token= gets its snapshot; without, none."""
    with start_dashboard(finished.source, port=0, read_token="tok") as guarded:
        def dom(query: str) -> str:
            r = subprocess.run(
                [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p'}",
                 "--virtual-time-budget=8000", "--dump-dom", guarded.url + query],
                capture_output=True, timeout=90, check=False, cwd=tmp_path, text=True)
            assert r.returncode == 0, r.stderr[-2000:]
            return r.stdout

        assert 'data-snapshots="1"' in dom("?token=tok")
        without = dom("")
        assert "data-snapshots" not in without
        # the page says how to pass the token instead of staying on "connecting"
        assert '<section class="token-note" id="token-note">' in without, without[:3000]
        assert ">token needed<" in without and f"{guarded.url}?token=TOKEN" in without
        assert ">wrong token<" in dom("?token=nope")


def test_a_finished_run_is_not_live(page: object) -> None:
    """Its pill says how it ended and the dot is not the green live one, whether the run is
    read from its directory or from the stats segment of a run that just ended."""
    live = "return [document.getElementById('live').className, document.querySelector('#live b').textContent]"
    assert page.execute_script(live) == ["live ", "finished"]
    assert page.execute_script("return document.getElementById('run-state').textContent") == "ended"
    page.execute_script("""renderHeader({run_id: 'r', state: 'done', source: 'live', topology: 't', config: 'c',
                                          uptime_s: 30, heartbeat_age_s: 0.5});""")
    assert page.execute_script(live) == ["live ", "finished"]
    page.execute_script("""renderHeader({run_id: 'r', state: 'running', source: 'live', topology: 't', config: 'c',
                                          uptime_s: 30, heartbeat_age_s: 0.5});""")
    assert page.execute_script(live) == ["live on", "live"]


def test_operator_counters_show_rates_with_totals_beside(page: object) -> None:
    page.execute_script("""renderOperators({operators: [
        {name: 'fh', kind: 'feed_handler', state: 'running', cpu: 1, process_cpu_percent: null, occupancy: null,
         full_events: 0, spins: 0, drops: 0, peer_state: null,
         counters: [{name: 'messages', value: 1200000, per_s: 40000}, {name: 'gaps', value: 7, per_s: null}]}]});""")
    cell = page.execute_script("return document.querySelector('#op-table tbody tr td:last-child').textContent")
    assert "messages 40,000/s (1,200,000)" in cell and "gaps 7 total" in cell, cell
    assert "per second" in page.execute_script("return document.querySelector('#op-table th:last-child').textContent")


def test_api_docs_render_offline(page: object, finished: DashboardServer) -> None:
    """Swagger UI comes from this server: the operations list draws with no network."""
    page.get(finished.url + "docs")
    deadline = time.monotonic() + 60  # a hang guard: the wait ends when the page draws
    while not page.execute_script("return document.querySelectorAll('.opblock').length"):
        assert time.monotonic() < deadline, "Swagger UI drew no operation"
        time.sleep(0.2)
    paths = page.execute_script("return [...document.querySelectorAll('.opblock-summary-path')].map(e => e.textContent)")
    assert any("/api/v1/latency" in p for p in paths), paths
