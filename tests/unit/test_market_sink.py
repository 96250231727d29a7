"""The market sink (docs/market_stats.md): every record the leaders emit reaches
market_windows.parquet, whatever batch it came in, and each window every leader ended is
summarized in market_live.json (top underlyings, exchange shares) - the series rows,
which the summary does not read, included in the file all the same."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from omdp.operator import OperatorContext
from ops.market.core import MarketConfig, Network
from ops.market.records import AGG, DIMS, END, MARKET_DTYPE
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
    assert sink.counters() == {"records": len(recs), "windows": len(windows), "incomplete": 0, "foreign": 3}
