"""Ethernet / IPv4 / UDP framing of OPRA packets, built and parsed for whole batches.

A capture frame is: Ethernet II (IPv4 multicast MAC of the group) + IPv4 (20 bytes, valid
header checksum, no options, no fragmentation) + UDP (checksum 0, which IPv4 allows: "not
computed") + the OPRA packet. The header of every frame is computed with numpy at once.
"""
from __future__ import annotations

import ipaddress

import numpy as np

ETH_LEN = 14
IP_LEN = 20
UDP_LEN = 8
FRAME_HEADER_LEN = ETH_LEN + IP_LEN + UDP_LEN
"""Bytes before the payload in every frame we write (42)."""

MAX_UDP_PAYLOAD = 65535 - IP_LEN - UDP_LEN

SRC_MAC = bytes.fromhex("020000000001")
"""Locally administered source MAC of the capture's sender."""

DEFAULT_TTL = 32

FRAME_HEADER_DTYPE = np.dtype(
    [
        ("eth_dst", "u1", (6,)),
        ("eth_src", "u1", (6,)),
        ("eth_type", ">u2"),
        ("ip_vhl", "u1"),
        ("ip_tos", "u1"),
        ("ip_len", ">u2"),
        ("ip_id", ">u2"),
        ("ip_frag", ">u2"),
        ("ip_ttl", "u1"),
        ("ip_proto", "u1"),
        ("ip_csum", ">u2"),
        ("ip_src", ">u4"),
        ("ip_dst", ">u4"),
        ("udp_sport", ">u2"),
        ("udp_dport", ">u2"),
        ("udp_len", ">u2"),
        ("udp_csum", ">u2"),
    ]
)
assert FRAME_HEADER_DTYPE.itemsize == FRAME_HEADER_LEN


def ip_to_int(addr: str | int) -> int:
    """An IPv4 address as an unsigned 32-bit integer."""
    return int(addr) if isinstance(addr, int) else int(ipaddress.IPv4Address(addr))


def int_to_ip(value: int) -> str:
    """An unsigned 32-bit integer as dotted IPv4."""
    return str(ipaddress.IPv4Address(int(value)))


def multicast_mac(group: int) -> np.ndarray:
    """The Ethernet MAC of an IPv4 multicast group (RFC 1112: 01:00:5e + low 23 bits)."""
    return np.array([0x01, 0x00, 0x5E, (group >> 16) & 0x7F, (group >> 8) & 0xFF, group & 0xFF], dtype=np.uint8)


def ipv4_checksums(total_len: np.ndarray, ip_id: np.ndarray, src: int, dst: int, ttl: int, proto: int = 17) -> np.ndarray:
    """Header checksums of IPv4 headers that differ only in total length and id."""
    const = 0x4500 + 0x0000 + ((ttl << 8) | proto) + (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF)
    s = total_len.astype(np.uint64) + ip_id.astype(np.uint64) + np.uint64(const)
    s = (s & np.uint64(0xFFFF)) + (s >> np.uint64(16))
    s = (s & np.uint64(0xFFFF)) + (s >> np.uint64(16))
    return (~s & np.uint64(0xFFFF)).astype(np.uint16)


def build_frame_headers(
    lengths: np.ndarray, *, dst_ip: int, dst_port: int, src_ip: int, src_port: int, first_ip_id: int = 0, ttl: int = DEFAULT_TTL
) -> np.ndarray:
    """The 42-byte frame headers for payloads of ``lengths`` bytes to one group and port."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size and int(lengths.max()) > MAX_UDP_PAYLOAD:
        raise ValueError(f"a payload of {int(lengths.max())} bytes does not fit one UDP datagram")
    n = lengths.shape[0]
    h = np.zeros(n, dtype=FRAME_HEADER_DTYPE)
    h["eth_dst"] = multicast_mac(dst_ip)
    h["eth_src"] = np.frombuffer(SRC_MAC, dtype=np.uint8)
    h["eth_type"] = 0x0800
    h["ip_vhl"] = 0x45
    total = lengths + IP_LEN + UDP_LEN
    ids = (np.arange(n, dtype=np.int64) + first_ip_id) & 0xFFFF
    h["ip_len"] = total
    h["ip_id"] = ids
    h["ip_ttl"] = ttl
    h["ip_proto"] = 17
    h["ip_csum"] = ipv4_checksums(total, ids, src_ip, dst_ip, ttl)
    h["ip_src"] = src_ip
    h["ip_dst"] = dst_ip
    h["udp_sport"] = src_port
    h["udp_dport"] = dst_port
    h["udp_len"] = lengths + UDP_LEN
    return h


def parse_frames(buf: np.ndarray, frame_off: np.ndarray, frame_len: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Locate the UDP payload of Ethernet frames, vectorized.

    Returns ``(ok, payload_off, payload_len, dst_ip, dst_port)``; ``ok`` is False for frames
    that are not unfragmented IPv4/UDP (with or without one 802.1Q tag) or are cut short.
    """
    frame_off = np.asarray(frame_off, dtype=np.int64)
    frame_len = np.asarray(frame_len, dtype=np.int64)
    n = frame_off.shape[0]
    size = buf.shape[0]

    def byte(rel: np.ndarray, valid: np.ndarray) -> np.ndarray:
        pos = np.where(valid, frame_off + rel, 0)
        pos = np.minimum(pos, max(size - 1, 0))
        return buf[pos].astype(np.int64) if size else np.zeros(n, np.int64)

    def be16(rel: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return (byte(rel, valid) << 8) | byte(rel + 1, valid)

    def be32(rel: np.ndarray, valid: np.ndarray) -> np.ndarray:
        return (be16(rel, valid) << 16) | be16(rel + 2, valid)

    zero = np.zeros(n, dtype=np.int64)
    ok = frame_len >= ETH_LEN
    etype = be16(zero + 12, ok)
    vlan = ok & (etype == 0x8100) & (frame_len >= ETH_LEN + 4)
    l3 = np.where(vlan, ETH_LEN + 4, ETH_LEN)
    etype = np.where(vlan, be16(zero + 16, vlan), etype)
    ok &= (etype == 0x0800) & (frame_len >= l3 + IP_LEN)
    vhl = byte(l3, ok)
    ihl = (vhl & 0x0F) * 4
    ok &= ((vhl >> 4) == 4) & (ihl >= IP_LEN)
    ip_total = be16(l3 + 2, ok)
    frag = be16(l3 + 6, ok)
    proto = byte(l3 + 9, ok)
    ok &= (proto == 17) & ((frag & 0x3FFF) == 0) & (ip_total >= ihl + UDP_LEN) & (frame_len >= l3 + ip_total)
    dst = be32(l3 + 16, ok)
    l4 = l3 + ihl
    dport = be16(l4 + 2, ok)
    ulen = be16(l4 + 4, ok)
    ok &= (ulen >= UDP_LEN) & (ulen <= ip_total - ihl)
    pay_off = frame_off + l4 + UDP_LEN
    pay_len = np.where(ok, ulen - UDP_LEN, 0)
    return ok, pay_off, pay_len, dst.astype(np.uint32), dport.astype(np.uint16)
