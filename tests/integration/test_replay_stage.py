"""The replay's two stages give what one pass over the day gives: the day x line decode
tasks' staged records, merged per bucket, are the records the feed handler's rules give for
the whole day in arrival order for that bucket; and an engine fed them a chunk at a time
(with pricing every 100 ms of capture time) signals, refreshes and fits smiles as when fed
them at once. Slow: a synthetic capture and pricing."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from ops.spark.data_layout import DataLayout
from ops.spark.replay_config import ReplayConfig
from ops.spark.replay_engine import ConfigRunner
from ops.spark.replay_feed import OfflineFeedHandler, decode_line, read_packets
from ops.spark.replay_job import plan_day
from ops.spark.replay_stage import read_bucket, unpack
from ops.synth.generator import SynthConfig, synthesize

pytestmark = pytest.mark.slow
DATE = "2008-02-04"
FIELDS = ["line", "msg_seq", "root", "underlying_id", "bid_px", "offer_px", "bid_size", "category", "time"]


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stage")
    synthesize(SynthConfig(data=root, date=dt.date.fromisoformat(DATE), seconds=0.6, num_lines=3, seed=7, b_copy=True,
                           anomalies_per_second={"crossed": 6.0, "off_smile": 6.0, "parity": 4.0}, progress=False))
    return root


def test_staged_and_merged_equals_one_pass_over_the_day(day: Path, tmp_path: Path) -> None:
    plan = plan_day(DataLayout(day), DATE, 2)
    for lf in plan.lines:
        decode_line(lf, plan.routes, str(tmp_path))
    sources, pkts, _ = read_packets(plan.lines, [])
    for bucket in (0, 1):
        want = OfflineFeedHandler(plan.routes).run(sources, pkts, bucket)
        staged, order = read_bucket(tmp_path, bucket, [lf.line for lf in plan.lines])
        got = unpack(staged, order)
        assert len(got) == len(want) > 0
        for f in FIELDS:
            assert np.array_equal(got[f], want[f]), f
        assert np.array_equal(got["hdr"]["stamps"]["fh_in"], want["hdr"]["stamps"]["fh_in"])
        assert np.array_equal(got["hdr"]["flags"], want["hdr"]["flags"])


def test_feeding_in_chunks_equals_feeding_at_once(day: Path) -> None:
    plan = plan_day(DataLayout(day), DATE, 1)
    sources, pkts, _ = read_packets(plan.lines, [])
    records = OfflineFeedHandler(plan.routes).run(sources, pkts, 0)
    runs = []
    for chunk in (len(records), 777):
        runner = ConfigRunner(ReplayConfig(), DATE, 0)
        for s in range(0, len(records), chunk):
            runner.feed(records[s:s + chunk])
        runs.append(runner.finish())
    whole, chunked = runs
    assert whole.refreshes == chunked.refreshes > 3
    body = [n for n in whole.signals.dtype.names if n != "hdr"]   # the header carries wall-clock stamps
    assert len(whole.signals) > 0 and np.array_equal(whole.signals[body], chunked.signals[body])
    fh_in = [s["hdr"]["stamps"]["fh_in"] for s in (whole.signals, chunked.signals)]
    assert np.array_equal(*fh_in)
    assert whole.smiles == chunked.smiles and len(whole.smiles) > 0
