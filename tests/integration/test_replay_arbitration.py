"""The offline replay's A/B arbitration, decode and routing (feed_offline.h, used by the Spark
replay) give what the live feed handler operator gives for the same packets in the same
arrival order: drops on A, on B and on both, a corrupt A packet, two lines, two engines."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pipeline_support import line_packets, make_capture
from test_feed_handler_ring_sanitize import frame, run_handler

from ops.pipeline.assemble import routing_for
from ops.pipeline.capture_info import open_capture
from ops.spark.replay_feed import OfflineFeedHandler, Routes


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("arbcap"), seconds=0.2, lines=2)


def _key(recs: np.ndarray) -> np.ndarray:
    """What must be equal: line, sequence, root, underlying, flags, the quote's prices."""
    return recs[["line", "msg_seq", "root", "underlying_id", "bid_px", "offer_px"]]


def test_offline_arbitration_equals_the_feed_handler(capture: Path) -> None:
    info = open_capture(capture)
    lines = line_packets(capture)
    drop_a, drop_b, both, bad_a = {2, 5, 11, 17}, {4, 9, 11, 21}, {30}, {13}
    frames: list[bytes] = []
    per_line: dict[int, list[tuple[int, bytes]]] = {ln: [] for ln in info.lines}
    n = 40
    for i in range(n):
        for ln in info.lines:
            p = lines[ln].payloads[i]
            if i not in drop_a and i not in both:
                pa_ = p[: len(p) // 2] if i in bad_a else p
                frames.append(frame(ln, 0, pa_))
                per_line[ln].append((0, pa_))
            if i not in drop_b and i not in both:
                frames.append(frame(ln, 1, p))
                per_line[ln].append((1, p))
    report, kept = run_handler(capture, frames, engines=2)

    routing = routing_for(info, 2)
    fh = OfflineFeedHandler(Routes(routing.engines, tuple(routing.roots), tuple(routing.underlying_ids),
                                   tuple(routing.root_engines)))
    offline = {0: [], 1: []}
    totals = {"accepted": 0, "missed": 0, "duplicates": 0, "decode_errors": 0}
    for ln, pkts in per_line.items():
        buf = np.frombuffer(b"".join(p for _, p in pkts), dtype=np.uint8)
        lens = np.array([len(p) for _, p in pkts], dtype=np.uint32)
        offs = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.uint64)
        copies = np.array([c for c, _ in pkts], dtype=np.uint8)
        ts = np.arange(len(pkts), dtype=np.int64)
        for e in (0, 1):
            # one handler per engine, as each Spark task keeps its own bucket
            one = OfflineFeedHandler(Routes(routing.engines, tuple(routing.roots), tuple(routing.underlying_ids),
                                            tuple(routing.root_engines)))
            offline[e].append(one.line(ln, buf, offs, lens, copies, ts, e))
        fh.line(ln, buf, offs, lens, copies, ts, None)
        c = fh.counts(ln)
        for k in totals:
            totals[k] += c[k]
    for e in (0, 1):
        got = np.concatenate(offline[e])
        live = kept[e]
        assert len(got) == len(live) > 0
        # the live engine port interleaves the lines in arrival order; per line the order is equal
        for ln in info.lines:
            assert np.array_equal(_key(got[got["line"] == ln]), _key(live[live["line"] == ln]))
    assert totals["accepted"] == report["messages_received"]
    assert totals["missed"] == report["messages_missed"] > 0
    assert totals["duplicates"] == report["messages_duplicate"] > 0
    assert totals["decode_errors"] == report["decode_errors"] == len(info.lines)
