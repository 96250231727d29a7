"""The backtest's two stages give what one pass over the day gives: the day x line decode
tasks' staged records, merged per bucket, are the records the feed handler's rules give for
the whole day in arrival order for that bucket; and an engine fed them a chunk at a time
(with pricing every 100 ms of capture time) signals, refreshes and fits smiles as when fed
them at once; each line's sizes per bucket are the series and groups routed there; the NBBO-changes table is every change of a series' best bid or offer that a
plain model of the book finds. Slow: a synthetic capture and pricing."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from decision_engines.engine_records import EXCHANGES
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from ops.spark.backtest.backtest_config import BacktestConfig
from ops.spark.backtest.backtest_engine import ConfigRunner
from ops.spark.backtest.backtest_feed import OfflineFeedHandler, decode_line, read_packets
from ops.spark.backtest.backtest_job import plan_day
from ops.spark.backtest.backtest_nbbo import BACKTEST_NBBO_SCHEMA
from ops.spark.backtest.backtest_stage import read_bucket
from ops.spark.common.data_layout import DataLayout
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
        got = np.concatenate([c.copy() for c in read_bucket(tmp_path, bucket, [lf.line for lf in plan.lines]).merged(
            np.empty(1000, OPRA_MSG_DTYPE))])
        assert len(got) == len(want) > 0
        for f in FIELDS:
            assert np.array_equal(got[f], want[f]), f
        assert np.array_equal(got["hdr"]["stamps"]["fh_in"], want["hdr"]["stamps"]["fh_in"])
        assert np.array_equal(got["hdr"]["flags"], want["hdr"]["flags"])


def test_each_line_sizes_its_buckets_engines(day: Path, tmp_path: Path) -> None:
    """A line's sizes are the distinct series and (underlying, expiry) groups that the feed
    handler's rules route to each bucket: what the bucket's engine must hold of the line."""
    plan = plan_day(DataLayout(day), DATE, 3)
    for lf in plan.lines:
        sizes = decode_line(lf, plan.routes, str(tmp_path)).sizes
        sources, pkts, _ = read_packets([lf], [])
        for bucket in range(3):
            recs = OfflineFeedHandler(plan.routes).run(sources, pkts, bucket)
            series = {(bytes(r["root"]), int(r["expiry"]), int(r["strike_px"]), int(r["put_call"]),
                       int(r["underlying_id"])) for r in recs}
            groups = {(s[4], s[1]) for s in series}
            assert (sizes.series[bucket], sizes.groups[bucket]) == (len(series), len(groups))
        assert sum(sizes.series) > 100 and min(sizes.series) > 0


def test_feeding_in_chunks_equals_feeding_at_once(day: Path) -> None:
    plan = plan_day(DataLayout(day), DATE, 1)
    sources, pkts, _ = read_packets(plan.lines, [])
    records = OfflineFeedHandler(plan.routes).run(sources, pkts, 0)
    runs = []
    for chunk in (len(records), 777):
        runner = ConfigRunner(BacktestConfig(), DATE, 0)
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


def _reference_nbbo(records: np.ndarray) -> list[tuple]:
    """Every NBBO change by a plain model of the book: per series, each exchange's last
    quote; best bid = highest price, then largest size, then exchange order A B C I P X
    (best offer: lowest price, same ties); a side without a price and size is absent."""
    lanes: dict[tuple, dict[int, tuple]] = {}
    held: dict[tuple, tuple] = {}
    out = []
    for m in records[(records["category"] == ord("k")) & np.isin(records["participant"], list(EXCHANGES))]:
        if m["put_call"] not in (ord("C"), ord("P")) or m["strike_px"] <= 0 or m["expiry"] == 0:
            continue
        key = (bytes(m["root"]), int(m["expiry"]), int(m["strike_px"]), int(m["put_call"]))
        x = EXCHANGES.index(bytes([m["participant"]]))
        bid = (int(m["bid_px"]), int(m["bid_size"])) if m["bid_px"] > 0 and m["bid_size"] > 0 else None
        ask = (int(m["offer_px"]), int(m["offer_size"])) if m["offer_px"] > 0 and m["offer_size"] > 0 else None
        lanes.setdefault(key, {})[x] = (bid, ask)
        bids = [(p, s, -e) for e, (b, _) in lanes[key].items() if b for p, s in [b]]
        asks = [(-p, s, -e) for e, (_, a) in lanes[key].items() if a for p, s in [a]]
        bb, ba = max(bids, default=None), max(asks, default=None)
        now = ((bb[0], bb[1], EXCHANGES[-bb[2]]) if bb else (0, 0, 0)) + ((-ba[0], ba[1], EXCHANGES[-ba[2]]) if ba else (0, 0, 0))
        if now != held.get(key, (0, 0, 0, 0, 0, 0)):
            held[key] = now
            out.append((int(m["line"]), int(m["msg_seq"])) + now)
    return out


def test_nbbo_changes_are_every_change_of_the_book(day: Path, tmp_path: Path) -> None:
    plan = plan_day(DataLayout(day), DATE, 1)
    sources, pkts, _ = read_packets(plan.lines, [])
    records = OfflineFeedHandler(plan.routes).run(sources, pkts, 0)
    runner = ConfigRunner(BacktestConfig(name="book", pricing=False), DATE, 0, tmp_path / "nbbo.parquet")
    runner.feed(records)
    run = runner.finish()
    # streamed as the job writes it, the file reads back as BACKTEST_NBBO_SCHEMA
    back = pq.read_table(tmp_path / "nbbo.parquet")
    assert back.schema == BACKTEST_NBBO_SCHEMA and run.nbbo_changes == back.num_rows
    table = back.to_pylist()
    got = [(r["line"], r["msg_seq"], r["bid_px"] or 0, r["bid_size"] or 0, (r["bid_participant"] or "\0").encode()[0],
            r["offer_px"] or 0, r["offer_size"] or 0, (r["offer_participant"] or "\0").encode()[0]) for r in table]
    want = [w[:2] + (w[2], w[3], w[4] if w[4] else 0, w[5], w[6], w[7] if w[7] else 0) for w in _reference_nbbo(records)]
    assert run.nbbo_dropped == 0 and len(got) > 1000
    assert got == want
    assert {r["root"] for r in table} and all(r["put_call"] in ("C", "P") for r in table)
    assert [p.name for p in tmp_path.iterdir()] == ["nbbo.parquet"]   # no temporary file left
