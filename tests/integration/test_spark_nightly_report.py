"""``nightly`` on a real local SparkSession: a synthetic capture (``omdp synth``, rotated
files, A and B copies) and synthetic runs go in; the report comes out: Parquet tables that
read back with their schemas, non-empty PNG figures, an HTML page naming what was skipped
and what regressed, and an exit status of 1 because a regression was flagged."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow.parquet as pq
import pytest

from ops.spark.common.data_layout import DataLayout
from ops.spark.latency.latency_job import run_latency
from ops.spark.report.nightly_job import EXIT_REGRESSION, NightlyResult, run_nightly
from ops.spark.report.report_html import TABLES
from ops.spark.common.report_schemas import (
    FEEDS_CATEGORY_MIX, FEEDS_DAY, FEEDS_FILES, FEEDS_MESSAGES_PER_PACKET, FEEDS_RATE_PER_SECOND, FEEDS_RATE_PROFILE,
    FEEDS_TOP_UNDERLYINGS, LATENCY_BREAKDOWN, LATENCY_INGEST, LATENCY_REGRESSIONS, LATENCY_RUNS, LATENCY_SIGNALS,
    LATENCY_SWEEPS, SKIPPED_FILES,
)
from ops.spark.common.report_tables import arrow_schema, table_path
from ops.spark.latency.synthetic_runs import DEFAULT_HOP_MEDIANS_NS, SyntheticRun, write_synthetic_run
from ops.synth.generator import SynthConfig, synthesize
from spark_test_session import local_spark

pytestmark = pytest.mark.full  # a Spark session

NIGHT0, NIGHT = "2008-02-03", "2008-02-04"
SCHEMAS = {
    "feeds_day": FEEDS_DAY, "feeds_rate_profile": FEEDS_RATE_PROFILE, "feeds_rate_per_second": FEEDS_RATE_PER_SECOND,
    "feeds_messages_per_packet": FEEDS_MESSAGES_PER_PACKET, "feeds_category_mix": FEEDS_CATEGORY_MIX,
    "feeds_top_underlyings": FEEDS_TOP_UNDERLYINGS, "feeds_files": FEEDS_FILES, "feeds_skipped_files": SKIPPED_FILES,
    "latency_breakdown": LATENCY_BREAKDOWN, "latency_runs": LATENCY_RUNS, "latency_sweeps": LATENCY_SWEEPS,
    "latency_regressions": LATENCY_REGRESSIONS, "latency_ingest": LATENCY_INGEST, "latency_signals": LATENCY_SIGNALS,
    "latency_skipped_files": SKIPPED_FILES,
}


@pytest.fixture(scope="module")
def spark():
    with local_spark("test-nightly-report") as s:
        yield s


def _runs(layout: DataLayout, date: str, de_scale: float) -> None:
    hops = dict(DEFAULT_HOP_MEDIANS_NS, de=DEFAULT_HOP_MEDIANS_NS["de"] * de_scale)
    for i, rate in enumerate((1.0, 3.0)):
        write_synthetic_run(
            layout.runs(date),
            SyntheticRun(f"fused-{rate:g}x", date, rate, duration_s=0.3, sweep_id="fused-sweep", sample_every=50,
                         backlog_ns_per_s=4e6 if rate == 3.0 else 0.0, hop_medians_ns=hops, seed=i),
        )


@pytest.fixture(scope="module")
def night(spark, tmp_path_factory) -> tuple[DataLayout, NightlyResult]:
    layout = DataLayout(tmp_path_factory.mktemp("omdp-data"))
    synthesize(SynthConfig(data=layout.root, date=dt.date.fromisoformat(NIGHT), seconds=0.5, rate=0.5, seed=5,
                           num_lines=3, b_copy=True, rotate_bytes=400_000, progress=False))
    (layout.captures(NIGHT) / "line09.pcap").write_bytes(b"\0" * 100)
    _runs(layout, NIGHT0, 1.0)
    run_latency(spark, layout, NIGHT0)
    _runs(layout, NIGHT, 2.5)  # the decision engine got 2.5 times slower
    return layout, run_nightly(spark, layout, NIGHT)


def test_every_table_reads_back_with_its_schema(night) -> None:
    layout, _ = night
    assert set(SCHEMAS) == set(TABLES)
    for name, schema in SCHEMAS.items():
        table = pq.read_table(table_path(layout.reports(NIGHT), name))
        assert table.schema.equals(arrow_schema(schema)), name
    day = pq.read_table(table_path(layout.reports(NIGHT), "feeds_day")).to_pylist()[0]
    assert day["lines"] == 3 and day["files_skipped"] == 1
    manifest = json.loads(layout.manifest(NIGHT).read_text())
    assert day["packets"] == manifest["rate"]["packets"] and day["messages"] == manifest["rate"]["messages"]
    # The day's "1x": its packets/s over all lines, in units of 24,000 (synth's own count
    # divides by the session seconds, ours by the first-to-last packet span).
    assert day["rate_x"] == pytest.approx(manifest["rate"]["packets_per_second"] / 24_000, rel=0.01)


def test_figures_are_png_and_not_empty(night) -> None:
    layout, _ = night
    for name in ("rate_profile", "messages_per_packet", "latency_breakdown", "sweeps"):
        data = (layout.reports(NIGHT) / f"{name}.png").read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_page_links_figures_and_names_skips_and_regressions(night) -> None:
    layout, result = night
    page = result.page.read_text()
    assert result.page == layout.reports(NIGHT) / "index.html"
    for name in ("rate_profile.png", "latency_breakdown.png", "sweeps.png", "messages_per_packet.png"):
        assert f"src='{name}'" in page
    assert "line09.pcap" in page and "regression(s) flagged" in page
    assert f"<td>{NIGHT0}</td>" in page  # the baseline night of the comparison
    head = page.index("<h2>Headline: latency from intended beside from fh_in</h2>")
    assert head < page.index("<h2>Feeds</h2>") and "queueing before the feed handler" in page[head:]
    assert "p99 µs" in page and "p99_ns" not in page, "the regression table in µs, as the header says"


def test_exit_status_is_one_on_a_flagged_regression(night) -> None:
    _, result = night
    assert result.exit_status == EXIT_REGRESSION
    assert {r["hop"] for r in result.latency.flagged} >= {"de", "e2e_fh"}
    assert all(r["baseline_date"] == NIGHT0 for r in result.latency.flagged)


def test_baseline_without_an_earlier_report(spark, tmp_path) -> None:
    """The earlier night has runs but its job never ran: its baseline comes from its runs."""
    layout = DataLayout(tmp_path / "omdp-data")
    _runs(layout, NIGHT0, 1.0)
    _runs(layout, NIGHT, 2.5)
    result = run_latency(spark, layout, NIGHT)
    assert not layout.reports(NIGHT0).exists(), "nothing is written for the earlier night"
    assert {r["hop"] for r in result.flagged} >= {"de", "e2e_fh"}
    assert all(r["baseline_date"] == NIGHT0 for r in result.flagged)
