"""The feed handler's multicast input through the packet ring (``receive = "packet_ring"``),
in one partition in this process: datagrams sent by the test to the lines' groups on loopback
(A before B, packet by packet, as the replayer sends them) are taken from one AF_PACKET RX
ring, and every message is accounted for exactly as over the UDP sockets: a gap of one copy
filled from the other, a packet lost on both counted missed, duplicates counted. Frames the
ring must not trust (a UDP length past the IP datagram, a port of ours on another group) are
counted, never decoded. (CI runs this file under ASan.)"""
from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from feed_handler_support import Endpoints, keeping_partition, own_endpoints, wait_delivered
from pipeline_support import line_packets, make_capture
from replay_support import multicast_works, packet_socket_refused

from omdp.runtime.partition import Partition
from ops.pipeline.capture_info import open_capture


_why = multicast_works() or packet_socket_refused()
pytestmark = pytest.mark.skipif(_why is not None, reason=_why or "")


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_capture(tmp_path_factory.mktemp("fhring"), seconds=0.2, lines=2)


def _partition(capture: Path, endpoints: Endpoints, **params: object) -> Partition:
    return keeping_partition(capture, "fh-packet-ring-test", endpoints,
                             **{"receive": "packet_ring", "rx_ring_bytes": 4 << 20, **params})


def _endpoints(lines: list[int]) -> Endpoints:
    return own_endpoints(lines, "239.78")


def _raw_udp(dst: tuple[str, int], payload: bytes, udp_len: int) -> bytes:
    """An Ethernet frame of an IPv4/UDP datagram to ``dst`` whose UDP length field says ``udp_len``."""
    group = socket.inet_aton(dst[0])
    mac = bytes([1, 0, 0x5E, group[1] & 0x7F, group[2], group[3]])
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), 0, 0, 1, socket.IPPROTO_UDP, 0,
                     socket.inet_aton("192.0.2.1"), group)
    return mac + b"\x00" * 6 + b"\x08\x00" + ip + struct.pack("!HHHH", 40000, dst[1], udp_len, 0) + payload


@pytest.mark.full
def test_every_message_accounted_through_the_packet_ring(capture: Path) -> None:
    info = open_capture(capture)
    lines = line_packets(capture)
    l1, l2 = lines[info.lines[0]], lines[info.lines[1]]
    eps = _endpoints(info.lines)
    n = min(len(l1.payloads), 40)
    part = _partition(capture, eps)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        raw.bind(("lo", 0))
        done: list[str] = []
        t = threading.Thread(target=lambda: done.append(part.run()))
        t.start()
        # first, a UDP length past the IP datagram's end, and one of our ports on a group not
        # ours: the one ring takes frames in order, so once the good ones are through, so are these
        raw.send(_raw_udp(eps[l2.line]["A"], l2.payloads[0][:40], udp_len=8 + 400))
        tx.sendto(l2.payloads[0], ("239.78.251.251", eps[l2.line]["A"][1]))
        # line 1: A loses packet 3 (B has it), both lose packet 7; line 2: A only
        for i in range(n):
            if i not in (3, 7):
                tx.sendto(l1.payloads[i], eps[l1.line]["A"])
            if i != 7:
                tx.sendto(l1.payloads[i], eps[l1.line]["B"])
        for p in l2.payloads[:n]:
            tx.sendto(p, eps[l2.line]["A"])
        expected = int(l1.counts[:n].sum() - l1.counts[7] + l2.counts[:n].sum())
        wait_delivered(part, expected)
        part.request_stop()
        t.join(30)
        assert done and done[0] in ("ended", "stopped")
        report = part.operator_report()["fh"]
        recs = np.concatenate([part.bindings[f"keep[{k}]"].op.records() for k in range(2)])
    finally:
        tx.close()
        raw.close()
        part.close()
    assert report["messages_received"] == expected == len(recs) == report["routed"]
    assert report["messages_missed"] == l1.counts[7]
    assert report["messages_duplicate"] == int(l1.counts[:n].sum() - l1.counts[7] - l1.counts[3])
    assert report["bad_frames"] == 1 and report["unknown_line"] == 1 and report["rx_ring_drops"] == 0
    assert report["packets_a"] == 2 * n - 2 and report["packets_b"] == n - 1
    keys = recs["line"].astype(np.int64) * (1 << 40) + recs["msg_seq"].astype(np.int64)
    assert len(np.unique(keys)) == len(recs)
    assert (recs["hdr"]["stamps"]["fh_in"] > 0).all()


def test_a_ring_size_not_in_blocks_is_refused_naming_the_option(capture: Path) -> None:
    info = open_capture(capture)
    with pytest.raises(ValueError, match="rx_ring_bytes"):
        _partition(capture, _endpoints(info.lines), rx_ring_bytes=(4 << 20) + 4096)


def test_an_interface_without_the_address_is_refused_naming_it(capture: Path) -> None:
    info = open_capture(capture)
    with pytest.raises(Exception, match="192.0.2.77"):
        _partition(capture, _endpoints(info.lines), interface="192.0.2.77")


_REFUSED_SCRIPT = """
import sys
sys.path[:0] = sys.argv[2:4]
from pathlib import Path
from test_feed_handler_packet_ring_sanitize import _endpoints, _partition
from ops.pipeline.capture_info import open_capture
from ops.replay.sender import UdpTarget, _open_udp
capture = Path(sys.argv[1])
try:
    _partition(capture, _endpoints(open_capture(capture).lines)).close()
    print("receive: opened")
except Exception as e:
    print("receive:", e)
try:
    _open_udp(UdpTarget("127.0.0.1", 0, {(1, 0): ("239.78.0.1", 40001)}, "packet_ring"), [])
    print("send: opened")
except OSError as e:
    print("send:", e)
"""


@pytest.mark.slow  # a Python subprocess without CAP_NET_RAW: seconds
@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="needs root and setpriv to drop CAP_NET_RAW")
def test_both_packet_rings_refuse_without_cap_net_raw_saying_so(capture: Path) -> None:
    """Without CAP_NET_RAW the packet-ring receive and the TX-ring sender fail at start with
    the capability named and, for the handler, the setting that does not need it."""
    here = Path(__file__).parent
    out = subprocess.run(["setpriv", "--inh-caps=-net_raw", "--bounding-set=-net_raw", sys.executable, "-P", "-c",
                          _REFUSED_SCRIPT, str(capture), str(here), str(here.parent)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    receive, send = out.stdout.strip().splitlines()[-2:]
    assert "socket(AF_PACKET): Operation not permitted" in receive and "CAP_NET_RAW" in receive
    assert 'receive = "sockets" does not' in receive
    assert send.startswith("send: multicast_sender 'packet_ring'") and "CAP_NET_RAW" in send
