"""A real-time pacing loop that waits for room in a full ring sleeps between the wait's slices,
and its rest budget counts those sleeps as rest (omdp/replay.h "real time"): when the ring has
room again, with the schedule behind, the loop sends at once instead of paying a forced rest
for the time it spent waiting. Driven by the sink's own count of the time slept while waiting."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from replay_support import realtime_refusal

from omdp.clock import now_ns
from omdp.native import ffi, lib
from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver
from ops.replay.ctl_segment import CtlSegment
from ops.replay.native_layout import PKT_DTYPE
from ops.replay.ring_target import attach_ring
from ops.replay.shm_segments import ctl_name

pytestmark = pytest.mark.full  # the ring is held until the sender has slept 20 ms in its wait

PACKETS = 600
SLOTS = 256
"""The ring holds 256 packets: the sender waits inside the batch of packets 256-319 and then,
behind its schedule, starts five more batches, each where a forced rest would come."""
SLEPT_NS = 20_000_000
"""How long the sender must have slept inside its wait before the ring is drained: the wait
is then at least 6 x longer (100 us slices, 20 us sleeps), its rest owed (1/8 of it) well
above the 2 ms the budget banks, so without the credit a forced rest would follow."""


def _packet(seq: int) -> bytes:
    return b"\x01\x02" + f"{seq:010d}".encode() + b"005" + b"\x80" * 20 + b"\x03"


def test_a_wait_for_room_is_rest_and_no_forced_rest_follows() -> None:
    why = realtime_refusal()
    if why:
        pytest.skip(why)
    pkts = [_packet(10 + k) for k in range(PACKETS)]
    buf = b"".join(pkts)
    pk = np.zeros(PACKETS, dtype=PKT_DTYPE)
    pk["off"] = np.arange(PACKETS) * 1000          # 1 us apart at scale 1: all due at once, soon
    pk["src_off"] = np.arange(PACKETS) * len(pkts[0])
    pk["len"], pk["line"], pk["line_index"] = len(pkts[0]), 1, np.arange(PACKETS)

    ctl = CtlSegment.create(ctl_name(f"t{os.getpid()}r{now_ns()}"), n_senders=1, log_capacity=1024,
                            creator_pid=os.getpid())
    name = shm_name(new_run_id(), "rest")
    rx = VegaReceiver.create(ChannelSpec(queue_size=SLOTS, max_message=512, mutex=False), name)
    tx = attach_ring(name, 256)
    src = ffi.new("uint8_t[]", buf)
    srcs = ffi.new("omdp_replay_source_t[]", 1)
    srcs[0].base, srcs[0].size = src, len(buf)
    sink = ffi.new("omdp_replay_ring_sink_t *")
    sink.tx, sink.command = tx.c_handle, ffi.addressof(ctl.control, "command")
    args = ffi.new("omdp_replay_run_args_t *")
    args.control, args.status, args.lines, args.log = ctl.control, ctl.sender_ptr(0), ctl.lines_ptr(), ctl.log_ptr(0)
    args.pkts = ffi.cast("const omdp_replay_pkt_t *", ffi.from_buffer(pk))
    args.n_pkts, args.sources, args.n_sources, args.copies_mask = PACKETS, srcs, 1, 1
    args.lap_span, args.sink_kind, args.sink, args.spin_ns = PACKETS * 1000, lib.OMDP_REPLAY_SINK_RING, sink, 20_000
    result: dict[str, object] = {}

    def sender() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))  # this thread only
            result["rc"] = int(lib.omdp_replay_run(args))
        except BaseException as e:  # noqa: BLE001 - reported below
            result["error"] = e

    t = now_ns()
    ctl.set_map(t, 0, 1.0)
    ctl.start(t, t + 10_000_000_000)
    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    frames = 0
    try:
        # hold every slot until the sender has slept SLEPT_NS waiting for room, then drain
        while sink.full_wait_rest_ns < SLEPT_NS and thread.is_alive():
            pass
        while thread.is_alive() or rx.available():
            batch = rx.get_batch(timeout=0.05)
            if batch is not None:
                frames += len(batch)
                rx.release_batch(batch)
        thread.join()
    finally:
        tx.close()
        rx.close()
    st = ctl.sender_ptr(0)
    try:
        assert "error" not in result, result.get("error")
        assert result["rc"] == lib.OMDP_REPLAY_DONE
        assert frames == PACKETS and st.packets_done == PACKETS
        assert st.policy == os.SCHED_FIFO and st.sink_waits >= 1
        assert st.sink_wait_rest_ns >= SLEPT_NS and st.sink_wait_ns > st.sink_wait_rest_ns
        assert st.rests == 0, (st.rests, st.rest_ns, st.sink_wait_ns, st.sink_wait_rest_ns, st.sink_waits, st.cpu_ns)
    finally:
        ctl.close()
        ctl.unlink()
