"""Re-sharding inside one partition, in this process: the feed handler and two decision
engines (re-sharding on) fused, frames written into the handler's ring by the test, every
message forwarded as a sample (sample_every 1) to Python sinks. Moves of a bucket asked for
while packets flow: every message comes out exactly once, each bucket's messages from its
owner of the moment, the handler's markers and the engines' hand-overs counted; a routing
table that is not by bucket is refused with the route named. (CI runs this file under ASan.)
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from feed_handler_support import FRAME, Keep
from pipeline_support import line_packets, make_capture

from feedhandlers.routing import RoutingTable
from omdp.plan import build_plan
from omdp.registry import OperatorKind, Port, Registry
from omdp.runtime.partition import Partition
from omdp.runtime.reshard import ReshardError, ReshardSegment, bucket_homes
from omdp.topology.schema import Topology
from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaSender
from ops.pipeline.assemble import routing_for
from ops.pipeline.capture_info import open_capture
from ops.pipeline.registry import build_registry

BUCKETS = 8


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("rscap"), seconds=0.2, lines=2)


def frame(line: int, pkt: bytes) -> bytes:
    return FRAME.pack(1_000_000_007, 1_000_000_012, line, 0, 0, len(pkt), 0) + pkt


def topology(capture: Path, ring: str, buckets: int) -> tuple[Topology, RoutingTable]:
    info = open_capture(capture)
    routing = routing_for(info, 2, buckets=buckets)
    return Topology.model_validate({
        "name": "reshard-test",
        "operators": {
            "fh": {"kind": "feed_handler", "params": {
                "input": "ring", "ring": ring, "routing": routing.model_dump(), "reshard": True,
                "lines": [{"line": ln} for ln in info.lines], "ring_queue_size": 64, "coalesce_packets": 1}},
            "de": {"kind": "decision_engine", "replicas": 2, "params": {"sample_every": 1, "reshard": True}},
            "keep": {"kind": "keep", "replicas": 2},
        },
        "partitions": {"app": {"operators": ["fh", "de", "keep"]}},
        "edges": [{"from": "fh.de0", "to": "de[0].quotes"}, {"from": "fh.de1", "to": "de[1].quotes"},
                  {"from": "de[0].samples", "to": "keep[0].in"}, {"from": "de[1].samples", "to": "keep[1].in"}],
    }), routing


def registry_with_keep() -> Registry:
    """The pipeline's registry plus the sink."""
    registry = build_registry()
    registry.add(OperatorKind("keep", (Port("in", "opra_msg"),), (), Keep, native=False))
    return registry


@pytest.mark.full
def test_moves_while_packets_flow_keep_every_message_once_on_its_owner(capture: Path, tmp_path: Path) -> None:
    run_id = new_run_id()
    ring = shm_name(run_id, "fhtest")
    topo, routing = topology(capture, ring, BUCKETS)
    seg = ReshardSegment.create(run_id, BUCKETS, 2, 1,
                                bucket_homes(routing.underlying_ids, routing.root_engines, BUCKETS, 2), 1 << 24)
    part = Partition(build_plan(topo, registry_with_keep()), "app", registry_with_keep(), run_dir=tmp_path / run_id)
    lines = line_packets(capture)
    frames = [frame(lp.line, p) for lp in lines.values() for p in lp.payloads[:60]]
    try:
        assert seg.ready()
        done: list[str] = []
        t = threading.Thread(target=lambda: done.append(part.run()))
        tx = VegaSender.attach(ChannelSpec(queue_size=64, max_message=2048, mutex=False), ring)
        t.start()
        moves = 0
        third = len(frames) // 3
        for i, f in enumerate(frames):
            assert tx.put(f, timeout=10.0)
            if i in (third, 2 * third):          # move two buckets while the stream runs
                for b in (1, 2):
                    deadline = time.monotonic() + 10
                    while True:
                        try:
                            seg.request(b, 1 - seg.owner(b))
                            moves += 1
                            break
                        except ReshardError:  # the move before is still in flight
                            assert time.monotonic() < deadline, "a move never completed"
                            time.sleep(0.0005)
        tx.close()
        t.join(30)
        assert done == ["ended"]
        reports = part.operator_report()
        kept = [part.bindings[f"keep[{k}]"].op.records() for k in range(2)]
    finally:
        part.close()
    tot = seg.totals()
    moved = seg.moves()
    seg.close()
    recs = np.concatenate(kept)
    fh = reports["fh"]
    assert len(recs) == fh["routed"] == fh["messages_received"] > 0
    keys = recs["line"].astype(np.int64) * (1 << 40) + recs["msg_seq"].astype(np.int64)
    assert len(np.unique(keys)) == len(recs), "every message exactly once"
    assert tot["installed"] == tot["requested"] == moves == 4
    assert fh["reshard_moves"] == 4 and fh["reshard_markers_sent"] == 8 and fh["reshard_moves_bad"] == 0
    de = [reports["de[0]"], reports["de[1]"]]
    assert sum(d["reshard_exports"] for d in de) == sum(d["reshard_installs"] for d in de) == 4
    assert sum(d["reshard_markers_seen"] for d in de) == 8
    assert sum(d["reshard_markers_bad"] + d["reshard_markers_duplicate"] + d["reshard_install_timeouts"]
               for d in de) == 0
    assert [m["bucket"] for m in moved] == [1, 2, 1, 2] and all(m["installed"] for m in moved)
    # per underlying and line, in sequence order across the moves (each underlying's stream
    # in order, whichever engine had it)
    by_time = recs[np.argsort(recs["hdr"]["stamps"]["de_in"], kind="stable")]
    for uid in np.unique(by_time["underlying_id"]):
        sub = by_time[by_time["underlying_id"] == uid]
        for ln in np.unique(sub["line"]):
            seqs = sub["msg_seq"][sub["line"] == ln].astype(np.int64)
            assert (np.diff(seqs) > 0).all(), (uid, ln)


def test_a_routing_table_not_by_bucket_is_refused(capture: Path, tmp_path: Path) -> None:
    run_id = new_run_id()
    ring = shm_name(run_id, "fhtest")
    topo, routing = topology(capture, ring, 0)                  # balanced by underlying, not bucket
    homes = [0] * BUCKETS                                       # every bucket at engine 0
    seg = ReshardSegment.create(run_id, BUCKETS, 2, 1, homes, 1 << 16)
    try:
        with pytest.raises(Exception, match=r"reshard: route \d+ .* with re-sharding the routing is by bucket"):
            Partition(build_plan(topo, registry_with_keep()), "app", registry_with_keep(), run_dir=tmp_path / run_id)
    finally:
        seg.close()
    assert 1 in routing.root_engines
