"""The backtest's A/B arbitration, decode and routing (feed_offline.h, used by the Spark
backtest) give what the live feed handler operator gives for the same packets in the same
arrival order: drops on A, on B and on both, a corrupt A packet, two lines, two engines."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pipeline_support import line_packets, make_capture
from test_feed_handler_ring_sanitize import frame, run_handler

from ops.pipeline.assemble import routing_for
from ops.pipeline.capture_info import open_capture
from ops.spark.backtest.backtest_feed import PKT_DTYPE, OfflineFeedHandler, Routes

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("arbcap"), seconds=0.2, lines=2)


def _key(recs: np.ndarray) -> np.ndarray:
    """What must be equal: line, sequence, root, underlying, the quote's prices."""
    return recs[["line", "msg_seq", "root", "underlying_id", "bid_px", "offer_px"]]


def test_offline_arbitration_equals_the_feed_handler(capture: Path) -> None:
    info = open_capture(capture)
    lines = line_packets(capture)
    drop_a, drop_b, both, bad_a = {2, 5, 11, 17}, {4, 9, 11, 21}, {30}, {13}
    frames: list[bytes] = []
    sources: list[np.ndarray] = []
    rows = []
    for i in range(40):  # packet by packet, line by line, A then B: the frames' (arrival) order
        for ln in info.lines:
            p = lines[ln].payloads[i]
            for copy, dropped in ((0, drop_a | both), (1, drop_b | both)):
                if i in dropped:
                    continue
                pkt = p[: len(p) // 2] if copy == 0 and i in bad_a else p
                frames.append(frame(ln, copy, pkt))
                rows.append((0, len(pkt), len(sources), ln, copy, i))
                sources.append(np.frombuffer(pkt, dtype=np.uint8))
    report, kept = run_handler(capture, frames, engines=2)

    routing = routing_for(info, 2)
    routes = Routes(routing.engines, tuple(routing.roots), tuple(routing.underlying_ids), tuple(routing.root_engines))
    pkts = np.array(rows, dtype=PKT_DTYPE)
    for e in (0, 1):  # one handler per engine, as each Spark task keeps its own bucket
        got, live = OfflineFeedHandler(routes).run(sources, pkts, e), kept[e]
        assert len(got) == len(live) > 0
        assert np.array_equal(_key(got), _key(live))   # same records, same order
    fh = OfflineFeedHandler(routes)
    everything = fh.run(sources, pkts, None)
    assert len(everything) == sum(len(k) for k in kept)
    totals = {k: sum(fh.counts(ln)[k] for ln in info.lines) for k in ("accepted", "missed", "duplicates",
                                                                        "decode_errors")}
    assert totals["accepted"] == report["messages_received"]
    assert totals["missed"] == report["messages_missed"] > 0
    assert totals["duplicates"] == report["messages_duplicate"] > 0
    assert totals["decode_errors"] == report["decode_errors"] == len(info.lines)


def test_a_packet_outside_its_source_is_counted_not_read(capture: Path) -> None:
    info = open_capture(capture)
    routing = routing_for(info, 1)
    routes = Routes(1, tuple(routing.roots), tuple(routing.underlying_ids), tuple(routing.root_engines))
    p = line_packets(capture)[info.lines[0]].payloads[0]
    src = np.frombuffer(p, dtype=np.uint8)
    ln = info.lines[0]
    pkts = np.array([(1, len(p), 0, ln, 0, 0), (0, len(p), 1, ln, 0, 0), (0, len(p), 0, 0, 0, 0),
                     (0, len(p), 0, ln, 0, 0)], dtype=PKT_DTYPE)
    fh = OfflineFeedHandler(routes)
    recs = fh.run([src], pkts, None)
    assert len(recs) == int(p[12:15])                     # only the last packet is read
    assert fh.counts(ln)["bad_packets"] == 2 and fh.counts(0)["bad_packets"] == 1
