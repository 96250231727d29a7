"""The pipeline over loopback UDP multicast: the feed sender sends both copies of every line
to the manifest's A and B groups (through a UDP socket or a packet socket), the feed handler
joins all of them and arbitrates, receiving through its UDP sockets or its packet ring. One
lap: every message arrives once (its B copy counted duplicate), none is missed, and the
handler finds every packet's intended time in the replayer's shared-memory table."""
from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import CAPTURE_DATE, leftovers, line_packets
from replay_support import multicast_works, packet_socket_refused

from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

_why = multicast_works()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


@pytest.mark.parametrize(("sender", "receive"),
                         [("udp", "sockets"), ("packet", "sockets"), ("udp", "packet_ring"), ("packet", "packet_ring"),
                          ("packet_ring", "packet_ring")])
def test_a_and_b_copies_over_multicast(data_dir: Path, sender: str, receive: str) -> None:
    if (sender != "udp" or receive == "packet_ring") and (why := packet_socket_refused()):
        pytest.skip(why)
    pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE,
                       RunOptions(rate="2x", seconds=None, loop=False, sample_every=64),
                       ('operators.fh.params.input="multicast"', f'operators.fs.params.multicast_sender="{sender}"',
                        f'operators.fh.params.receive="{receive}"'))
    run = run_pipeline(pp, data_dir)
    assert run.result.ok, run.result.failure
    a = run.accounting
    in_capture = sum(int(lp.counts.sum()) for lp in line_packets(data_dir / "captures" / CAPTURE_DATE).values())
    assert a.messages_received == a.routed == a.processed == in_capture
    assert a.messages_missed == 0 and a.messages_duplicate == in_capture
    fh = run.result.operators()["fh"]
    assert fh["rx_ring_drops"] == 0 and fh["bad_frames"] == 0 and fh["unknown_line"] == 0
    assert fh["packets_b"] > 0 and fh["intended_missing"] == 0 and fh["intended_found"] == fh["packets_accepted"]
    assert run.breakdown is not None and run.breakdown.hops["e2e_intended"]["count"] == a.collected
    assert not leftovers(run.result.run_id)
