"""The feed handler operator in one partition, in this process: frames written into its ring
by the test (as the replayer writes them), records captured at two engine ports.

Every message is accounted for: A/B arbitration fills a gap of one copy from the other, a
packet lost on both copies is counted missed exactly, duplicates are counted, a corrupt
packet is a decode error (its messages come from the other copy), frames of an unknown line
or cut short are counted, and every record is routed by its root to the engine the routing
table names, with the stamps and flags the contract gives. (CI runs this file under ASan.)
"""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from feed_handler_support import FRAME, Keep
from pipeline_support import line_packets, make_capture

from feedhandlers.opra_record import NO_UNDERLYING
from omdp.plan import build_plan
from omdp.record import RF_LAST_IN_PACKET
from omdp.registry import OperatorKind, Port
from omdp.runtime.partition import Partition
from omdp.topology.schema import Topology
from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaSender
from ops.pipeline.assemble import routing_for
from ops.pipeline.capture_info import open_capture
from ops.pipeline.registry import build_registry



@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("fhcap"), seconds=0.2, lines=2)


def run_handler(capture: Path, frames: list[bytes], engines: int = 2, coalesce: int | None = None,
                prefill: int = 0, params: dict[str, object] | None = None) -> tuple[dict[str, int], list[np.ndarray]]:
    """One partition: feed_handler -> Keep x engines; frames put into its ring (the first
    ``prefill`` of them before the loop starts, so that they wait together). The handler
    reads the capture's format from its manifest, as the pipeline assembly does; ``params``
    are more of its parameters."""
    info = open_capture(capture)
    extra: dict[str, object] = {"format": info.feed_format, **(params or {})}
    if coalesce is not None:
        extra["coalesce_packets"] = coalesce
    routing = routing_for(info, engines)
    registry = build_registry()
    registry.add(OperatorKind("keep", (Port("in", "opra_msg"),), (), Keep, native=False))
    ring = shm_name(new_run_id(), "fhtest")
    topo = Topology.model_validate({
        "name": "fh-test",
        "operators": {
            "fh": {"kind": "feed_handler", "params": {
                "input": "ring", "ring": ring, "routing": routing.model_dump(),
                "lines": [{"line": ln} for ln in info.lines], "ring_queue_size": 64, **extra}},
            "keep": {"kind": "keep", "replicas": engines},
        },
        "partitions": {"app": {"operators": ["fh", "keep"]}},
        "edges": [{"from": f"fh.de{k}", "to": f"keep[{k}].in"} for k in range(engines)],
    })
    plan = build_plan(topo, registry)
    part = Partition(plan, "app", registry)
    try:
        done: list[str] = []
        t = threading.Thread(target=lambda: done.append(part.run()))
        tx = VegaSender.attach(ChannelSpec(queue_size=64, max_message=2048, mutex=False), ring)
        for f in frames[:prefill]:
            assert tx.put(f, timeout=10.0)
        t.start()
        for f in frames[prefill:]:
            assert tx.put(f, timeout=10.0)
        tx.close()
        t.join(30)
        assert done == ["ended"], "the handler did not end when its ring's sender closed"
        report = part.operator_report()["fh"]
        kept = [part.bindings[f"keep[{k}]"].op.records() for k in range(engines)]
        return report, kept
    finally:
        part.close()


def frame(line: int, copy: int, pkt: bytes, intended: int = 1_000_000_007) -> bytes:
    return FRAME.pack(intended, intended + 5, line, copy, 0, len(pkt), 0) + pkt


@pytest.mark.full
def test_arbitration_gaps_duplicates_and_routing(capture: Path) -> None:
    lines = line_packets(capture)
    info = open_capture(capture)
    l1, l2 = lines[info.lines[0]], lines[info.lines[1]]
    n = min(len(l1.payloads), 40)
    frames: list[bytes] = []
    # line 1: A loses packet 3 (B has it), both lose packet 7, A's packet 10 is corrupt
    # (B has it); B copies arrive after A's, packet by packet.
    for i in range(n):
        p = l1.payloads[i]
        if i not in (3, 7):
            bad = i == 10
            frames.append(frame(l1.line, 0, p[: len(p) // 2] if bad else p, intended=10_000 + i))
        if i != 7:
            frames.append(frame(l1.line, 1, p, intended=10_000 + i))
    # line 2: A only, every packet
    for i, p in enumerate(l2.payloads[:n]):
        frames.append(frame(l2.line, 0, p, intended=20_000 + i))
    frames.append(frame(77, 0, l2.payloads[0]))                  # a line this handler does not serve
    frames.append(FRAME.pack(1, 2, l2.line, 0, 0, 4000, 0) + b"\x01\x02")  # claims more bytes than it has

    report, kept = run_handler(capture, frames)
    recs = np.concatenate(kept)
    expected = int(l1.counts[:n].sum() - l1.counts[7] + l2.counts[:n].sum())
    assert report["messages_received"] == expected == len(recs) == report["routed"]
    assert report["messages_missed"] == l1.counts[7]
    assert report["decode_errors"] == 1
    assert report["unknown_line"] == 1 and report["bad_frames"] == 1
    # B's copies of packets A delivered are duplicates (whole packets or messages)
    assert report["messages_duplicate"] == int(l1.counts[:n].sum() - l1.counts[7] - l1.counts[3] - l1.counts[10])
    # each (line, sequence) once
    keys = recs["line"].astype(np.int64) * (1 << 40) + recs["msg_seq"].astype(np.int64)
    assert len(np.unique(keys)) == len(recs)

    routing = routing_for(info, 2)
    engine_of = dict(zip(routing.roots, routing.root_engines))
    uid_of = dict(zip(routing.roots, routing.underlying_ids))
    for k, part in enumerate(kept):
        for r in part:
            root = bytes(r["root"][: r["root_len"]]).decode().rstrip(" ")
            if root:
                assert engine_of[root] == k and r["underlying_id"] == uid_of[root]
            else:
                assert k == 0 and r["underlying_id"] == NO_UNDERLYING   # default engine 0
            assert r["var_off"] == 0 and r["var_len"] == 0
            st = r["hdr"]["stamps"]
            assert st["intended"] in range(10_000, 20_000 + n)
            assert 0 < st["fh_in"] <= st["fh_out"]
            assert st["de_in"] == st["de_out"] == st["mc_in"] == 0
    last = recs[(recs["hdr"]["flags"] & RF_LAST_IN_PACKET) != 0]
    assert len(last) == 2 * n - 1          # every packet delivered has one last message (7 lost)


def test_sequence_reset_restarts_the_line(capture: Path) -> None:
    """A lap: packets, a reset ('H' type 'K') to one before the first sequence, the same
    packets again; the second copy of the reset and of the lap are duplicates."""
    from ops.replay.control_packets import reset_packet

    lines = line_packets(capture)
    ln = lines[open_capture(capture).lines[0]]
    n = 20
    reset = reset_packet(int(ln.first_seq[0]) - 1, 93000000)
    frames = [frame(ln.line, 0, p) for p in ln.payloads[:n]]
    frames += [frame(ln.line, 0, reset)]
    frames += [frame(ln.line, 0, p) for p in ln.payloads[:n]]
    frames += [frame(ln.line, 1, reset)] + [frame(ln.line, 1, p) for p in ln.payloads[:5]]
    report, kept = run_handler(capture, frames)
    msgs = int(ln.counts[:n].sum())
    assert report["resets"] == 1
    assert report["messages_received"] == 2 * msgs + 1      # two laps and the reset itself
    assert report["messages_missed"] == 0
    assert report["messages_duplicate"] == 1 + int(ln.counts[:5].sum())
    assert sum(len(k) for k in kept) == 2 * msgs + 1


def _without_handler_times(recs: np.ndarray) -> np.ndarray:
    out = recs.copy()
    out["hdr"]["stamps"]["fh_in"] = 0
    out["hdr"]["stamps"]["fh_out"] = 0
    return out


def test_batches_across_packets_keep_order_and_content(capture: Path) -> None:
    """Packets waiting together leave as one batch per engine (up to the cap), and every
    engine gets the same records in the same order as with batching off (cap 1)."""
    lines = line_packets(capture)
    info = open_capture(capture)
    frames = []
    n = 60
    for i in range(n):  # the two lines interleaved, A and B copies
        for ln in info.lines:
            p = lines[ln].payloads[i]
            frames += [frame(ln, 0, p, intended=10_000 + i), frame(ln, 1, p, intended=10_000 + i)]
    off_report, off = run_handler(capture, frames, coalesce=1, prefill=60)
    on_report, on = run_handler(capture, frames, coalesce=16, prefill=60)
    assert off_report["coalesce_flush_packets_max"] == 1
    assert off_report["coalesce_flushes"] == off_report["packets_accepted"]
    assert 1 < on_report["coalesce_flush_packets_max"] <= 16
    assert on_report["coalesce_flushes"] < off_report["coalesce_flushes"]
    for r in (on_report, off_report):
        assert r["coalesce_flush_packets"] == r["packets_accepted"] == 2 * n
        assert r["coalesce_flush_messages"] == r["routed"] == r["messages_received"]
        assert sum(r[f"coalesce_hist_{k}"] for k in (1, 2, 4, 8, 16, 32, 64)) == r["coalesce_flushes"]
    for a, b in zip(on, off):
        assert len(a) == len(b) > 0
        assert (_without_handler_times(a) == _without_handler_times(b)).all()
        st = a["hdr"]["stamps"]
        assert (st["fh_in"] > 0).all() and (st["fh_in"] <= st["fh_out"]).all()
        for ln in info.lines:  # per line: sequence order kept, handler stamps monotonic
            mine = a[a["line"] == ln]
            assert (np.diff(mine["msg_seq"].astype(np.int64)) > 0).all()
            assert (np.diff(mine["hdr"]["stamps"]["fh_in"]) >= 0).all()
            assert (np.diff(mine["hdr"]["stamps"]["fh_out"]) >= 0).all()
        for u in np.unique(a["underlying_id"]):  # per underlying: arrival order kept
            assert (np.diff(a[a["underlying_id"] == u]["hdr"]["stamps"]["fh_out"]) >= 0).all()
