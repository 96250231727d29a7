"""The market windows computed offline (ops/spark/market/market_job.py) over a capture equal,
key for key and window for window, the windows the live pipeline's leaders merged from the
same capture (``opra_fused_market --no-loop``): the job's reconciliation counts every key
equal and none different, and so does a direct comparison of the two tables. A live run
whose windows were altered is a counted mismatch and the exit status 1. Slow: a live run
and a Spark session."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from spark_test_session import local_spark

from ops.market.window_table import compare_windows, live_tables
from ops.spark.common.data_layout import DataLayout
from ops.spark.market.market_job import run_market, summary_lines, write_report_tables
from ops.spark.report.market_report import market_section
from ops.synth.generator import SynthConfig, synthesize

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DATE = "2008-02-04"


@pytest.fixture(scope="module")
def spark():
    with local_spark("test-market") as s:
        yield s


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("market")
    synthesize(SynthConfig(data=root, date=dt.date.fromisoformat(DATE), seconds=1.5, num_lines=4, seed=7, b_copy=True,
                           progress=False))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    live = subprocess.run([sys.executable, "-P", "-m", "ops.cli.main", "run", "opra_fused_market", "--data", str(root),
                           "--capture-date", DATE, "--rate", "4x", "--no-loop"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert live.returncode == 0, live.stderr[-3000:]
    return root


def test_offline_windows_equal_the_live_run(spark, data: Path) -> None:
    result = run_market(spark, DataLayout(data), [DATE])
    (rec,) = result.reconciliation
    assert rec["status"] == "ok" and result.exit_status == 0, summary_lines(result)
    assert rec["keys"] > 100 and rec["equal"] == rec["keys"] and rec["windows"] >= 2
    assert rec["differ"] == rec["offline_only"] == rec["live_only"] == rec["messages_differ"] == 0
    day = data / "market" / f"date={DATE}"
    aggs, counts = pq.read_table(day / "aggregates.parquet"), pq.read_table(day / "messages.parquet")
    (live_path,) = data.glob("runs/*/*/market_windows.parquet")
    live_aggs, live_counts, incomplete = live_tables(pq.read_table(live_path))
    assert incomplete == 0
    assert aggs.equals(live_aggs) and counts.equals(live_counts)
    assert compare_windows((aggs, counts), (live_aggs, live_counts))["equal"] == aggs.num_rows
    assert 0 < sum(counts.column("messages").to_pylist()) <= result.messages  # quotes and trades of all decoded

    # the nightly report's table: a row per window, its totals those of the live run's windows
    write_report_tables(data / "reports" / DATE, result)
    rows = pq.read_table(data / "reports" / DATE / "market_windows.parquet").to_pylist()
    assert [r["messages"] for r in rows] == live_counts.column("messages").to_pylist()
    assert all(r["quotes"] + r["trades"] == r["messages"] for r in rows)
    page = market_section(data / "reports" / DATE)
    assert "every live run's market windows equal the offline ones" in page and rows[0]["start"] in page


def test_an_altered_live_run_is_a_mismatch(spark, data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(data / "captures", copy / "captures")
    shutil.copytree(data / "runs", copy / "runs")
    (path,) = copy.glob("runs/*/*/market_windows.parquet")
    t = pq.read_table(path)
    first_agg = pc.index(t.column("kind"), "agg").as_py()
    quotes = t.column("quotes").to_pylist()
    quotes[first_agg] += 1
    t = t.set_column(t.schema.get_field_index("quotes"), "quotes", pa.array(quotes, pa.int64()))
    pq.write_table(t, path)
    result = run_market(spark, DataLayout(copy), [DATE])
    (rec,) = result.reconciliation
    assert rec["status"] == "differs" and rec["differ"] == 1 and rec["equal"] == rec["keys"] - 1
    assert result.exit_status == 1
