"""The market sink (docs/market_stats.md): every record the leaders emit reaches
market_windows.parquet, whatever batch it came in, and each window every leader ended is
summarized in market_live.json (top underlyings, exchange shares) - the series rows,
which the summary does not read, included in the file all the same. At the end of its
stream, a window some leader never ended (the leader's partition died and the run went on)
gets an END per missing leader, incomplete, so the file, the run's summary and
market_live.json say the window is short instead of leaving it silently so."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from omdp.operator import OperatorContext
from ops.market.core import MarketConfig, Network
from ops.market.records import AGG, DIMS, END, MARKET_DTYPE, RT_MARKET
from ops.market.run_summary import market_summary
from ops.market.sink import LIVE_FILE, WINDOWS_FILE, MarketSink, MarketSinkParams
from ops.market.stream import zipf_stream


def _leaders_output(leaders: int) -> np.ndarray:
    msgs = zipf_stream(12_000, 1.0, seed=7, step_us=60.0)
    net = Network(MarketConfig(leaders=leaders, window_ms=250), 2)
    part = msgs["line"] % 2
    for k in range(2):
        net.feed(k, msgs[part == k])
    out = net.finish()
    net.close()
    return out


def test_every_record_reaches_the_file_and_every_window_the_live_summary(tmp_path: Path) -> None:
    recs = _leaders_output(leaders=2)
    foreign = np.zeros(3, MARKET_DTYPE)  # not market records: counted, not kept
    sink = MarketSink(MarketSinkParams(leaders=2, window_ms=250),
                      OperatorContext("msink", "market_sink", 0, 1, ("in",), (), run_dir=tmp_path))
    for i in range(0, len(recs), 64):
        sink.process_batch(recs[i:i + 64], "in")
    sink.process_batch(foreign, "in")
    sink.end_of_stream()

    table = pq.read_table(tmp_path / WINDOWS_FILE).to_pydict()
    aggs = recs[recs["kind"] == AGG]
    assert len(table["key"]) == len(aggs) + int((recs["kind"] == END).sum())
    got = sorted((w, d, k, q) for w, d, k, q, kind in zip(table["window"], table["dim"], table["key"],
                                                         table["quotes"], table["kind"]) if kind == "agg")
    assert got == sorted((int(r["window"]), DIMS[int(r["dim"])], int(r["key"]), int(r["quotes"])) for r in aggs)
    assert table["dim"].count("series") == int((aggs["dim"] == DIMS.index("series")).sum()) > 0

    live = json.loads((tmp_path / LIVE_FILE).read_text())["windows"]
    windows = np.unique(recs["window"][recs["kind"] == END])
    assert [w["window"] for w in live] == [int(w) for w in windows][-60:]
    first = aggs[(aggs["window"] == windows[0]) & (aggs["dim"] == 0)]
    busiest = first[np.argmax(first["quotes"] + first["trades"])]
    assert live[0]["top_underlyings"][0]["messages"] == int(busiest["quotes"] + busiest["trades"])
    assert all(w["complete"] for w in live)
    assert sink.counters() == {"records": len(recs), "windows": len(windows), "incomplete": 0, "foreign": 3,
                               "leader_lost": 0}


def _recs(*rows: tuple[int, int, int, int, int]) -> np.ndarray:
    """(kind, window, leader, dim, key/missing) rows; every one counts 10 quotes."""
    recs = np.zeros(len(rows), MARKET_DTYPE)
    recs["hdr"]["type"], recs["hdr"]["length"] = RT_MARKET, MARKET_DTYPE.itemsize
    for i, (kind, window, leader, dim, key) in enumerate(rows):
        recs[i]["kind"], recs[i]["window"], recs[i]["source"], recs[i]["dim"], recs[i]["key"] = kind, window, leader, dim, key
        recs[i]["quotes"] = 10
    return recs


def test_a_window_a_leader_never_ended_is_written_incomplete(tmp_path: Path) -> None:
    ctx = OperatorContext(name="msink", kind="market_sink", replica=0, replicas=1, inputs=("in",), outputs=(),
                          partition="market", run_dir=tmp_path)
    sink = MarketSink(MarketSinkParams(leaders=2, window_ms=1000), ctx)
    # window 7: both leaders ended it; window 8: leader 1 died before ending it
    sink.process_batch(_recs((AGG, 7, 0, 2, 65), (END, 7, 0, 0, 0), (AGG, 8, 0, 2, 65), (END, 8, 0, 1, 0b10)), "in")
    sink.process_batch(_recs((AGG, 7, 1, 0, 3), (END, 7, 1, 0, 0)), "in")
    assert sink.counters()["windows"] == 1
    sink.end_of_stream()
    ends = [r for r in pq.read_table(tmp_path / WINDOWS_FILE).to_pylist() if r["kind"] == "end"]
    assert sorted((e["window"], e["leader_or_source"], e["incomplete"], e["missing_sources"]) for e in ends) == \
           [(7, 0, False, 0), (7, 1, False, 0), (8, 0, True, 0b10), (8, 1, True, 0)]
    summary = market_summary(tmp_path)
    assert summary is not None and (summary["windows"], summary["complete"], summary["incomplete"]) == (2, 1, 1)
    live = json.loads((tmp_path / LIVE_FILE).read_text())["windows"]
    assert [(w["window"], w["complete"], w["missing_sources"]) for w in live] == [(7, True, 0), (8, False, 0b10)]
    assert sink.counters() == {"records": 6, "windows": 2, "incomplete": 1, "foreign": 0, "leader_lost": 1}


def test_windows_every_leader_ended_get_nothing_added(tmp_path: Path) -> None:
    ctx = OperatorContext(name="msink", kind="market_sink", replica=0, replicas=1, inputs=("in",), outputs=(),
                          partition="market", run_dir=tmp_path)
    sink = MarketSink(MarketSinkParams(leaders=1, window_ms=1000), ctx)
    sink.process_batch(_recs((AGG, 3, 0, 2, 65), (END, 3, 0, 0, 0)), "in")
    sink.end_of_stream()
    assert pq.read_table(tmp_path / WINDOWS_FILE).num_rows == 2 and sink.counters()["leader_lost"] == 0
