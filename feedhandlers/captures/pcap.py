"""Classic libpcap files with nanosecond timestamps (magic 0xa1b23c4d), Ethernet link type,
one OPRA packet per UDP datagram to a line's multicast group and port.

Written and read a batch at a time with numpy: a capture of millions of packets is a few
vectorized passes, not a Python loop per packet on the write side. Reading walks the record
chain once in C (each record's length gives the next offset), locating each frame's UDP
payload on the way (the checks of ``framing.parse_frames``).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import numpy as np

from feedhandlers.captures.capture import Capture, pack_payloads
from feedhandlers.captures.framing import FRAME_HEADER_DTYPE, FRAME_HEADER_LEN, build_frame_headers, ip_to_int
from feedhandlers.captures.rotation import rotated_path
from omdp.errors import InputError
from omdp.native import ffi, lib

PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
GLOBAL_HEADER_LEN = 24
RECORD_HEADER_LEN = 16
DEFAULT_SNAPLEN = 65535

RECORD_DTYPE = np.dtype(
    [("ts_sec", "<u4"), ("ts_nsec", "<u4"), ("incl_len", "<u4"), ("orig_len", "<u4"), ("frame", FRAME_HEADER_DTYPE)]
)
"""A pcap record header followed by our frame header: what precedes every payload (58 bytes)."""

_CHUNK = 1 << 16


class PcapError(InputError):
    """A file that is not a readable classic pcap, with the file and offset."""


@dataclass(frozen=True)
class TruncatedTail:
    """The end of a pcap cut inside a record (a writer that died, a copy cut short): the
    record at ``offset`` (the ``record``-th, 0-based) needed ``needed`` bytes, the file has
    ``available`` of them. Readers drop the partial record and count it as one truncated packet."""

    path: str
    offset: int
    record: int
    needed: int
    available: int

    def describe(self) -> str:
        return (f"{self.path}: ends inside a packet record (truncated: record {self.record} at offset {self.offset}, "
                f"{self.available} of its {self.needed} bytes)")


@dataclass(frozen=True)
class MalformedFrames:
    """Records of a pcap whose frame was cut short (a snaplen smaller than the frame) or
    carries a bad Ethernet/IPv4/UDP header: ``count`` of them, the first at ``first_offset``
    (its record header). Readers skip them and count them as malformed packets."""

    path: str
    count: int
    first_offset: int

    def describe(self) -> str:
        return (f"{self.path}: {self.count} frame(s) cut short or with a bad IPv4/UDP header (the first at offset "
                f"{self.first_offset})")


def global_header(snaplen: int = DEFAULT_SNAPLEN) -> bytes:
    """The 24-byte file header: little-endian, version 2.4, nanosecond resolution, Ethernet."""
    return struct.pack("<IHHiIII", PCAP_MAGIC_NS, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET)


def frame_records(
    buf: np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    ts_ns: np.ndarray,
    *,
    dst_ip: int,
    dst_port: int,
    src_ip: int,
    src_port: int,
    first_ip_id: int = 0,
) -> np.ndarray:
    """pcap records (record header + Ethernet/IPv4/UDP + payload) of a batch as one byte array."""
    payload, _, lens = pack_payloads(buf, offsets, lengths)
    lens = lens.astype(np.int64)
    n = lens.shape[0]
    ts = np.asarray(ts_ns, dtype=np.int64)
    if ts.shape[0] != n:
        raise ValueError("ts_ns must have one timestamp per packet")
    if n and int(ts.min()) < 0:
        raise ValueError("timestamps before 1970 do not fit a pcap")
    hdr = np.zeros(n, dtype=RECORD_DTYPE)
    hdr["ts_sec"] = ts // 1_000_000_000
    hdr["ts_nsec"] = ts % 1_000_000_000
    hdr["incl_len"] = lens + FRAME_HEADER_LEN
    hdr["orig_len"] = lens + FRAME_HEADER_LEN
    hdr["frame"] = build_frame_headers(lens, dst_ip=dst_ip, dst_port=dst_port, src_ip=src_ip, src_port=src_port, first_ip_id=first_ip_id)
    rec_len = lens + RECORD_DTYPE.itemsize
    starts = np.zeros(n, dtype=np.int64)
    if n:
        np.cumsum(rec_len[:-1], out=starts[1:])
    total = int(rec_len.sum()) if n else 0
    out = np.empty(total, dtype=np.uint8)
    hsize = RECORD_DTYPE.itemsize
    hbytes = hdr.view(np.uint8).reshape(n, hsize)
    is_payload = np.ones(total, dtype=bool)
    cols = np.arange(hsize, dtype=np.int64)
    for s in range(0, n, _CHUNK):
        e = min(n, s + _CHUNK)
        idx = (starts[s:e, None] + cols).ravel()
        out[idx] = hbytes[s:e].ravel()
        is_payload[idx] = False
    out[is_payload] = payload
    return out


class PcapWriter:
    """Writes one line's packets to a classic nanosecond pcap, rotating at ``max_bytes``.

    ``path`` names the first file; with ``max_bytes`` set, later files follow
    ``feedhandlers.captures.rotation`` (``line01.pcap``, ``line01.1.pcap``, ...). Every
    packet is a UDP datagram from ``src_ip:src_port`` to ``dst_ip:dst_port``.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        dst_ip: str | int,
        dst_port: int,
        src_ip: str | int = "10.0.0.1",
        src_port: int = 30000,
        max_bytes: int | None = None,
        snaplen: int = DEFAULT_SNAPLEN,
    ) -> None:
        self.base = Path(path)
        self.dst_ip = ip_to_int(dst_ip)
        self.dst_port = int(dst_port)
        self.src_ip = ip_to_int(src_ip)
        self.src_port = int(src_port)
        self.max_bytes = max_bytes
        self.snaplen = snaplen
        if max_bytes is not None and max_bytes < GLOBAL_HEADER_LEN + RECORD_DTYPE.itemsize + 1:
            raise ValueError(f"max_bytes {max_bytes} cannot hold a single packet")
        self.paths: list[Path] = []
        self.packets_written = 0
        self.bytes_written = 0
        self._file = None
        self._file_bytes = 0
        self._ip_id = 0
        self._open_next()

    def _open_next(self) -> None:
        if self._file is not None:
            self._file.close()
        path = rotated_path(self.base, len(self.paths))
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")
        self.paths.append(path)
        head = global_header(self.snaplen)
        self._file.write(head)
        self._file_bytes = len(head)
        self.bytes_written += len(head)

    def write(self, buf: bytes | np.ndarray, offsets: np.ndarray, lengths: np.ndarray, ts_ns: np.ndarray) -> None:
        """Append a batch: packet i is ``buf[offsets[i]:offsets[i]+lengths[i]]`` sent at ``ts_ns[i]``."""
        if self._file is None:
            raise ValueError("write to a closed PcapWriter")
        arr = np.frombuffer(buf, dtype=np.uint8) if isinstance(buf, (bytes, bytearray, memoryview)) else np.asarray(buf, dtype=np.uint8)
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        ts_ns = np.asarray(ts_ns, dtype=np.int64)
        if not (offsets.shape == lengths.shape == ts_ns.shape):
            raise ValueError("offsets, lengths and ts_ns must have the same length")
        if lengths.size and int(lengths.max()) + FRAME_HEADER_LEN > self.snaplen:
            raise ValueError(f"a packet of {int(lengths.max())} bytes exceeds the snap length {self.snaplen}")
        n = offsets.shape[0]
        start = 0
        while start < n:
            end = n
            if self.max_bytes is not None:
                rec = lengths[start:] + RECORD_DTYPE.itemsize
                room = self.max_bytes - self._file_bytes
                fits = int(np.searchsorted(np.cumsum(rec), room, side="right"))
                if fits == 0:
                    if self._file_bytes == GLOBAL_HEADER_LEN:
                        raise ValueError(f"packet of {int(lengths[start])} bytes exceeds max_bytes {self.max_bytes}")
                    self._open_next()
                    continue
                end = start + fits
            data = frame_records(
                arr, offsets[start:end], lengths[start:end], ts_ns[start:end],
                dst_ip=self.dst_ip, dst_port=self.dst_port, src_ip=self.src_ip, src_port=self.src_port, first_ip_id=self._ip_id,
            )
            self._file.write(memoryview(data))
            self._file_bytes += data.shape[0]
            self.bytes_written += data.shape[0]
            self.packets_written += end - start
            self._ip_id = (self._ip_id + end - start) & 0xFFFF
            start = end

    def close(self) -> None:
        """Flush and close the current file."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "PcapWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def write_pcap(
    path: str | Path,
    packets: list[bytes],
    ts_ns: np.ndarray | list[int],
    *,
    dst_ip: str | int,
    dst_port: int,
    **kwargs: object,
) -> Path:
    """Write a list of packets to one pcap (convenience for small captures and tests)."""
    lengths = np.array([len(p) for p in packets], dtype=np.int64)
    offsets = np.zeros(len(packets), dtype=np.int64)
    if len(packets):
        np.cumsum(lengths[:-1], out=offsets[1:])
    with PcapWriter(path, dst_ip=dst_ip, dst_port=dst_port, **kwargs) as w:  # type: ignore[arg-type]
        w.write(b"".join(packets), offsets, lengths, np.asarray(ts_ns, dtype=np.int64))
    return Path(path)


# A record's header and the smallest IPv4/UDP Ethernet frame (14 + 20 + 8 bytes): no capture
# holds more UDP payloads than records of this size fit in it, so _walk_udp's arrays, sized
# from the file, always have room (pages never written cost nothing).
_MIN_RECORD_GUESS = RECORD_HEADER_LEN + 42


_Walked = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, TruncatedTail | None,
                MalformedFrames | None]


def _walk_udp(buf: np.ndarray, order: str, nanosecond: bool, path: Path) -> _Walked:
    """Follow the record chain and locate each frame's UDP payload in one C pass
    (``omdp_pcap_walk_udp``: the walk and ``framing.parse_frames``' checks together; the
    numpy form cost a replay decode task two thirds of its pcap reading). Returns payload
    offsets, lengths, times, destination addresses and ports, the frames skipped, the tail,
    the malformed frames among those skipped."""
    size = len(buf)
    src = ffi.from_buffer("uint8_t[]", buf)
    big = int(order == ">")
    cap = max(size - GLOBAL_HEADER_LEN, 0) // _MIN_RECORD_GUESS + 1
    for _ in range(2):
        cols = (np.empty(cap, np.int64), np.empty(cap, np.uint32), np.empty(cap, np.int64), np.empty(cap, np.uint32),
                np.empty(cap, np.uint16))
        out = ffi.new("omdp_pcap_udp_t *", {"max": cap})
        out.pay_off, out.pay_len, out.ts_ns, out.dst_ip, out.dst_port = (
            ffi.cast(t, ffi.from_buffer(c)) for t, c in
            zip(("int64_t *", "uint32_t *", "int64_t *", "uint32_t *", "uint16_t *"), cols))
        if lib.omdp_pcap_walk_udp(src, size, big, 1 if nanosecond else 1000, out) < 0:
            raise PcapError(f"{path}: the record chain could not be walked")
        n = int(out.n_udp)
        if n <= cap:
            break
        cap = n
    pos, records = int(out.end), int(out.records)
    tail: TruncatedTail | None = None
    if pos != size:
        needed = RECORD_HEADER_LEN
        if size - pos >= RECORD_HEADER_LEN:
            needed += struct.unpack_from(order + "I", buf[pos + 8:pos + 12].tobytes())[0]
        tail = TruncatedTail(str(path), pos, records, needed, size - pos)
    bad = MalformedFrames(str(path), int(out.malformed), int(out.first_malformed)) if out.malformed else None
    return (*(c[:n] for c in cols), records - n, tail, bad)


def read_pcap(path: str | Path) -> Capture:
    """Memory-map a classic pcap (ns or us, either byte order, Ethernet) and locate its UDP
    payloads. Frames that are not read are counted in ``skipped``: those of another protocol,
    and those cut short by the snaplen or with a bad Ethernet/IPv4/UDP header, which are
    also reported: ``meta['malformed_frames']`` the ``MalformedFrames`` (or None) and
    ``meta['malformed_packets']`` their count. A record cut off at the end of the file (a
    writer that died) is dropped and reported: ``meta['truncated']`` is True,
    ``meta['truncated_tail']`` the ``TruncatedTail`` (file, offset, bytes) and
    ``meta['truncated_packets']`` counts it (1). Callers add both counts to their malformed
    packets."""
    path = Path(path)
    size = path.stat().st_size
    if size < GLOBAL_HEADER_LEN:
        raise PcapError(f"{path}: {size} bytes, shorter than a pcap header")
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    head = bytes(buf[:GLOBAL_HEADER_LEN])
    magic_le = struct.unpack_from("<I", head)[0]
    magic_be = struct.unpack_from(">I", head)[0]
    if magic_le in (PCAP_MAGIC_NS, PCAP_MAGIC_US):
        order, magic = "<", magic_le
    elif magic_be in (PCAP_MAGIC_NS, PCAP_MAGIC_US):
        order, magic = ">", magic_be
    else:
        raise PcapError(f"{path}: offset 0: magic {magic_le:#010x} is not a classic pcap")
    linktype = struct.unpack_from(order + "I", head, 20)[0] & 0x0FFFFFFF
    if linktype != LINKTYPE_ETHERNET:
        raise PcapError(f"{path}: offset 20: link type {linktype}, only Ethernet (1) is read")
    offsets, lengths, ts_ns, dst, dport, skipped, tail, bad = _walk_udp(buf, order, magic == PCAP_MAGIC_NS, path)
    return Capture(
        buf=buf,
        offsets=offsets,
        lengths=lengths,
        ts_ns=ts_ns,
        dst_ip=dst,
        dst_port=dport,
        skipped=skipped,
        source=str(path),
        meta={"truncated": tail is not None, "truncated_tail": tail, "truncated_packets": int(tail is not None),
              "malformed_frames": bad, "malformed_packets": bad.count if bad else 0,
              "nanosecond": magic == PCAP_MAGIC_NS},
    )
