"""The feed handler's multicast input through AF_XDP (``receive = "xdp"``), over a veth pair
whose sending end sits in a network namespace of its own: the lines' datagrams, written as
raw frames from that namespace (A before B, packet by packet, as the replayer sends them),
are redirected by the handler's XDP program into its XDP socket and decoded exactly as the
UDP sockets decode them: every message once, a gap of one copy filled from the other, a
packet lost on both counted missed, duplicates counted. Frames it must not trust are counted,
never decoded. The XDP program leaves the interface when the handler stops, fails to start
or is killed. Skipped with the reason where AF_XDP or namespaces are not allowed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from feed_handler_support import Endpoints, keeping_partition, own_endpoints, wait_delivered
from pipeline_support import line_packets, make_capture
from xdp_support import VethPair, make_veth, send_frames, udp_frame, xdp_refused

from omdp.runtime.partition import Partition
from ops.pipeline.capture_info import open_capture

_why = xdp_refused()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("fhxdp"), seconds=0.2, lines=2)


@pytest.fixture
def veth() -> VethPair:
    pair = make_veth()
    yield pair
    pair.close()


def _partition(capture: Path, veth: VethPair, endpoints: Endpoints, **params: object) -> Partition:
    return keeping_partition(capture, "fh-xdp-test", endpoints,
                             **{"receive": "xdp", "xdp": f"{veth.rx}:0", "interface": veth.rx_addr, **params})


def _endpoints(lines: list[int]) -> Endpoints:
    return own_endpoints(lines, "239.79")


@pytest.mark.full
def test_every_message_accounted_through_af_xdp(capture: Path, veth: VethPair, tmp_path: Path) -> None:
    info = open_capture(capture)
    lines = line_packets(capture)
    l1, l2 = lines[info.lines[0]], lines[info.lines[1]]
    eps = _endpoints(info.lines)
    n = min(len(l1.payloads), 40)
    part = _partition(capture, veth, eps)
    try:
        assert veth.xdp_attached()
        done: list[str] = []
        t = threading.Thread(target=lambda: done.append(part.run()))
        t.start()
        # a UDP length past the IP datagram's end, and one of our ports on a group not ours;
        # then line 1: A loses packet 3 (B has it), both lose packet 7; line 2: A only
        frames = [udp_frame(eps[l2.line]["A"], l2.payloads[0][:40], udp_len=8 + 400),
                  udp_frame(("239.79.251.251", eps[l2.line]["A"][1]), l2.payloads[0])]
        for i in range(n):
            if i not in (3, 7):
                frames.append(udp_frame(eps[l1.line]["A"], l1.payloads[i]))
            if i != 7:
                frames.append(udp_frame(eps[l1.line]["B"], l1.payloads[i]))
        frames += [udp_frame(eps[l2.line]["A"], p) for p in l2.payloads[:n]]
        send_frames(veth, frames, tmp_path)
        expected = int(l1.counts[:n].sum() - l1.counts[7] + l2.counts[:n].sum())
        wait_delivered(part, expected)
        part.request_stop()
        t.join(30)
        assert done and done[0] in ("ended", "stopped")
        report = part.operator_report()["fh"]
        recs = np.concatenate([part.bindings[f"keep[{k}]"].op.records() for k in range(2)])
    finally:
        part.close()
    assert not veth.xdp_attached(), "the XDP program outlived the handler"
    assert report["messages_received"] == expected == len(recs) == report["routed"]
    assert report["messages_missed"] == l1.counts[7]
    assert report["messages_duplicate"] == int(l1.counts[:n].sum() - l1.counts[7] - l1.counts[3])
    assert report["bad_frames"] == 1 and report["unknown_line"] == 1 and report["rx_ring_drops"] == 0
    assert report["packets_a"] == 2 * n - 2 and report["packets_b"] == n - 1
    keys = recs["line"].astype(np.int64) * (1 << 40) + recs["msg_seq"].astype(np.int64)
    assert len(np.unique(keys)) == len(recs)
    assert (recs["hdr"]["stamps"]["fh_in"] > 0).all()


def test_a_queue_the_interface_lacks_is_refused_and_leaves_nothing_attached(capture: Path, veth: VethPair) -> None:
    info = open_capture(capture)
    with pytest.raises(Exception, match=f"{veth.rx} queue 7"):
        _partition(capture, veth, _endpoints(info.lines), xdp=f"{veth.rx}:7")
    assert not veth.xdp_attached()


def test_a_malformed_xdp_queue_is_refused_naming_the_field(capture: Path, veth: VethPair) -> None:
    info = open_capture(capture)
    with pytest.raises(ValueError, match="xdp 'eth0'"):
        _partition(capture, veth, _endpoints(info.lines), xdp="eth0")


_KILLED_SCRIPT = """
import signal, sys
sys.path[:0] = sys.argv[2:4]
from pathlib import Path
from xdp_support import VethPair
from test_feed_handler_xdp import _endpoints, _partition
from ops.pipeline.capture_info import open_capture
capture = Path(sys.argv[1])
veth = VethPair(*sys.argv[4:9])
part = _partition(capture, veth, _endpoints(open_capture(capture).lines))
print("open", flush=True)
signal.pause()  # until the test kills it
"""


@pytest.mark.full  # a Python subprocess: seconds
def test_a_killed_handler_leaves_no_xdp_program(capture: Path, veth: VethPair) -> None:
    """SIGKILL runs no cleanup: the program goes with the BPF link's last descriptor."""
    here = Path(__file__).parent
    p = subprocess.Popen([sys.executable, "-P", "-c", _KILLED_SCRIPT, str(capture), str(here), str(here.parent),
                          veth.ns, veth.tx, veth.rx, veth.rx_addr, veth.tx_addr], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "open"
        assert veth.xdp_attached()
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    assert not veth.xdp_attached(), "the XDP program outlived a killed handler"


def _received(part: Partition, replay: Callable[[], None], expected: int) -> tuple[dict, np.ndarray]:
    """The handler's report and its records (stamps zeroed) once ``expected`` messages came
    ."""
    done: list[str] = []
    t = threading.Thread(target=lambda: done.append(part.run()))
    try:
        t.start()
        replay()
        wait_delivered(part, expected)
    finally:
        part.request_stop()
        t.join(30)
    try:
        assert done and done[0] in ("ended", "stopped")
        report = part.operator_report()["fh"]
        recs = np.concatenate([part.bindings[f"keep[{k}]"].op.records() for k in range(2)])
    finally:
        part.close()
    recs = np.sort(recs, order=["line", "msg_seq"])
    recs["hdr"]["stamps"] = np.zeros_like(recs["hdr"]["stamps"])
    return report, recs


def _frames(capture: Path, veth: VethPair, eps: dict[int, dict[str, tuple[str, int]]]) -> tuple[list[bytes], int, int]:
    """Every line's packets as frames, A then B packet by packet, A losing every 13th and B
    every 17th (both: every 221st, missed); the frames and the messages received and missed."""
    frames, received, missed = [], 0, 0
    for ln, p in line_packets(capture).items():
        for i, payload in enumerate(p.payloads):
            a, b = i % 13 != 5, i % 17 != 5
            for ok, c in ((a, "A"), (b, "B")):
                if ok:
                    frames.append(udp_frame(eps[ln][c], payload, src=veth.tx_addr))
            if a or b:
                received += int(p.counts[i])
            elif i < len(p.payloads) - 1:  # a later packet shows the gap
                missed += int(p.counts[i])
    return frames, received, missed


@pytest.mark.full  # two passes of a capture: seconds
def test_af_xdp_decodes_bit_for_bit_as_the_packet_socket(capture: Path, veth: VethPair, tmp_path: Path) -> None:
    """The same frames, sent from the other namespace, received once through the kernel's
    packet socket (receive = "packet_ring") and once through AF_XDP: the same records, bit for bit (stamps aside), and the same counts
    (every message once, the gaps one copy filled, the packets lost on both counted missed).
    The groups are the capture's own: the pair keeps other traffic to them away."""
    info = open_capture(capture)
    eps = {ln: {c: (e.group, e.port) for c, e in info.endpoints[ln].items()} for ln in info.lines}
    frames, expected, missed = _frames(capture, veth, eps)
    runs = [_received(_partition(capture, veth, eps, **params), lambda: send_frames(veth, frames, tmp_path), expected)
            for params in ({"receive": "packet_ring", "rx_ring_bytes": 64 << 20}, {})]
    (ref, ref_recs), (got, recs) = runs
    assert not veth.xdp_attached()
    assert ref["messages_received"] == expected == len(ref_recs) and ref["messages_missed"] == missed > 0
    assert got["rx_ring_drops"] == 0
    for k in ("messages_received", "messages_missed", "messages_duplicate", "packets_a", "packets_b", "bad_frames"):
        assert got[k] == ref[k], k
    assert recs.tobytes() == ref_recs.tobytes()


@pytest.mark.full  # a replay of the capture: seconds
def test_the_replayer_over_af_xdp_delivers_every_message(capture: Path, veth: VethPair, tmp_path: Path) -> None:
    """`omdp replay --xdp` in the other namespace, the handler on AF_XDP here: every message of
    both copies arrives, each decoded once."""
    info = open_capture(capture)
    total = int(sum(p.counts.sum() for p in line_packets(capture).values()))
    eps = {ln: {c: (e.group, e.port) for c, e in info.endpoints[ln].items()} for ln in info.lines}
    repo = Path(__file__).resolve().parents[2]
    cmd = ["ip", "netns", "exec", veth.ns, sys.executable, "-P", "-m", "ops.cli.main", "replay", str(capture), "--pps",
           "20000", "--no-http", "--quiet", "--run-dir", str(tmp_path / "run"), "--interface", veth.tx_addr, "--ttl",
           "1", "--xdp", f"{veth.tx}:0"]

    def replay() -> None:
        out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr

    report, recs = _received(_partition(capture, veth, eps), replay, total)
    assert report["messages_received"] == total == len(recs) and report["messages_missed"] == 0
    assert report["messages_duplicate"] == total and report["rx_ring_drops"] == 0
    keys = recs["line"].astype(np.int64) * (1 << 40) + recs["msg_seq"].astype(np.int64)
    assert len(np.unique(keys)) == len(recs)
