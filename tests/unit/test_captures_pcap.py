"""pcap writer/reader: round trip of payloads, nanosecond times and destinations, valid IPv4
checksums, rotation, frames we do not carry, and files that tcpdump opens."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from feedhandlers.captures import PcapError, PcapWriter, read_pcap, rotated_paths, write_pcap
from feedhandlers.captures.framing import FRAME_HEADER_LEN, ip_to_int
from feedhandlers.captures.pcap import GLOBAL_HEADER_LEN, RECORD_DTYPE

GROUP = "233.43.202.7"
PORT = 51007


def _packets(n: int, seed: int = 3) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, int(rng.integers(16, 1456)), dtype=np.uint8).tobytes() for _ in range(n)]


def _ts(n: int) -> np.ndarray:
    return 1_202_135_400_000_000_000 + np.arange(n, dtype=np.int64) * 41_667 + 7


def test_round_trip_payloads_times_destination(tmp_path: Path) -> None:
    pk = _packets(50)
    ts = _ts(50)
    write_pcap(tmp_path / "line01.pcap", pk, ts, dst_ip=GROUP, dst_port=PORT)
    cap = read_pcap(tmp_path / "line01.pcap")
    assert cap.payloads() == pk
    assert np.array_equal(cap.ts_ns, ts)
    assert set(cap.dst_ip.tolist()) == {ip_to_int(GROUP)}
    assert set(cap.dst_port.tolist()) == {PORT}
    assert cap.skipped == 0 and cap.meta["nanosecond"] and not cap.meta["truncated"]


def test_file_layout_magic_and_ipv4_checksum(tmp_path: Path) -> None:
    pk = _packets(5)
    path = write_pcap(tmp_path / "x.pcap", pk, _ts(5), dst_ip=GROUP, dst_port=PORT)
    raw = path.read_bytes()
    magic, major, minor, _, _, snap, link = struct.unpack_from("<IHHiIII", raw)
    assert (magic, major, minor, link) == (0xA1B23C4D, 2, 4, 1)
    assert snap >= 1456 + FRAME_HEADER_LEN
    pos = GLOBAL_HEADER_LEN
    for p in pk:
        sec, nsec, incl, orig = struct.unpack_from("<IIII", raw, pos)
        assert incl == orig == len(p) + FRAME_HEADER_LEN and nsec < 1_000_000_000
        frame = raw[pos + 16 : pos + 16 + incl]
        assert frame[:6] == bytes([0x01, 0x00, 0x5E, 43, 202, 7])  # RFC 1112 multicast MAC
        ip = frame[14:34]
        words = struct.unpack(">10H", ip)
        s = sum(words)
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        assert s == 0xFFFF  # a valid header checksum sums to all ones
        assert struct.unpack(">H", ip[2:4])[0] == len(p) + 28
        udp = frame[34:42]
        assert struct.unpack(">HHHH", udp)[1:] == (PORT, len(p) + 8, 0)
        assert frame[42:] == p
        pos += 16 + incl
    assert pos == len(raw)


def test_bulk_writer_matches_list_writer_and_rotates(tmp_path: Path) -> None:
    pk = _packets(400, seed=5)
    ts = _ts(400)
    buf = b"".join(pk)
    lengths = np.array([len(p) for p in pk])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    limit = 64 * 1024
    with PcapWriter(tmp_path / "line03.pcap", dst_ip=GROUP, dst_port=PORT, max_bytes=limit) as w:
        w.write(buf, offsets[:150], lengths[:150], ts[:150])
        w.write(buf, offsets[150:], lengths[150:], ts[150:])
    files = rotated_paths(tmp_path / "line03.pcap")
    assert files == w.paths and len(files) > 2
    assert files[1].name == "line03.1.pcap"
    assert all(f.stat().st_size <= limit for f in files)
    got: list[bytes] = []
    got_ts: list[np.ndarray] = []
    for f in files:
        cap = read_pcap(f)
        got += cap.payloads()
        got_ts.append(cap.ts_ns)
    assert got == pk
    assert np.array_equal(np.concatenate(got_ts), ts)
    assert w.packets_written == 400


def test_non_contiguous_batch_is_gathered(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4
    offsets = np.array([500, 10, 300])
    lengths = np.array([20, 30, 40])
    with PcapWriter(tmp_path / "g.pcap", dst_ip=GROUP, dst_port=PORT) as w:
        w.write(data, offsets, lengths, _ts(3))
    cap = read_pcap(tmp_path / "g.pcap")
    assert cap.payloads() == [data[o : o + n] for o, n in zip(offsets, lengths)]


def test_non_udp_frames_are_skipped_and_truncated_tail_noted(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "m.pcap", _packets(3), _ts(3), dst_ip=GROUP, dst_port=PORT)
    raw = bytearray(path.read_bytes())
    arp = bytes(6) + bytes(6) + b"\x08\x06" + bytes(28)
    raw += struct.pack("<IIII", 1, 0, len(arp), len(arp)) + arp
    raw += struct.pack("<IIII", 1, 0, 500, 500) + b"\x00" * 10  # a record cut off by a dying writer
    path.write_bytes(bytes(raw))
    cap = read_pcap(path)
    assert len(cap) == 3 and cap.skipped == 1 and cap.meta["truncated"]


def test_rejects_non_pcap(tmp_path: Path) -> None:
    p = tmp_path / "bad.pcap"
    p.write_bytes(b"\x00" * 40)
    with pytest.raises(PcapError, match="offset 0"):
        read_pcap(p)


def test_microsecond_big_endian_pcap_is_read(tmp_path: Path) -> None:
    pk = _packets(2)
    path = write_pcap(tmp_path / "le.pcap", pk, _ts(2), dst_ip=GROUP, dst_port=PORT)
    raw = path.read_bytes()
    out = bytearray(struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    pos = GLOBAL_HEADER_LEN
    while pos < len(raw):
        sec, nsec, incl, orig = struct.unpack_from("<IIII", raw, pos)
        out += struct.pack(">IIII", sec, nsec // 1000, incl, orig) + raw[pos + 16 : pos + 16 + incl]
        pos += 16 + incl
    (tmp_path / "be.pcap").write_bytes(bytes(out))
    cap = read_pcap(tmp_path / "be.pcap")
    assert cap.payloads() == pk
    assert np.array_equal(cap.ts_ns, (_ts(2) // 1000) * 1000)


def test_record_header_dtype_is_58_bytes() -> None:
    assert RECORD_DTYPE.itemsize == 16 + FRAME_HEADER_LEN == 58


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed (Debian package tcpdump)")
def test_tcpdump_reads_our_pcap(tmp_path: Path) -> None:
    pk = _packets(7)
    path = write_pcap(tmp_path / "line05.pcap", pk, _ts(7), dst_ip=GROUP, dst_port=PORT)
    res = subprocess.run(
        ["tcpdump", "-nn", "-v", "-tt", "-r", str(path), "--time-stamp-precision=nano"], capture_output=True, text=True, timeout=30
    )
    assert res.returncode == 0, res.stderr
    assert "bad cksum" not in res.stdout
    lines = [ln for ln in res.stdout.splitlines() if f"> {GROUP}.{PORT}: UDP, length" in ln]
    assert [int(ln.rsplit(" ", 1)[1]) for ln in lines] == [len(p) for p in pk]
    assert "1202135400.000000007 IP" in res.stdout  # nanosecond timestamps survive
