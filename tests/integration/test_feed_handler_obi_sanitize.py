"""The feed handler on an OBI v6 capture (today's market, A and B copies with the synth's
injected gaps and bad checksums): every message accounted - each MSN one good copy brought
delivered once, the gaps that hit both copies counted missed, the other copies counted
duplicate, every bad checksum counted and its block dropped - and routed by underlying,
with the ring's intended stamp."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pipeline_support import make_obi_capture
from test_feed_handler_ring_sanitize import frame, run_handler

from feedhandlers.captures import read_capture
from feedhandlers.opra_obi import decode_blocks
from feedhandlers.opra_record import NO_UNDERLYING
from omdp.record import RF_LAST_IN_PACKET
from ops.pipeline.capture_info import open_capture
from ops.synth.today.generator import FAULTS_FILE

pytestmark = pytest.mark.full

LAG = 2
"""Stream B arrives this many blocks behind A, so A's gaps are filled after later messages."""


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_obi_capture(tmp_path_factory.mktemp("obi"))


def _blocks(path: Path) -> list[bytes]:
    return read_capture(path).payloads()


def _good_msns(blocks: list[bytes]) -> set[int]:
    """MSNs of the blocks whose checksum is right."""
    buf = b"".join(blocks)
    lengths = np.array([len(b) for b in blocks], dtype=np.uint32)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.uint64)
    dec = decode_blocks(buf, offsets, lengths)
    return set(dec.records["msg_seq"].astype(np.int64).tolist())


def test_every_obi_message_is_accounted_and_routed(capture: Path) -> None:
    info = open_capture(capture)
    assert info.feed_format == "obi-v6"
    faults = pd.read_parquet(capture / FAULTS_FILE)
    frames: list[bytes] = []
    received = missed = every = 0
    for ln in info.lines:
        a, b = (_blocks(capture / f"line{ln:02d}{s}.pcap") for s in ("", "-b"))
        events = sorted([(i, 0, p) for i, p in enumerate(a)] + [(i + LAG + 0.5, 1, p) for i, p in enumerate(b)],
                        key=lambda e: e[0])
        frames += [frame(ln, c, p) for _, c, p in events]
        good_a, good_b = _good_msns(a), _good_msns(b)
        delivered = good_a | good_b
        received += len(delivered)
        missed += max(delivered) + 1 - len(delivered)   # MSNs from 0 (Start of Day) up to the last
        every += sum(p[10] for p in a + b)                  # msg_count of every block of both copies
    lost = {(r.line, r.block_seq, c): r.msg_count for r in faults.itertuples() for c in r.copy}
    both = sum(n for (ln, s, c), n in lost.items() if c == "a" and (ln, s, "b") in lost)
    assert missed == both > 0        # the synth's gaps and bad checksums that hit both copies
    assert (faults.kind == "checksum").sum() > 0 and (faults["copy"] == "a").sum() > 0
    # A bad block is read (and counted) unless the other stream delivered it first: B comes
    # after A, so a bad B block is read only when A lost the block too.
    sums = faults[faults.kind == "checksum"]
    read_bad = sums[[c == "a" or (ln, s, "a") in lost for ln, s, c in zip(sums.line, sums.block_seq, sums["copy"])]]

    # No gap timeout: this thread writes the frames at whatever pace the machine allows, so
    # the time from A's gap to B's copy two blocks later is unbounded here (the timeout's
    # own tests drive its clock: test_feed_arbitration_obi_sanitize.py).
    report, kept = run_handler(capture, frames, engines=2, params={"gap_timeout_us": 0})
    assert report["format"] == 1
    assert report["messages_received"] == received == report["routed"]
    assert report["messages_missed"] == missed
    assert report["checksum_errors"] == report["decode_errors"] == len(read_bad)
    assert report["messages_duplicate"] == every - received - int(read_bad.msg_count.sum())
    assert report["gap_filled"] > 0                            # some of A's gaps came from B, after later messages
    assert report["gap_timed_out"] == 0
    assert report["unknown_root"] == 0
    recs = np.concatenate(kept)
    assert len(recs) == received
    assert len(set(zip(recs["line"].tolist(), recs["msg_seq"].tolist()))) == received
    assert (recs["hdr"]["stamps"]["intended"] == 1_000_000_007).all()
    assert (recs["hdr"]["flags"] & RF_LAST_IN_PACKET).any()
    quotes = recs[recs["category"] == ord("k")]
    assert (quotes["underlying_id"] != NO_UNDERLYING).all()
    for e, part in enumerate(kept):                            # an underlying on one engine only
        others = np.concatenate([k for j, k in enumerate(kept) if j != e])
        assert not set(part["underlying_id"][part["category"] == ord("k")].tolist()) & set(
            others["underlying_id"][others["category"] == ord("k")].tolist())
