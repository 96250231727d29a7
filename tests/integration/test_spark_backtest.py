"""The backtest job on a real local Spark session: a short synthetic capture (A and B copies)
backtested offline equals a live fused ``omdp run ... --no-loop`` of it at 5x (0 mismatches);
a run whose signals disagree is a flagged mismatch; the what-if decodes each file once
whatever the number of configurations; the tables do not depend on the number of buckets;
a corrupt capture file is reported and the day still
runs from the other copy. Slow: a live run, a Spark session, several jobs."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from spark_test_session import local_spark

from ops.spark.backtest.backtest_config import BacktestConfig
from ops.spark.backtest.backtest_job import BacktestOptions, run_backtest, summary_lines
from ops.spark.common.data_layout import DataLayout
from ops.synth.generator import SynthConfig, synthesize

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DATE = "2008-02-04"
RATES = {"locked": 4.0, "crossed": 4.0, "off_smile": 2.0, "parity": 2.0}


def _omdp(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-P", "-c", "from ops.cli.main import main; main()", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def spark():
    with local_spark("test-backtest") as s:
        yield s


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("backtest")
    synthesize(SynthConfig(data=root, date=dt.date.fromisoformat(DATE), seconds=1.0, num_lines=4, seed=5, b_copy=True,
                           anomalies_per_second=RATES, progress=False))
    live = _omdp("run", str(ROOT / "ops/topologies/opra_fused.toml"), "--data", str(root), "--capture-date", DATE,
                 "--rate", "5x", "--no-loop", "--seconds", "20")
    assert live.returncode == 0, live.stderr[-3000:]
    return root


def _live_signals(root: Path) -> Path:
    (path,) = root.glob("runs/*/*/signals.parquet")
    return path


def test_backtest_equals_the_live_run(spark, data: Path) -> None:
    result = run_backtest(spark, DataLayout(data), [DATE])
    (rec,) = result.reconciliation
    live = pq.read_table(_live_signals(data)).to_pylist()
    book = [s for s in live if s["kind"] in ("crossed", "locked")]
    assert len(book) > 0
    assert rec["mismatches"] == 0 and rec["status"] == "ok" and result.exit_status == 0
    assert rec["matched"] == len(book) and rec["rate_x"] == 5.0
    assert rec["matched"] + rec["explained_by_off_smile"] == rec["reference_signals"]
    assert rec["priced_checked"] == len(live) - len(book)
    day = data / "backtest" / f"date={DATE}"
    for table in ("signals", "underlyings", "smiles", "nbbo"):
        assert pq.read_table(day / "config=default" / table).num_rows > 0, table
    assert not (day / "config=reference" / "nbbo").exists()
    lines = pq.read_table(day / "lines").to_pylist()
    assert [r["line"] for r in lines] == [1, 2, 3, 4]
    assert all(r["missed"] == 0 and r["duplicates"] > 0 and r["packets_b"] == r["packets_a"] for r in lines)
    sig = pq.read_table(day / "config=default" / "signals")
    assert sig.schema.field("ts_ns").type == "int64"


def test_a_run_that_disagrees_is_a_mismatch(spark, data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "d"
    shutil.copytree(data / "captures", copy / "captures")
    shutil.copytree(data / "runs", copy / "runs")
    path = _live_signals(copy)
    table = pq.read_table(path)
    rows = table.to_pylist()
    first = next(i for i, r in enumerate(rows) if r["kind"] == "crossed")
    rows[first]["value"] += 0.01       # a price the book never had
    del rows[-1]                        # a signal the run lost
    pq.write_table(type(table).from_pylist(rows, schema=table.schema), path)
    result = run_backtest(spark, DataLayout(copy), [DATE])
    assert result.exit_status == 1
    assert result.reconciliation[0]["mismatches"] >= 2
    bad = pq.read_table(copy / "backtest" / f"date={DATE}" / "reconciliation_mismatches").to_pylist()
    assert any("value" in b["reason"] for b in bad)


def test_what_if_decodes_each_file_once(spark, data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "d"
    shutil.copytree(data / "captures", copy / "captures")
    configs = (BacktestConfig(), BacktestConfig(name="wide", pricing_knobs={"band_abs": 5.0, "band_rel": 1.0}),
               BacktestConfig(name="book-only", pricing=False))
    result = run_backtest(spark, DataLayout(copy), [DATE], BacktestOptions(configs=configs, buckets=2))
    files = sorted(p.name for p in (copy / "captures" / DATE).glob("*.pcap"))
    decode = [t for t in result.tasks if t["stage"] == "decode"]
    engines = [t for t in result.tasks if t["stage"] == "engines"]
    assert [t["line"] for t in decode] == [1, 2, 3, 4] and [t["bucket"] for t in engines] == [0, 1]
    # each file decoded once in the whole job (A and B of a line in its one task), never by
    # an engine task, whatever the number of configurations and buckets
    assert [t["files_decoded"] for t in decode] == [2, 2, 2, 2] and len(files) == 8
    assert [t["files_decoded"] for t in engines] == [0, 0]
    assert sum(t["messages"] for t in decode) == sum(t["messages"] for t in engines) == result.messages > 0
    assert not (copy / "backtest" / f"date={DATE}" / "_stage").exists()   # staged records removed
    by = {c["config"]: c for c in result.configs}
    assert set(by) == {"default", "wide", "book-only"}
    assert by["wide"]["off_smile"] <= by["default"]["off_smile"]
    assert by["book-only"]["off_smile"] == by["book-only"]["parity"] == 0 and by["book-only"]["refreshes"] == 0
    # scored against the capture's ground truth: every injected event counted; without pricing
    # only the events that lock or cross the market can be found
    truth = pq.read_table(copy / "captures" / DATE / "ground_truth.parquet").to_pydict()
    events = len(set(truth["event"]))
    book_events = len({e for e, k, st in zip(truth["event"], truth["kind"], truth["nbbo_state"])
                       if k in ("locked", "crossed") or st in ("locked", "crossed")})
    for c in by.values():
        assert c["events"] == events and 0.0 <= c["precision"] <= 1.0 and 0.0 <= c["recall"] <= 1.0
        assert c["true_positives"] <= c["signals"] and c["detected"] <= events
    assert by["default"]["recall"] > 0 and by["default"]["detected"] > by["book-only"]["detected"] > 0
    assert by["book-only"]["detected"] <= book_events < events
    day = copy / "backtest" / f"date={DATE}"
    for name in ("default", "wide", "book-only"):
        nbbo = pq.read_table(day / f"config={name}" / "nbbo")
        assert nbbo.num_rows == by[name]["nbbo_changes"] > 0 and nbbo.schema.field("ts_ns").type == "int64"


def _sorted_rows(table_dir: Path) -> list[tuple]:
    rows = pq.read_table(table_dir).drop_columns(["engine"] if "engine" in pq.read_schema(
        next(table_dir.glob("*.parquet"))).names else []).to_pylist()
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def test_the_answer_does_not_depend_on_the_buckets(spark, data: Path, tmp_path: Path) -> None:
    """Each bucket's engine holds every series and group staged for it, and the pricing
    refreshes on the same capture-time boundaries in every bucket: one bucket and three give
    the same tables. A configuration's own max_series is kept (and counted when too small)."""
    out = {}
    for buckets in (1, 3):
        copy = tmp_path / f"b{buckets}"
        shutil.copytree(data / "captures", copy / "captures")
        result = run_backtest(spark, DataLayout(copy), [DATE], BacktestOptions(buckets=buckets, reconcile=False))
        engines = [t for t in result.tasks if t["stage"] == "engines"]
        need = [sum(json.loads(t["sizes_json"])["series"][b] for t in result.tasks if t["stage"] == "decode")
                for b in range(buckets)]
        assert [json.loads(t["sizes_json"])["default"][0] for t in engines] == need and min(need) > 0
        assert f"engines: {buckets} bucket{'s' if buckets > 1 else ''} of {' / '.join(f'{n:,}' for n in need)} series" \
            in "\n".join(summary_lines(result))
        assert result.configs[0]["table_full"] == 0
        out[buckets] = {t: _sorted_rows(copy / "backtest" / f"date={DATE}" / "config=default" / t)
                        for t in ("signals", "smiles", "underlyings", "nbbo")}
    assert all(len(rows) > 0 for rows in out[1].values())
    assert out[1] == out[3]
    small = run_backtest(spark, DataLayout(copy), [DATE], BacktestOptions(
        configs=(BacktestConfig(max_series=64, pricing=False, nbbo=False),), buckets=3, reconcile=False))
    assert small.configs[0]["table_full"] > 0


def test_a_corrupt_capture_file_is_skipped_and_the_day_runs(spark, data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "d"
    shutil.copytree(data / "captures", copy / "captures")
    bad = copy / "captures" / DATE / "line02.pcap"
    bad.write_bytes(b"this is not a pcap file at all" * 10)
    (copy / "captures" / DATE / "ground_truth.parquet").unlink()      # a capture without ground truth
    result = run_backtest(spark, DataLayout(copy), [DATE], BacktestOptions(reconcile=False))
    skipped = pq.read_table(copy / "backtest" / f"date={DATE}" / "skipped_files").to_pylist()
    assert [Path(s["path"]).name for s in skipped] == ["line02.pcap"] and skipped[0]["action"] == "skipped"
    lines = {r["line"]: r for r in pq.read_table(copy / "backtest" / f"date={DATE}" / "lines").to_pylist()}
    assert lines[2]["packets_a"] == 0 and lines[2]["accepted"] > 0       # line 2 from its B copy
    assert result.messages > 0 and result.configs[0]["signals"] > 0
    assert result.configs[0]["precision"] is None and result.configs[0]["recall"] is None


def test_nightly_named_by_capture_date_covers_its_runs(spark, data: Path, tmp_path: Path) -> None:
    """Runs are filed by the date they were made; naming the capture's date still finds the
    run of it, backtests the capture, reconciles, and the page says how the date was read."""
    from ops.spark.report.nightly_job import run_nightly
    from ops.spark.report.backtest_report import resolve_night

    copy = tmp_path / "d"
    shutil.copytree(data / "captures", copy / "captures")
    shutil.copytree(data / "runs", copy / "runs")
    layout = DataLayout(copy)
    (run_dir,) = (copy / "runs").glob("*/*")
    night = resolve_night(layout, DATE)
    assert night.read_as == "capture date" and night.capture_dates == [DATE] and night.runs_made == 0
    assert night.runs_of_captures == {run_dir.name: run_dir.parent.name}
    made = resolve_night(layout, run_dir.parent.name)
    assert made.read_as == "run date" and made.capture_dates == [DATE] and made.runs_made == 1
    result = run_nightly(spark, layout, DATE)
    assert result.exit_status == 0 and result.backtest is not None
    assert [r["run_id"] for r in result.backtest.reconciliation] == [run_dir.name]
    page = result.page.read_text()
    assert "read as: <b>capture date</b>" in page and run_dir.name in page
    assert "every live run reconciled agrees with the backtest" in page
    # the run's latency tables are in the capture date's report although it is filed under
    # the date it was made
    assert result.latency.runs == 1
    runs = pq.read_table(copy / "reports" / DATE / "latency_runs.parquet").to_pylist()
    assert [r["run_id"] for r in runs] == [run_dir.name]
    assert pq.read_table(copy / "reports" / DATE / "latency_breakdown.parquet").num_rows > 0
    assert "precision" in page and "NBBO changes" in page
    # named by the date the run was made: the same run, and the capture it replayed
    made_night = run_nightly(spark, layout, run_dir.parent.name)
    assert made_night.exit_status == 0 and made_night.backtest is not None and made_night.backtest.dates == [DATE]
    assert made_night.latency.runs == 1 and [r["run_id"] for r in made_night.backtest.reconciliation] == [run_dir.name]
    made_page = made_night.page.read_text()
    assert "read as: <b>run date</b>" in made_page
    # ... and its feeds are the capture's (the run date has no captures of its own)
    assert [f.date for f in made_night.feeds] == [DATE] and made_night.feeds[0].messages > 0
    made_day = pq.read_table(copy / "reports" / run_dir.parent.name / "feeds_day.parquet").to_pylist()
    assert [(d["date"], d["messages"]) for d in made_day] == [(DATE, made_night.feeds[0].messages)]
    assert "no captures this night" not in made_page and f"<td>{DATE}</td>" in made_page
