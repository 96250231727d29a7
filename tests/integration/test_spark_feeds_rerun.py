"""A rerun of the feeds job for a date replaces that date's tick files and windows files
and nothing else: line partitions the rerun did not write and leftovers of failed task
attempts go, other dates stay byte for byte. Slow: three feeds runs."""
from __future__ import annotations

import datetime as dt

import pyarrow.parquet as pq
import pytest

from ops.spark.common.data_layout import DataLayout
from ops.spark.feeds.feeds_job import read_ticks, run_feeds
from ops.synth.generator import SynthConfig, synthesize
from spark_test_session import local_spark

pytestmark = pytest.mark.slow

DAY_A, DAY_B = "2008-02-04", "2008-02-05"


@pytest.fixture(scope="module")
def spark():
    with local_spark("test-feeds-rerun") as s:
        yield s


def _snapshot(layout: DataLayout, date: str, windows: bool = False) -> dict[str, tuple[int, int]]:
    day = (layout.tick_windows() if windows else layout.ticks()) / f"date={date}"
    return {str(p.relative_to(day)): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(day.rglob("*")) if p.is_file()}


def test_rerun_replaces_only_its_date(spark, tmp_path) -> None:
    layout = DataLayout(tmp_path)
    for date, lines in ((DAY_A, 2), (DAY_B, 1)):
        synthesize(SynthConfig(data=tmp_path, date=dt.date.fromisoformat(date), seconds=0.3, rate=0.3, seed=9,
                               num_lines=lines, progress=False))
        run_feeds(spark, layout, date)
    before_b = _snapshot(layout, DAY_B), _snapshot(layout, DAY_B, windows=True)
    assert set(_snapshot(layout, DAY_A)) == {"line=1/line01.parquet", "line=2/line02.parquet"}
    assert set(_snapshot(layout, DAY_A, windows=True)) == set(_snapshot(layout, DAY_A))

    for p in layout.captures(DAY_A).glob("line02*.pcap"):
        p.unlink()
    leftover = layout.ticks() / f"date={DAY_A}" / "line=1" / ".line01.parquet.999.tmp"
    leftover.write_bytes(b"half a file from a failed attempt")
    (layout.tick_windows() / f"date={DAY_A}" / "line=1" / ".line01.parquet.999.tmp").write_bytes(b"half")
    result = run_feeds(spark, layout, DAY_A)

    assert set(_snapshot(layout, DAY_A)) == {"line=1/line01.parquet"}
    assert set(_snapshot(layout, DAY_A, windows=True)) == {"line=1/line01.parquet"}
    assert (_snapshot(layout, DAY_B), _snapshot(layout, DAY_B, windows=True)) == before_b
    counts = {r["line"]: r["count"] for r in read_ticks(spark, layout, DAY_A).groupBy("line").count().collect()}
    assert counts == {1: result.messages}
    (day,) = pq.read_table(layout.reports(DAY_A) / "feeds_day.parquet").to_pylist()
    assert day["lines"] == 1 and day["messages"] == result.messages
