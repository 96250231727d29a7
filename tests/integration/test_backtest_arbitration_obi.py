"""The offline replay's rules on OBI v6 (feed_offline.h with the OBI format, used by the
Spark engine replay) give what the live feed handler gives for the same blocks in the same
arrival order: today's capture with its A and B copies, injected gaps and bad checksums,
B two blocks behind A."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pipeline_support import make_obi_capture
from test_feed_handler_ring_sanitize import frame, run_handler

from feedhandlers.captures import read_capture
from ops.pipeline.assemble import routing_for
from ops.pipeline.capture_info import open_capture
from ops.spark.backtest.backtest_feed import PKT_DTYPE, OfflineFeedHandler, Routes, packets_format

pytestmark = pytest.mark.full

LAG = 2


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_obi_capture(tmp_path_factory.mktemp("obiarb"), seconds=0.3, lines=3)


def _key(recs: np.ndarray) -> np.ndarray:
    return recs[["line", "msg_seq", "root", "underlying_id", "bid_px", "offer_px"]]


def test_offline_obi_arbitration_equals_the_feed_handler(capture: Path) -> None:
    info = open_capture(capture)
    frames: list[bytes] = []
    sources: list[np.ndarray] = []
    rows = []
    for ln in info.lines:
        copies = [read_capture(capture / f"line{ln:02d}{s}.pcap").payloads() for s in ("", "-b")]
        events = sorted([(i + c * (LAG + 0.5), c, p) for c in (0, 1) for i, p in enumerate(copies[c])],
                        key=lambda e: e[0])
        for _, c, p in events:
            frames.append(frame(ln, c, p))
            rows.append((0, len(p), len(sources), ln, c, 0))
            sources.append(np.frombuffer(p, dtype=np.uint8))
    report, kept = run_handler(capture, frames, engines=2)
    pkts = np.array(rows, dtype=PKT_DTYPE)
    assert packets_format(sources, pkts) == "obi-v6"

    routing = routing_for(info, 2)
    routes = Routes(routing.engines, tuple(routing.roots), tuple(routing.underlying_ids), tuple(routing.root_engines))
    for e in (0, 1):
        got, live = OfflineFeedHandler(routes, feed_format="obi-v6").run(sources, pkts, e), kept[e]
        assert len(got) == len(live) > 0
        assert np.array_equal(_key(got), _key(live))
    fh = OfflineFeedHandler(routes, feed_format="obi-v6")
    fh.run(sources, pkts, None)
    totals = {k: sum(fh.counts(ln)[k] for ln in info.lines) for k in ("accepted", "missed", "duplicates",
                                                                        "decode_errors")}
    assert totals["accepted"] == report["messages_received"]
    assert totals["missed"] == report["messages_missed"]
    assert totals["duplicates"] == report["messages_duplicate"] > 0
    assert totals["decode_errors"] == report["decode_errors"] > 0
