"""The Spark engine replay on an OBI v6 capture (today's market, A and B copies with the
synth's gaps and bad checksums): each line through the feed handler's OBI rules, so every
MSN one good copy holds is accepted once and those lost on both copies are missed, and the
engines write their tables. Slow: a Spark session."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from pipeline_support import make_obi_capture
from spark_test_session import local_spark

from feedhandlers.captures import read_capture
from ops.spark.common.data_layout import DataLayout
from ops.spark.backtest.backtest_job import BacktestOptions, run_backtest
from ops.synth.manifest import load_manifest
from ops.synth.today.generator import FAULTS_FILE

pytestmark = pytest.mark.slow


def test_the_engine_replay_reads_obi(tmp_path: Path) -> None:
    capture = make_obi_capture(tmp_path, seconds=0.4, lines=4)
    date = str(load_manifest(capture).date)
    faults = pd.read_parquet(capture / FAULTS_FILE)
    lost = {(r.line, r.block_seq, c): r.msg_count for r in faults.itertuples() for c in r.copy}
    with local_spark("test-replay-obi") as spark:
        result = run_backtest(spark, DataLayout(tmp_path), [date], BacktestOptions(buckets=2, reconcile=False))
    assert result.exit_status == 0
    day = tmp_path / "backtest" / f"date={date}"
    lines = {r["line"]: r for r in pq.read_table(day / "lines").to_pylist()}
    assert sorted(lines) == [1, 2, 3, 4]
    for ln, r in lines.items():
        both = sum(n for (fl, s, c), n in lost.items() if fl == ln and c == "a" and (fl, s, "b") in lost)
        end = max(int.from_bytes(p[6:10], "big") + p[10] for p in read_capture(capture / f"line{ln:02d}.pcap").payloads())
        assert r["missed"] == both, ln
        assert r["accepted"] + r["missed"] == end, ln           # every MSN from 0 (Start of Day) once
        assert r["duplicates"] > 0
    assert pq.read_table(day / "config=default" / "underlyings").num_rows > 0
