"""The pcap record chain in C (pcap_walk.h): every whole record's offset, length and time
fields in either byte order, the chain's end at a record cut short, at a header cut short
and at a length pointing far past the end; max bounds what is written; a NULL or a buffer
shorter than the global header is refused; the one-pass walk that locates each frame's UDP
payload (omdp_pcap_walk_udp) equals framing.parse_frames over the same records and counts
the frames cut short or with a bad header apart from those of another protocol. Named
"sanitize": CI also runs it under ASan/UBSan."""
from __future__ import annotations

import struct

import numpy as np

from omdp.native import ffi, lib


def _pcap(order: str, payloads: list[bytes]) -> bytes:
    out = bytearray(b"\0" * 24)
    for i, p in enumerate(payloads):
        out += struct.pack(order + "IIII", 1000 + i, 7 * i, len(p), len(p)) + p
    return bytes(out)


def _walk(buf: bytes, big: bool, max_out: int) -> tuple[int, list[np.ndarray], int]:
    src = np.frombuffer(buf, np.uint8).copy()                # exactly the bytes: ASan sees a read past them
    cols = [np.full(max(max_out, 1), -1, np.int64) for _ in range(4)]
    end = ffi.new("uint64_t *")
    n = lib.omdp_pcap_walk(ffi.from_buffer("uint8_t[]", src), len(buf), int(big),
                           *(ffi.cast("int64_t *", ffi.from_buffer(c)) for c in cols), max_out, end)
    return n, cols, int(end[0])


def test_whole_records_in_either_byte_order() -> None:
    payloads = [b"a" * 5, b"", b"bc" * 40]
    for order in ("<", ">"):
        buf = _pcap(order, payloads)
        n, (offs, lens, secs, fracs), end = _walk(buf, order == ">", 8)
        assert n == 3 and end == len(buf)
        assert list(offs[:3]) == [40, 61, 77] and list(lens[:3]) == [5, 0, 80]
        assert list(secs[:3]) == [1000, 1001, 1002] and list(fracs[:3]) == [0, 7, 14]


def test_the_chain_stops_at_a_cut_record_or_header() -> None:
    buf = _pcap("<", [b"x" * 10, b"y" * 10])
    whole = len(buf)
    assert _walk(buf[:-3], False, 8)[0::2] == (1, 50)         # the second record's data cut short
    assert _walk(buf[:whole - 15], False, 8)[0::2] == (1, 50)  # its header cut short
    huge = bytearray(buf)
    struct.pack_into("<I", huge, 50 + 8, 0xFFFFFFFF)          # a length far past the end
    assert _walk(bytes(huge), False, 8)[0::2] == (1, 50)
    assert _walk(buf[:24], False, 8)[0::2] == (0, 24)


def test_max_bounds_the_output_and_bad_arguments_are_refused() -> None:
    buf = _pcap("<", [b"z"] * 5)
    n, cols, end = _walk(buf, False, 2)
    assert n == 5 and end == len(buf) and list(cols[0][2:]) == []
    assert _walk(buf, False, 0)[0] == 5                        # counting only: nothing written
    end = ffi.new("uint64_t *")
    assert lib.omdp_pcap_walk(ffi.NULL, 100, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0, end) == -1
    short = np.zeros(23, np.uint8)
    assert lib.omdp_pcap_walk(ffi.from_buffer("uint8_t[]", short), 23, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 0,
                              end) == -1
    assert lib.omdp_pcap_walk(ffi.from_buffer("uint8_t[]", short), 23, 0, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, 3,
                              ffi.NULL) == -1


def _frame(payload: bytes, *, vlan: bool = False, etype: int = 0x0800, version: int = 4, ihl: int = 5,
           proto: int = 17, frag: int = 0, total_extra: int = 0, ulen_extra: int = 0, cut: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame with one thing wrong at a time (or nothing)."""
    udp = struct.pack(">HHHH", 30000, 51001, 8 + len(payload) + ulen_extra, 0) + payload
    opts = b"\0" * (4 * ihl - 20) if ihl >= 5 else b""
    ip = struct.pack(">BBHHHBBHII", version << 4 | ihl, 0, 20 + len(opts) + len(udp) + total_extra, 7, frag, 64, proto, 0,
                     0x0A000001, 0xE0000101) + opts
    eth = b"\1" * 12 + (struct.pack(">HH", 0x8100, 5) if vlan else b"") + struct.pack(">H", etype)
    f = eth + ip + udp
    return f[:len(f) - cut] if cut else f


def _udp_walk(buf: bytes, big: bool, nanosecond: bool, max_out: int):
    src = np.frombuffer(buf, np.uint8).copy()                # exactly the bytes: ASan sees a read past them
    cols = (np.full(max(max_out, 1), -1, np.int64), np.zeros(max(max_out, 1), np.uint32),
            np.zeros(max(max_out, 1), np.int64), np.zeros(max(max_out, 1), np.uint32), np.zeros(max(max_out, 1), np.uint16))
    out = ffi.new("omdp_pcap_udp_t *", {"max": max_out})
    out.pay_off, out.pay_len, out.ts_ns, out.dst_ip, out.dst_port = (
        ffi.cast(t, ffi.from_buffer(c)) for t, c in
        zip(("int64_t *", "uint32_t *", "int64_t *", "uint32_t *", "uint16_t *"), cols))
    rc = lib.omdp_pcap_walk_udp(ffi.from_buffer("uint8_t[]", src), len(buf), int(big), 1 if nanosecond else 1000, out)
    return rc, out, cols


def test_udp_walk_equals_the_numpy_frame_checks() -> None:
    """omdp_pcap_walk_udp finds the payloads framing.parse_frames accepts over the records
    omdp_pcap_walk finds: good frames (with and without a VLAN tag, IP options) and each
    way a frame is refused, then random bytes; times scaled for ns and us captures."""
    from feedhandlers.captures.framing import parse_frames

    frames = [_frame(b"abc"), _frame(b"x" * 100, vlan=True), _frame(b"", ihl=7), _frame(b"q", etype=0x0806),
              _frame(b"q", version=6), _frame(b"q", ihl=4), _frame(b"q", proto=6), _frame(b"q", frag=0x2000),
              _frame(b"q", frag=0x4000), _frame(b"q" * 9, total_extra=3), _frame(b"q" * 9, ulen_extra=1),
              _frame(b"q" * 9, ulen_extra=-1), _frame(b"q" * 9, ulen_extra=-9), _frame(b"q" * 9, cut=4),
              _frame(b"q", cut=30), b"\1" * 13, b"", b"\1" * 12 + b"\x81\x00\x00", _frame(b"z" * 40)]
    rng = np.random.default_rng(5)
    fuzz = [bytes(rng.integers(0, 256, int(rng.integers(0, 80)), dtype=np.uint8)) for _ in range(200)]
    for f in fuzz[::3]:                                      # random bytes behind a valid Ethernet/IPv4 start
        fuzz.append(b"\1" * 12 + b"\x08\x00\x45" + f)
    for payloads in (frames, fuzz):
        for order in ("<", ">"):
            buf = _pcap(order, payloads) + b"\0" * 7            # and a record header cut short
            for ns in (True, False):
                n, (offs, lens, secs, fracs), end = _walk(buf, order == ">", len(payloads) + 1)
                ok, pay_off, pay_len, dst, dport = parse_frames(np.frombuffer(buf, np.uint8), offs[:n], lens[:n])
                rc, out, (c_off, c_len, c_ts, c_dst, c_port) = _udp_walk(buf, order == ">", ns, len(payloads))
                k = int(out.n_udp)
                assert rc == 0 and out.records == n == len(payloads) and out.end == end == len(buf) - 7
                # of the listed frames: the good ones, DF set, UDP shorter than the IP datagram allows
                assert k == int(ok.sum()) and (payloads is fuzz or k == 7)
                # the others: 2 of another protocol (ARP, TCP), skipped; 10 cut short or with a
                # bad header, counted (the first is the 5th record, the IPv4 version 6)
                assert out.malformed <= len(payloads) - k and (payloads is fuzz or out.malformed == 10)
                assert payloads is fuzz or out.first_malformed == 24 + sum(16 + len(f) for f in payloads[:4])
                assert list(c_off[:k]) == list(pay_off[ok]) and list(c_len[:k]) == list(pay_len[ok])
                assert list(c_dst[:k]) == list(dst[ok]) and list(c_port[:k]) == list(dport[ok])
                assert list(c_ts[:k]) == list((secs[:n] * 1_000_000_000 + fracs[:n] * (1 if ns else 1000))[ok])


def test_udp_walk_bounds_its_output_and_refuses_bad_arguments() -> None:
    buf = _pcap("<", [_frame(b"p")] * 5)
    rc, out, cols = _udp_walk(buf, False, True, 2)
    assert rc == 0 and out.n_udp == 5 and out.records == 5 and list(cols[0][2:]) == []
    rc, out, _ = _udp_walk(buf, False, True, 0)               # counting only
    assert rc == 0 and out.n_udp == 5
    src = np.frombuffer(buf, np.uint8).copy()
    empty = ffi.new("omdp_pcap_udp_t *", {"max": 0})
    assert lib.omdp_pcap_walk_udp(ffi.NULL, 100, 0, 1, empty) == -1
    assert lib.omdp_pcap_walk_udp(ffi.from_buffer("uint8_t[]", src), 23, 0, 1, empty) == -1
    assert lib.omdp_pcap_walk_udp(ffi.from_buffer("uint8_t[]", src), len(buf), 0, 0, empty) == -1
    assert lib.omdp_pcap_walk_udp(ffi.from_buffer("uint8_t[]", src), len(buf), 0, 1, ffi.NULL) == -1
    assert lib.omdp_pcap_walk_udp(ffi.from_buffer("uint8_t[]", src), len(buf), 0, 1,
                                  ffi.new("omdp_pcap_udp_t *", {"max": 3})) == -1  # room claimed, no arrays
