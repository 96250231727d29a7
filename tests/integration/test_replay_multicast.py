"""The replay service end to end over loopback UDP multicast: real sender processes, a real
receiver joined on 127.0.0.1, intended.parquet and the shared-memory intended table."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from replay_support import MulticastReceiver, drop_hash, make_line, multicast_works, packet_socket_refused, write_capture

from omdp.metrics.run_records import RUN_INTENDED_SCHEMA
from ops.replay.config import ReplayConfig
from ops.replay.intended_table import IntendedTable
from ops.replay.rates import PAPER_1X_PPS, RateSpec
from ops.replay.service import ReplayService

_why = multicast_works()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


def _run(capture_dir: Path, tmp_path: Path, *, timeout: float = 30.0, **kw: object) -> tuple[ReplayService, object]:
    rate = kw.pop("rate", RateSpec.parse(rate="1x"))
    cfg = ReplayConfig(capture_dir=capture_dir, rate=rate, run_dir=tmp_path / "run", **kw)
    svc = ReplayService(cfg)
    svc.start()
    assert svc.wait(timeout), "the replay did not end"
    return svc, svc.status()


def _intended(tmp_path: Path, copy: str | None = None):
    t = pq.read_table(tmp_path / "run" / "intended.parquet")
    assert t.schema.equals(RUN_INTENDED_SCHEMA)
    return t if copy is None else t.filter(pc.equal(t["copy"], copy))


@pytest.mark.parametrize(
    "rate",
    [RateSpec.parse(rate="1x"), RateSpec.parse(rate="10x"), RateSpec.parse(rate="0.5x"), RateSpec.parse(speed=2),
     RateSpec.parse(pps=20000)],
    ids=["1x", "10x", "0.5x", "speed2", "pps20000"],
)
def test_intended_times_follow_the_schedule(tmp_path: Path, rate: RateSpec) -> None:
    data = [make_line(ln, 60, seed=5) for ln in (1, 2)]
    write_capture(tmp_path / "cap", data)
    svc, st = _run(tmp_path / "cap", tmp_path, rate=rate, copies="A")
    assert st.state == "finished" and st.packets_sent == 120
    t = _intended(tmp_path)
    assert t.num_rows == 120
    ts = {(d.line, s): t_ for d in data for s, t_ in zip(d.block_seqs, d.ts_ns)}
    rec = np.array([ts[(int(ln), int(s))] for ln, s in zip(t["line"].to_numpy(), t["block_seq"].to_numpy())])
    got = t["intended_ns"].to_numpy() - st.started_ns
    order = np.argsort(rec, kind="stable")
    all_ts = np.sort(rec)
    n = all_ts.size
    span = all_ts[-1] - all_ts[0]
    lap = round(span + span / (n - 1))
    if rate.kind == "rate":
        expect = (rec - all_ts[0]) * (n * 1e9 / (rate.value * PAPER_1X_PPS)) / lap
    elif rate.kind == "speed":
        expect = (rec - all_ts[0]) / rate.value
    else:
        expect = np.empty(n)
        expect[order] = np.arange(n) * 1e9 / rate.value
    assert np.abs(got - expect).max() <= 2, "intended times are the schedule's, to the ns"
    assert np.all(t["sent_ns"].to_numpy() >= t["intended_ns"].to_numpy()), "never sent early"
    assert np.all(np.diff(t["intended_ns"].to_numpy()) >= 0), "sent in schedule order"
    assert st.pacing.count == 120


def test_every_packet_arrives_and_copies_are_identical(tmp_path: Path) -> None:
    data = [make_line(ln, 400, seed=2) for ln in (3, 4)]
    eps = write_capture(tmp_path / "cap", data)
    with MulticastReceiver(eps) as rx:
        svc, st = _run(tmp_path / "cap", tmp_path, rate=RateSpec.parse(rate="1x"))
        rx.drain()
    for d in data:
        assert rx.of(d.line, "A") == d.packets, f"line {d.line} copy A"
        assert rx.of(d.line, "B") == d.packets, f"line {d.line} copy B"
    assert st.state == "finished" and st.packets_sent == 800
    by_line = {ln.line: ln for ln in st.lines}
    for d in data:
        assert by_line[d.line].packets == {"A": 400, "B": 400}
        assert by_line[d.line].messages == {"A": sum(d.messages), "B": sum(d.messages)}
    a = _intended(tmp_path, "A")
    b = _intended(tmp_path, "B")
    assert a["block_seq"].to_pylist() == b["block_seq"].to_pylist()
    assert a["intended_ns"].to_pylist() == b["intended_ns"].to_pylist()


@pytest.mark.slow  # a replay service with its sender process: seconds
@pytest.mark.skipif(packet_socket_refused() is not None, reason=packet_socket_refused() or "")
@pytest.mark.parametrize("sender", ["packet", "packet_ring"])
def test_packet_socket_sender_delivers_every_packet_to_udp_receivers(tmp_path: Path, sender: str) -> None:
    """Frames built by the sender (multicast_sender='packet', or 'packet_ring' through the
    socket's TX ring, here past its 4,096 frames so that frames are reused) reach ordinary
    joined UDP sockets byte for byte, both copies, every packet, as the UDP sender's do."""
    data = [make_line(ln, 1200, seed=3) for ln in (5, 6)]
    eps = write_capture(tmp_path / "cap", data)
    with MulticastReceiver(eps) as rx:
        svc, st = _run(tmp_path / "cap", tmp_path, rate=RateSpec.parse(pps=20000), multicast_sender=sender)
        rx.drain()
    assert st.state == "finished" and st.packets_sent == 2400
    for d in data:
        assert rx.of(d.line, "A") == d.packets, f"line {d.line} copy A"
        assert rx.of(d.line, "B") == d.packets, f"line {d.line} copy B"
    assert all(sum(ln.send_errors.values()) == 0 for ln in st.lines)


def test_seeded_drops_make_the_expected_gaps(tmp_path: Path) -> None:
    d = make_line(7, 3000, seed=9)
    eps = write_capture(tmp_path / "cap", [d])
    seed = 12345
    with MulticastReceiver(eps) as rx:
        svc, st = _run(tmp_path / "cap", tmp_path, rate=RateSpec.parse(pps=60000), drops="A:0.05,B:0.02", seed=seed)
        rx.drain()
    idx = np.arange(3000)
    seqs = np.array(d.block_seqs)
    for copy, c, p in (("A", 0, 0.05), ("B", 1, 0.02)):
        dropped = drop_hash(seed, 7, c, 0, idx) < np.uint64(int(p * 2**64))
        want = [d.packets[i] for i in idx[~dropped]]
        assert rx.of(7, copy) == want, f"copy {copy}: exactly the seeded drops are missing"
        assert st.lines[0].dropped[copy] == int(dropped.sum())
        got_seqs = set(_intended(tmp_path, copy)["block_seq"].to_pylist())
        assert got_seqs == set(seqs[~dropped].tolist())
    assert 0.03 < st.lines[0].dropped["A"] / 3000 < 0.07
    both = (drop_hash(seed, 7, 0, 0, idx) < np.uint64(int(0.05 * 2**64))) & (drop_hash(seed, 7, 1, 0, idx) < np.uint64(int(0.02 * 2**64)))
    # injected drops reported apart from sent: a packet dropped on both copies is not sent
    lost = int(both.sum())
    assert lost > 0, "the seed drops no packet on both copies: pick another"
    assert st.packets_sent == 3000 - lost and st.packets_dropped == lost and st.pacing.count == 3000 - lost
    ls = st.lines[0]
    counts = np.array(d.messages)
    assert (ls.packets_dropped, ls.messages_dropped) == (lost, int(counts[both].sum()))
    assert ls.messages_intended == int(counts.sum()) and ls.intended_end_seq == d.block_seqs[-1] + d.messages[-1]


def test_two_senders_split_the_lines(tmp_path: Path) -> None:
    data = [make_line(ln, 150, seed=4) for ln in (1, 2, 3)]
    eps = write_capture(tmp_path / "cap", data)
    with MulticastReceiver(eps, copies=("A",)) as rx:
        cpus = tuple(sorted(os.sched_getaffinity(0)))[:2]
        svc, st = _run(tmp_path / "cap", tmp_path, rate=RateSpec.parse(rate="1x"), copies="A", senders=2, cpus=cpus)
        rx.drain()
    assert len(st.senders) == 2 and sorted(sum((s.lines for s in st.senders), [])) == [1, 2, 3]
    assert [s.cpu for s in st.senders] == [cpus[i % len(cpus)] for i in range(2)], "each sender pinned as asked"
    assert {s.state for s in st.senders} == {"done"}
    for d in data:
        assert rx.of(d.line, "A") == d.packets
    t = _intended(tmp_path)
    assert t.num_rows == 450


def test_rate_change_reanchors_the_schedule(tmp_path: Path) -> None:
    d = make_line(1, 400)
    write_capture(tmp_path / "cap", [d])
    cfg = ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(pps=50), copies="A", run_dir=tmp_path / "run")
    svc = ReplayService(cfg)
    svc.start()
    # 20 ms apart before the change: 279 packets (5.6 s) of slack for a loaded host between
    # seeing 21 sent and the change, and still >= 100 packets after it
    deadline = time.monotonic() + 30
    while svc.status().packets_sent < 21:
        assert time.monotonic() < deadline, "the replay did not start"
        time.sleep(0.005)
    t_change = time.time_ns()
    svc.set_rate(RateSpec.parse(pps=50000))
    t_changed = time.time_ns()  # the service re-anchors at a time in [t_change, t_changed]
    assert svc.wait(60.0)  # a hang guard: the rest is due within 8 ms
    st = svc.status()
    assert st.state == "finished" and st.packets_sent == 400 and st.rate == "50000 pps"
    intended = _intended(tmp_path)["intended_ns"].to_numpy()
    gaps = np.diff(intended)
    slow = np.abs(gaps - 20_000_000) <= 1
    fast = np.abs(gaps - 20_000) <= 1
    k = int(np.argmin(slow))  # the gap across the change: 20 ms apart before it, 20 us after
    assert k >= 20 and slow[:k].all(), "20 ms apart before the change"
    assert fast[k + 1 :].all() and len(gaps) - k - 1 >= 100, "20 us apart after it"
    # Re-anchored at the change, however long set_rate took on a loaded host: the last packet
    # of the old map was due by the anchor (plus at most one old gap the sender had in hand),
    # the first of the new one after it.
    assert intended[k] <= t_changed + 20_000_000 and intended[k + 1] >= t_change, "re-anchored at the change"
    assert np.all(gaps >= 0), "re-anchored where it was: never back in time"


def test_intended_table_answers_while_running(tmp_path: Path) -> None:
    d = make_line(2, 600)
    eps = write_capture(tmp_path / "cap", [d])
    cfg = ReplayConfig(capture_dir=tmp_path / "cap", rate=RateSpec.parse(pps=3000), copies="A", run_dir=tmp_path / "run")
    with MulticastReceiver(eps, copies=("A",)) as rx:
        svc = ReplayService(cfg)
        st = svc.start()
        name = st.intended_table
        assert name and Path("/dev/shm" + name).stat().st_mode & 0o777 == 0o600
        deadline = time.monotonic() + 30  # a hang guard: at 3,000 packets/s the 51st is due in 17 ms
        while len(rx.received) <= 50:
            assert time.monotonic() < deadline, "fewer than 51 packets arrived"
            time.sleep(0.005)
        with IntendedTable.open(name) as table:
            assert table.run_id == st.run_id
            got = [r.data for r in rx.received]
            seqs = np.array([int(p[2:12]) for p in got], dtype=np.uint64)
            found = table.lookup_many(np.full(len(seqs), 2, np.uint16), seqs)
            assert len(seqs) > 50 and np.all(found > 0)
            assert table.lookup(2, 999_999_999) is None
            assert table.lookup(9, int(seqs[0])) is None
        svc.stop()
    t = _intended(tmp_path)
    parquet = dict(zip(t["block_seq"].to_pylist(), t["intended_ns"].to_pylist()))
    assert all(parquet[int(s)] == int(v) for s, v in zip(seqs, found))
    assert svc.status().state == "stopped"
    assert not Path("/dev/shm" + name).exists(), "the table is unlinked when the run ends"
