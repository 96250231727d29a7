"""Helpers of the AF_XDP tests: a veth pair across two network namespaces (the sending end in
a namespace of its own, the receiving end in this process's), a sender that writes raw
Ethernet frames from inside that namespace, and the reason AF_XDP cannot be tested here."""
from __future__ import annotations

import os
import random
import shutil
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from feedhandlers.xdp import xdp_built


def xdp_refused() -> str | None:
    """None when this process can build a veth pair in a namespace and the native module has
    AF_XDP; else why."""
    if not xdp_built():
        return "this build of omdp has no AF_XDP (libxdp-dev and libbpf-dev absent at build time)"
    if os.geteuid() != 0:
        return "AF_XDP and veth namespaces need root"
    if shutil.which("ip") is None:
        return "no 'ip' command (iproute2) to make the veth pair"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class VethPair:
    """``tx`` in namespace ``ns`` (the sender's) with address ``tx_addr``, ``rx`` here with
    address ``rx_addr``."""

    ns: str
    tx: str
    rx: str
    rx_addr: str
    tx_addr: str

    def xdp_attached(self) -> bool:
        """Whether an XDP program is attached to the receiving end."""
        out = subprocess.run(["ip", "-d", "link", "show", "dev", self.rx], check=True, capture_output=True,
                             text=True, timeout=30).stdout
        return "prog/xdp" in out or " xdp " in out or "xdpgeneric" in out

    def send(self, frames: list[bytes], tmp: Path) -> None:
        """Write ``frames`` out of the sending end, in order, from inside its namespace."""
        path = tmp / f"frames-{random.getrandbits(32):08x}.bin"
        path.write_bytes(b"".join(len(f).to_bytes(2, "little") + f for f in frames))
        subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, "-c", _SEND, self.tx, str(path)],
                       check=True, capture_output=True, timeout=120)

    def close(self) -> None:
        subprocess.run(["ip", "link", "del", self.rx], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True, timeout=30)


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


def make_veth() -> VethPair:
    """A fresh veth pair: one end in a new namespace, the other here, both up."""
    tag = f"{os.getpid() % 10000:04d}{random.randint(0, 999):03d}"
    sub = random.randint(1, 250)
    pair = VethPair(ns=f"omdpx{tag}", tx=f"oxt{tag}", rx=f"oxr{tag}", rx_addr=f"10.213.{sub}.2",
                     tx_addr=f"10.213.{sub}.1")
    _ip("netns", "add", pair.ns)
    try:
        _ip("link", "add", pair.rx, "type", "veth", "peer", "name", pair.tx, "netns", pair.ns)
        _ip("addr", "add", f"{pair.rx_addr}/24", "dev", pair.rx)
        _ip("link", "set", pair.rx, "up")
        _ip("-n", pair.ns, "link", "set", pair.tx, "up")
        _ip("-n", pair.ns, "addr", "add", f"{pair.tx_addr}/24", "dev", pair.tx)
    except BaseException:
        pair.close()
        raise
    return pair


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
