"""The C pacing loop called in-process on hand-made schedules: packets that point outside
their source, or carry a line out of range, are counted and skipped; short or odd headers
still go out; every other packet is accounted for. Runs under ASan/UBSan in CI."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from omdp.clock import now_ns
from omdp.native import ffi, lib
from ops.replay.ctl_segment import CtlSegment
from ops.replay.native_layout import PKT_CONTROL, PKT_DTYPE
from ops.replay.shm_segments import ctl_name


@pytest.fixture()
def ctl():
    seg = CtlSegment.create(ctl_name(f"t{os.getpid()}x{now_ns()}"), n_senders=1, log_capacity=1024, creator_pid=os.getpid())
    yield seg
    seg.close()
    seg.unlink()


def _sink(keep: list) -> object:
    sink = ffi.new("omdp_replay_udp_sink_t *")
    err = ffi.new("char[]", 256)
    assert lib.omdp_replay_udp_open(sink, b"127.0.0.1", 0, err, 256) == 0, ffi.string(err)
    for line in (1, 2):  # unicast to loopback: works where multicast may not
        assert lib.omdp_replay_udp_set_dest(sink, line, 0, b"127.0.0.1", 45000 + line) == 0
    keep.append(sink)
    return sink


def _run(ctl: CtlSegment, pkts: np.ndarray, buf: bytes, *, copies_mask: int = 1, drop: int = 0, loop: int = 0,
         start: bool = True, seconds: float = 2.0, table: object = None, ring: object = None,
         lap_span: int | None = None) -> tuple[int, object]:
    keep: list = []
    src_mem = ffi.new("uint8_t[]", buf)
    srcs = ffi.new("omdp_replay_source_t[]", 1)
    srcs[0].base = src_mem
    srcs[0].size = len(buf)
    pk = np.ascontiguousarray(pkts)
    if ring is not None:
        sink = ffi.new("omdp_replay_ring_sink_t *")
        sink.tx = ring.c_handle
        sink.command = ffi.addressof(ctl.control, "command")
    else:
        sink = _sink(keep)
    args = ffi.new("omdp_replay_run_args_t *")
    args.control = ctl.control
    args.status = ctl.sender_ptr(0)
    args.lines = ctl.lines_ptr()
    args.log = ctl.log_ptr(0)
    args.intended = table.header if table is not None else ffi.NULL
    args.pkts = ffi.cast("const omdp_replay_pkt_t *", ffi.from_buffer(pk))
    args.n_pkts = pk.shape[0]
    args.sources = srcs
    args.n_sources = 1
    args.copies_mask = copies_mask
    args.lap_span = lap_span or 1000 * max(1, pk.shape[0])
    args.loop = loop
    args.sink_kind = lib.OMDP_REPLAY_SINK_RING if ring is not None else lib.OMDP_REPLAY_SINK_UDP
    args.sink = sink
    args.drop_threshold = [drop, 0]
    args.drop_seed = 1
    args.spin_ns = 50_000
    t = now_ns()
    ctl.set_map(t, 0, 1.0)
    if start:
        ctl.start(t, t + int(seconds * 1e9))
    else:
        ctl.stop()
    rc = lib.omdp_replay_run(args)
    if ring is None:
        lib.omdp_replay_udp_close(sink)
    return int(rc), ctl.sender_ptr(0)


def _pkts(rows: list[tuple]) -> np.ndarray:
    """Entries (src_off, len, line, src[, flags, b_off, b_len, b_src]) a schedule unit apart."""
    out = np.zeros(len(rows), dtype=PKT_DTYPE)
    names = ("src_off", "len", "line", "src", "flags", "b_off", "b_len", "b_src")
    for i, row in enumerate(rows):
        out["off"][i], out["line_index"][i] = i * 1000, i
        for name, v in zip(names, row):
            out[name][i] = v
    return out


def test_bad_entries_are_counted_and_skipped(ctl: CtlSegment) -> None:
    good = b"\x01\x020000000042005" + b"\x80" * 20 + b"\x03"
    odd = b"\x01\x02ABCDEFGHIJxyz\x03"   # a header that is not digits: still sent, sequence 0
    short = b"\x01\x02\x03"              # shorter than a header: still sent
    buf = good + odd + short
    rows = [
        (0, len(good), 1, 0),                       # fine
        (len(good), len(odd), 2, 0),                # fine, odd header
        (len(good) + len(odd), len(short), 1, 0),   # fine, short
        (0, len(good), 1, 7),                       # no such source
        (len(buf) - 2, 10, 1, 0),                   # runs past its source
        ((1 << 64) - 4, 8, 1, 0),                   # offset that would wrap
        (0, 0, 1, 0),                               # empty
        (0, len(good), 0, 0),                       # line 0
        (0, len(good), 100, 0),                     # line beyond the last
        (0, len(good), 1, 0, 0, 0, len(good), 7),   # its B bytes in no such source
        (0, len(good), 1, 0, 0, len(buf) - 2, 10, 0),  # its B bytes run past their source
    ]
    rc, st = _run(ctl, _pkts(rows), buf)
    assert rc == lib.OMDP_REPLAY_DONE
    assert st.source_errors == 8
    assert st.packets_done == 3 and st.pacing_count == 3
    lines = ctl.lines
    assert lines[1]["packets"][0] == 2 and lines[2]["packets"][0] == 1
    assert lines[1]["messages"][0] == 5
    sent = ctl.drain_log(0)
    assert sent["block_seq"].tolist() == [42, 0, 0]
    assert sent["messages"].tolist() == [5, 0, 0]
    assert np.all(sent["sent_ns"][:, 0] >= sent["intended_ns"]) and np.all(sent["sent_ns"][:, 1] == 0)


def test_drops_spare_control_packets(ctl: CtlSegment) -> None:
    pkt = b"\x01\x020000000001001" + b"\x80" * 8 + b"\x03"
    pk = _pkts([(0, len(pkt), 1, 0)] * 50)
    pk["flags"][::10] = PKT_CONTROL
    rc, st = _run(ctl, pk, pkt, drop=(1 << 64) - 1)
    assert rc == lib.OMDP_REPLAY_DONE
    assert ctl.lines[1]["dropped"][0] == 45 and ctl.lines[1]["packets"][0] == 5
    assert ctl.lines[1]["control_packets"] == 5 and st.control_done == 5 and st.packets_done == 45


def test_bad_arguments_and_early_stop(ctl: CtlSegment) -> None:
    pkt = b"\x01\x020000000001001\x03"
    rc, st = _run(ctl, _pkts([(0, len(pkt), 1, 0)]), pkt, copies_mask=0)
    assert rc == lib.OMDP_REPLAY_EINVAL and b"copies_mask" in ffi.string(st.error)
    assert st.state == lib.OMDP_REPLAY_SENDER_FAILED


def test_stop_before_start(ctl: CtlSegment) -> None:
    pkt = b"\x01\x020000000001001\x03"
    rc, st = _run(ctl, _pkts([(0, len(pkt), 1, 0)]), pkt, start=False)
    assert rc == lib.OMDP_REPLAY_STOPPED and st.packets_done == 0
    assert st.state == lib.OMDP_REPLAY_SENDER_DONE


def test_intended_table_roundtrip_and_bounds(tmp_path) -> None:
    from ops.replay.intended_table import IntendedTable
    from ops.replay.shm_segments import intended_name

    t = IntendedTable.create(intended_name(f"t{os.getpid()}y{now_ns()}"), max_line=3, capacity=16, run_id="r1",
                             creator_pid=os.getpid())
    try:
        for seq in range(100, 140):
            lib.omdp_replay_intended_publish(t.header, 2, seq, seq * 10)
        got = t.lookup_many(np.array([2, 2, 2, 0, 4, 3], np.uint16), np.array([139, 124, 123, 139, 139, 139], np.uint64))
        assert got.tolist() == [1390, 1240, 0, 0, 0, 0], "kept the last 16, nothing outside lines 1..3"
        lib.omdp_replay_intended_publish(t.header, 9, 5, 5)  # out of range: ignored
    finally:
        t.close()
        t.unlink()


def _opra(seq: int, messages: int, body: int = 40) -> bytes:
    return b"\x01\x02" + b"%010d%03d" % (seq, messages) + b"\x80" * body + b"\x03"


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_short_looping_schedules_wrap_the_lookahead(ctl: CtlSegment, tmp_path, n: int) -> None:
    """Schedules shorter than the loop's prefetch distance, lap after lap: every packet is
    accounted for, the log and the intended table stay right."""
    from ops.replay.intended_table import IntendedTable
    from ops.replay.shm_segments import intended_name

    pkts = [_opra(1 + 3 * k, 3) for k in range(n)]
    buf = b"".join(pkts)
    offs = np.cumsum([0] + [len(p) for p in pkts])
    pk = _pkts([(int(offs[k]), len(pkts[k]), 1 + k % 2, 0) for k in range(n)])
    pk["off"] *= 100  # a packet every 100 us
    t = IntendedTable.create(intended_name(f"t{os.getpid()}w{now_ns()}"), max_line=2, capacity=16, run_id="w",
                             creator_pid=os.getpid())
    # stopped once three laps are done (not after a span of wall time, which a loaded host can
    # spend before the first packet): the log's 1,024 entries leave the stop 100 ms of slack
    done = threading.Event()

    def stop_after_three_laps() -> None:
        st = ctl.sender_ptr(0)
        while not done.is_set() and st.packets_done < 3 * n:
            time.sleep(0.0005)
        ctl.stop()

    stopper = threading.Thread(target=stop_after_three_laps)
    stopper.start()
    try:
        rc, st = _run(ctl, pk, buf, loop=1, seconds=120.0, table=t, lap_span=100_000 * n)
        done.set()
        stopper.join()
        assert rc == lib.OMDP_REPLAY_STOPPED
        assert st.lap >= 3 and st.pacing_count == st.packets_done >= 3 * n and st.log_overruns == 0
        assert sum(int(ctl.lines[ln]["packets"][0]) for ln in (1, 2)) == st.packets_done
        sent = ctl.drain_log(0)
        assert sent.shape[0] == st.packets_done
        assert np.all(np.diff(sent["intended_ns"]) > 0) and np.all(sent["sent_ns"][:, 0] >= sent["intended_ns"])
        assert sent["block_seq"].tolist() == [1 + 3 * (k % n) for k in range(sent.shape[0])]
        for row in sent[-n:]:
            got = t.lookup_many(np.array([row["line"]], np.uint16), np.array([row["block_seq"]], np.uint64))
            assert got.tolist() == [int(row["intended_ns"])]
    finally:
        done.set()
        stopper.join()
        t.close()
        t.unlink()


def test_ring_sink_frames_every_packet_in_process(ctl: CtlSegment) -> None:
    """The ring sink with its slot prefetching, in this process: every frame lands whole."""
    from omdp.transport.shm_names import new_run_id, shm_name
    from omdp.transport.spec import ChannelSpec
    from omdp.transport.vega import VegaReceiver
    from ops.replay.native_layout import FRAME_DTYPE
    from ops.replay.ring_target import attach_ring

    pkts = [_opra(10 + 5 * k, 5, body=20 + (k * 37) % 300) for k in range(300)]
    buf = b"".join(pkts)
    offs = np.cumsum([0] + [len(p) for p in pkts])
    pk = _pkts([(int(offs[k]), len(pkts[k]), 1 + k % 2, 0) for k in range(300)])
    name = shm_name(new_run_id(), "san")
    rx = VegaReceiver.create(ChannelSpec(queue_size=512, max_message=512, mutex=False), name)
    tx = attach_ring(name, max(len(p) for p in pkts))
    try:
        rc, st = _run(ctl, pk, buf, ring=tx)
        assert rc == lib.OMDP_REPLAY_DONE and st.packets_done == 300 and st.sink_waits == 0
        for k in range(300):
            slot, view = rx.get(timeout=0)
            raw = bytes(view)
            head = np.frombuffer(raw[:FRAME_DTYPE.itemsize], dtype=FRAME_DTYPE)[0]
            assert int(head["line"]) == 1 + k % 2 and int(head["length"]) == len(pkts[k])
            assert raw[FRAME_DTYPE.itemsize:] == pkts[k]
            rx.release_buffer(slot)
    finally:
        tx.close()
        rx.close()


def test_ring_sink_sends_each_copys_own_bytes(ctl: CtlSegment) -> None:
    """An entry with B's own bytes sends them on copy B; a block one copy lacks goes out on
    the other only; a copy not asked for is not sent (and a block only it had is lost)."""
    from omdp.transport.shm_names import new_run_id, shm_name
    from omdp.transport.spec import ChannelSpec
    from omdp.transport.vega import VegaReceiver
    from ops.replay.native_layout import FRAME_DTYPE, PKT_ONLY_A, PKT_ONLY_B
    from ops.replay.ring_target import attach_ring

    a0, b0, a1, b2 = (_opra(10 + k, 3, body=20 + k) for k in range(4))
    buf = a0 + b0 + a1 + b2
    o = np.cumsum([0, len(a0), len(b0), len(a1)])
    rows = [(int(o[0]), len(a0), 1, 0, 0, int(o[1]), len(b0), 0),  # both copies, B's bytes its own
            (int(o[2]), len(a1), 1, 0, PKT_ONLY_A),                  # B lacks it
            (int(o[3]), len(b2), 1, 0, PKT_ONLY_B)]                  # A lacks it
    for mask, want in ((3, [(0, a0), (1, b0), (0, a1), (1, b2)]), (1, [(0, a0), (0, a1)])):
        name = shm_name(new_run_id(), "san")
        rx = VegaReceiver.create(ChannelSpec(queue_size=16, max_message=512, mutex=False), name)
        tx = attach_ring(name, 256)
        try:
            rc, st = _run(ctl, _pkts(rows), buf, ring=tx, copies_mask=mask)
            assert rc == lib.OMDP_REPLAY_DONE and st.source_errors == 0
            got = []
            while (item := rx.get(timeout=0)) is not None:
                slot, view = item
                raw = bytes(view)
                head = np.frombuffer(raw[:FRAME_DTYPE.itemsize], dtype=FRAME_DTYPE)[0]
                got.append((int(head["copy"]), raw[FRAME_DTYPE.itemsize:]))
                rx.release_buffer(slot)
            assert got == want
            line = ctl.lines[1]
            assert int(line["lost_packets"]) == (0 if mask == 3 else 1)
        finally:
            tx.close()
            rx.close()
        ctl.lines[1] = np.zeros((), dtype=ctl.lines.dtype)
