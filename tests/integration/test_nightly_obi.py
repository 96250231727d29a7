"""The nightly jobs end to end on today's feed: ``omdp synth --market today`` writes a tiny OBI
v6 capture (two lines, A and B copies, injected gaps and bad checksums), one run replays it
through the pipeline, and ``nightly`` for that date - feeds, latency, backtest, report - runs
over both. The feeds tables give the OBI files' figures ``omdp capture stats`` gives of the
same capture (packets, messages, malformed packets per line, the category mix), the bad
checksums and lost blocks the synth injected into each copy, the latency tables the run,
the backtest reconciles with the run, and the page shows the files as OBI v6. Slow: a
pipeline run and a Spark session."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from spark_test_session import local_spark

from ops.capture.stats import capture_stats
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.spark.common.data_layout import DataLayout
from ops.spark.common.report_tables import table_path
from ops.spark.report.nightly_job import run_nightly
from ops.synth.today.generator import FAULTS_FILE
from ops.topologies import topology_path

pytestmark = pytest.mark.slow

DATE = "2026-03-02"


def test_the_nightly_jobs_report_an_obi_capture(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-P", "-m", "ops.cli.main", "synth", "--market", "today", "--data", str(tmp_path),
                    "--date", DATE, "--seconds", "0.4", "--rate", "0.005x", "--num-lines", "2", "--underlyings", "120",
                    "--series", "8000", "--b-copy", "--gaps", "10", "--bad-checksums", "10", "--quiet"],
                   check=True, timeout=300)
    capture = tmp_path / "captures" / DATE
    run = run_pipeline(plan_pipeline(topology_path("opra_fused"), tmp_path, DATE,
                                     RunOptions(rate="1x", seconds=None, loop=False, sample_every=16)), tmp_path)
    assert run.result.ok, run.result.failure
    layout = DataLayout(tmp_path)
    with local_spark("test-nightly-obi") as spark:
        night = run_nightly(spark, layout, DATE)
    assert night.exit_status == 0
    reports = layout.reports(DATE)

    def table(name: str) -> pd.DataFrame:
        return pq.read_table(table_path(reports, name)).to_pandas()

    stats = capture_stats(capture, "a")
    faults = pd.read_parquet(capture / FAULTS_FILE)
    files = table("feeds_files").set_index("line")
    assert sorted(files.index) == [1, 2]
    for ln, s in stats.lines.items():
        f = files.loc[ln]
        assert (f["feed"], f["status"], f["copy"]) == ("obi-v6", "ok", "A")
        assert (f["packets"], f["messages"], f["bad_packets"]) == (s.packets, s.messages, s.bad_packets), ln
        lost = faults[(faults.line == ln) & faults["copy"].str.contains("a")]
        assert f["bad_checksums"] == int((lost.kind == "checksum").sum()), ln
        assert f["gap_messages"] <= int(lost.msg_count.sum()), ln
    assert files["bad_checksums"].sum() > 0 and files["gaps"].sum() > 0
    day = table("feeds_day").iloc[0]
    assert (day["messages"], day["bad_packets"]) == (stats.total.messages, stats.total.bad_packets)
    assert day["gaps"] == files["gaps"].sum()
    mix = table("feeds_category_mix")
    assert dict(zip(mix.category, mix.messages)) == stats.total.categories

    runs = table("latency_runs")
    assert run.result.run_id in set(runs.run_id)
    assert run.result.run_id in set(table("latency_breakdown").run_id)
    assert night.backtest is not None and not night.backtest.mismatches
    page = night.page.read_text()
    assert "obi-v6" in page and run.result.run_id in page
