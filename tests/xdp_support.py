"""Helpers of the AF_XDP tests: the veth pair across two namespaces (ops.netns.veth), a sender
that writes raw Ethernet frames from inside its namespace, and the reason AF_XDP cannot be
tested here."""
from __future__ import annotations

import random
import socket
import struct
import subprocess
import sys
from pathlib import Path

from ops.netns.veth import VethPair, make_veth, xdp_veth_unavailable

__all__ = ["VethPair", "make_veth", "send_frames", "udp_frame", "xdp_refused"]


def xdp_refused() -> str | None:
    """None when this process can build a veth pair in a namespace and the native module has
    AF_XDP; else why."""
    return xdp_veth_unavailable()


def send_frames(pair: VethPair, frames: list[bytes], tmp: Path) -> None:
    """Write ``frames`` out of the pair's sending end, in order, from inside its namespace."""
    path = tmp / f"frames-{random.getrandbits(32):08x}.bin"
    path.write_bytes(b"".join(len(f).to_bytes(2, "little") + f for f in frames))
    subprocess.run(["ip", "netns", "exec", pair.ns, sys.executable, "-c", _SEND, pair.tx, str(path)],
                   check=True, capture_output=True, timeout=120)


_SEND = """
import socket, sys
data = open(sys.argv[2], "rb").read()
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
s.bind((sys.argv[1], 0))
at = 0
while at < len(data):
    n = int.from_bytes(data[at:at + 2], "little")
    s.send(data[at + 2:at + 2 + n])
    at += 2 + n
"""


def udp_frame(dst: tuple[str, int], payload: bytes, udp_len: int | None = None, src: str = "192.0.2.1") -> bytes:
    """An Ethernet frame of an IPv4/UDP datagram from ``src`` to group ``dst`` (its UDP length
    field ``udp_len``, by default the true one). The kernel's stack drops one whose source the
    interface cannot route back to (reverse-path filter): AF_XDP does not look."""
    group = socket.inet_aton(dst[0])
    mac = bytes([1, 0, 0x5E, group[1] & 0x7F, group[2], group[3]])
    ulen = 8 + len(payload) if udp_len is None else udp_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), 0, 0, 1, socket.IPPROTO_UDP, 0,
                     socket.inet_aton(src), group)
    total = sum(struct.unpack("!10H", ip))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip = ip[:10] + struct.pack("!H", ~total & 0xFFFF) + ip[12:]
    return mac + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + struct.pack("!HHHH", 40000, dst[1], ulen, 0) + payload
