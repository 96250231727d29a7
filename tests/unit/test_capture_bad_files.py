"""``omdp decode`` and ``omdp capture stats`` on files that are not captures or are cut
short: a clear error naming the file, a non-zero exit status, no traceback; a pcap cut
inside a packet is a typed, counted event (``TruncatedTail``)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedhandlers.captures import TruncatedTail, read_pcap, write_pcap
from ops.capture.stats import capture_stats
from ops.cli.main import cli
from test_capture_stats import T0, _packet

GROUP, PORT = "233.43.202.1", 11101


def _invoke(argv: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(cli, argv)
    out = r.output + (r.stderr if r.stderr_bytes is not None else "")
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        out += "Traceback"
    return r.exit_code, out


def _not_captures(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    files = {
        "random": (os.urandom(1000), "not a"),
        "text": (b"hello, this is a text file\n", "not a"),
        "short": (b"\xd4\xc3\xb2\xa1abc", "shorter than a pcap header"),
        "empty": (b"", "0 bytes"),
    }
    out = {}
    for name, (data, why) in files.items():
        p = tmp_path / f"{name}.bin"
        p.write_bytes(data)
        out[name] = (p, why)
    return out


@pytest.mark.parametrize("name", ["random", "text", "short", "empty"])
@pytest.mark.parametrize("command", [["decode"], ["capture", "stats"]])
def test_not_a_capture(tmp_path: Path, name: str, command: list[str]) -> None:
    path, why = _not_captures(tmp_path)[name]
    code, out = _invoke([*command, str(path)])
    assert code != 0
    assert str(path) in out and "Traceback" not in out
    if command == ["decode"] or name != "random":
        assert why in out


def _truncated(tmp_path: Path) -> Path:
    packets = [_packet(2, 1 + 2 * i) for i in range(4)]
    path = write_pcap(tmp_path / "line01.pcap", packets, [T0 + i * 1_000_000 for i in range(4)], dst_ip=GROUP,
                      dst_port=PORT)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 7])  # cut inside the last packet
    return path


def test_reader_reports_a_truncated_tail(tmp_path: Path) -> None:
    path = _truncated(tmp_path)
    cap = read_pcap(path)
    tail = cap.meta["truncated_tail"]
    assert isinstance(tail, TruncatedTail) and len(cap) == 3 and cap.meta["truncated_packets"] == 1
    assert tail.record == 3 and tail.available == tail.needed - 7
    assert str(path) in tail.describe() and "truncated" in tail.describe()


def test_decode_counts_the_truncation(tmp_path: Path) -> None:
    path = _truncated(tmp_path)
    code, out = _invoke(["decode", str(path)])
    assert code == 1 and "Traceback" not in out
    assert "truncated" in out and "1 malformed (1 truncated)" in out


def test_capture_stats_counts_the_truncation(tmp_path: Path) -> None:
    path = _truncated(tmp_path)
    st = capture_stats(path)
    assert st.total.packets == 3 and st.total.bad_packets == 1 and st.total.truncated_packets == 1
    code, out = _invoke(["capture", "stats", str(path)])
    assert code != 0 and "Traceback" not in out
    assert "malformed packets: 1 (1 truncated)" in out and str(path) in out


def _with_bad_frames(tmp_path: Path) -> Path:
    """Three good packets, then a record whose frame the snaplen cut (10 of its bytes
    missing), one whose IPv4 header length is 16, one whose UDP length exceeds its datagram,
    and an ARP frame (another protocol: skipped, not malformed)."""
    import struct

    path = tmp_path / "line01.pcap"
    write_pcap(path, [_packet(2, 1 + 2 * i) for i in range(3)], [T0 + i for i in range(3)], dst_ip=GROUP, dst_port=PORT)
    buf = path.read_bytes()
    frame = buf[24 + 16:24 + 16 + struct.unpack_from("<I", buf, 24 + 8)[0]]
    bad_ihl = bytearray(frame)
    bad_ihl[14] = 0x44
    bad_udp = bytearray(frame)
    struct.pack_into(">H", bad_udp, 14 + 20 + 4, len(frame) - 14 - 20 + 1)
    arp = b"\1" * 12 + b"\x08\x06" + b"\0" * 28
    records = [(frame[:-10], len(frame)), (bytes(bad_ihl), len(frame)), (bytes(bad_udp), len(frame)), (arp, len(arp))]
    for i, (data, orig) in enumerate(records):
        buf += struct.pack("<IIII", 1_202_135_400 + i, 0, len(data), orig) + data
    path.write_bytes(buf)
    return path


def test_frames_cut_by_the_snaplen_or_with_a_bad_header_are_counted(tmp_path: Path) -> None:
    """They were dropped silently: decode said 0 malformed and exited 0."""
    path = _with_bad_frames(tmp_path)
    cap = read_pcap(path)
    bad = cap.meta["malformed_frames"]
    assert len(cap) == 3 and cap.skipped == 4 and cap.meta["malformed_packets"] == bad.count == 3
    assert bad.first_offset == 24 + 3 * (16 + len(cap.buf[cap.offsets[0] - 42:cap.offsets[0] + cap.lengths[0]]))
    code, out = _invoke(["decode", str(path)])
    assert code == 1 and "Traceback" not in out
    assert "6 packets" in out and "3 malformed (3 cut short or bad IPv4/UDP header)" in out
    assert f"{path}: 3 frame(s) cut short or with a bad IPv4/UDP header (the first at offset {bad.first_offset})" in out
    st = capture_stats(path)
    assert st.total.packets == 3 and st.total.bad_packets == 3
    code, out = _invoke(["capture", "stats", str(path)])
    assert code == 1 and "Traceback" not in out and "malformed packets: 3" in out
    assert f"{path}: 3 malformed packet(s) ({bad.describe()})" in out


@pytest.mark.parametrize("argv,copy", [([], "a"), (["--copies", "b"], "b"), (["--copies", "B"], "b"),
                                       (["--copies", "a"], "a"), (["--copy", "b"], "b")])
def test_capture_stats_copies_spellings(tmp_path: Path, argv: list[str], copy: str) -> None:
    for name, n in (("line01.pcap", 2), ("line01-b.pcap", 3)):
        write_pcap(tmp_path / name, [_packet(1, 1 + i) for i in range(n)], [T0 + i * 1000 for i in range(n)],
                   dst_ip=GROUP, dst_port=PORT)
    code, out = _invoke(["capture", "stats", str(tmp_path), *argv])
    assert code == 0, out
    assert f"    1 {2 if copy == 'a' else 3:>10,}" in out


def test_analytics_copies_either_case() -> None:
    from ops.cli.analytics import analytics

    feeds = analytics.commands["feeds"]
    ctx = feeds.make_context("feeds", ["--date", "2008-02-04", "--copies", "b"], resilient_parsing=False)
    assert ctx.params["copies"] == "B"
