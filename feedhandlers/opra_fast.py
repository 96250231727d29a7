"""OPRA FAST V2 codec, Python face: packets <-> arrays of OPRA message records.

A thin view over ``native/include/omdp/opra_fast.h``: every call crosses into C once per
packet (``decode_packet``, ``encode_packet``) or once per batch of packets
(``decode_batch``, ``encode_stream``, ``render_records``); no message is decoded in Python.
Variable parts (text, default messages, 'Y' entries) live in a side buffer that records
point into with ``var_off``/``var_len``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from feedhandlers.opra_batch import BatchDecoder, DecodedBatch, decode_batch
from feedhandlers.opra_errors import CAPACITY, OpraDecodeError, OpraEncodeError
from feedhandlers.opra_record import NO_UNDERLYING, OPRA_MSG_DTYPE, OPRA_Y_ENTRY_DTYPE
from omdp.native import ffi, lib
from omdp.record import RT_OPRA_MSG

MAX_PACKET_BYTES = lib.OMDP_OPRA_MAX_PACKET
"""1456: the largest OPRA packet (one Ethernet MTU of UDP payload)."""
MAX_MESSAGES = lib.OMDP_OPRA_MAX_MESSAGES
HEADER_SIZE = lib.OMDP_OPRA_HEADER_SIZE
UNDEF_PRICE = lib.OMDP_UNDEF_PRICE
"""Normalized price of a field whose denominator code is not 'A'..'I'."""
Y_ENTRY_SIZE = OPRA_Y_ENTRY_DTYPE.itemsize

__all__ = [
    "BatchDecoder",
    "DecodedBatch",
    "MAX_PACKET_BYTES",
    "OpraDecodeError",
    "OpraEncodeError",
    "Packet",
    "UNDEF_PRICE",
    "build_packet",
    "decode_batch",
    "decode_packet",
    "encode_packet",
    "encode_records",
    "encode_stream",
    "new_records",
    "render_ascii",
    "render_records",
    "render_text",
    "RENDER_STYLES",
    "TABLE_HEADER",
]


def new_records(n: int) -> np.ndarray:
    """``n`` empty OPRA message records with the record header filled in (type, length) and
    no underlying assigned: the starting point for building messages to encode."""
    rec = np.zeros(n, dtype=OPRA_MSG_DTYPE)
    rec["hdr"]["type"] = RT_OPRA_MSG
    rec["hdr"]["length"] = OPRA_MSG_DTYPE.itemsize
    rec["underlying_id"] = NO_UNDERLYING
    return rec


def _msgs(records: np.ndarray) -> object:
    if records.dtype != OPRA_MSG_DTYPE:
        raise TypeError(f"records must have OPRA_MSG_DTYPE, not {records.dtype}")
    return ffi.from_buffer("omdp_opra_msg_t[]", np.ascontiguousarray(records))


def _u8(data: bytes | bytearray | memoryview | np.ndarray) -> object:
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data, dtype=np.uint8)
    return ffi.from_buffer("uint8_t[]", data)


@dataclass
class Packet:
    """One decoded packet: its header's block sequence and count, its records, and the side
    buffer their variable parts point into."""

    block_seq: bytes
    count: int
    records: np.ndarray
    side: bytes

    def __len__(self) -> int:
        return int(self.records.shape[0])

    def text(self, i: int) -> bytes:
        """The text of a 'C'/'H' message, or the whole ASCII of a default message."""
        r = self.records[i]
        return self.side[int(r["var_off"]) : int(r["var_off"]) + int(r["var_len"])]

    def y_entries(self, i: int) -> np.ndarray:
        """The entries of a 'Y' message as an array of OPRA_Y_ENTRY_DTYPE."""
        r = self.records[i]
        n = int(r["y_count"])
        if n == 0:
            return np.zeros(0, dtype=OPRA_Y_ENTRY_DTYPE)
        return np.frombuffer(self.side, dtype=OPRA_Y_ENTRY_DTYPE, count=n, offset=int(r["var_off"]))


def _header_count(data: bytes | memoryview) -> int:
    digits = bytes(data[12:15])
    return int(digits) if len(digits) == 3 and digits.isdigit() else 0


def decode_packet(data: bytes | bytearray | memoryview | np.ndarray, packet_index: int = 0) -> Packet:
    """Decode one OPRA FAST V2 packet; raises OpraDecodeError naming where it is malformed."""
    raw = bytes(data) if not isinstance(data, bytes) else data
    count = _header_count(raw)
    out = np.zeros(max(count, 1), dtype=OPRA_MSG_DTYPE)
    side_cap = len(raw) + 64
    err = ffi.new("omdp_opra_error_t*")
    used = ffi.new("uint32_t*")
    while True:
        side = np.zeros(side_cap, dtype=np.uint8)
        used[0] = 0
        rc = lib.omdp_opra_decode_packet(
            raw, len(raw), packet_index, ffi.from_buffer("omdp_opra_msg_t[]", out), out.shape[0],
            ffi.from_buffer("uint8_t[]", side), side_cap, used, err,
        )
        if rc != CAPACITY:
            break
        side_cap *= 4
    if rc < 0:
        raise OpraDecodeError.from_c(err)
    return Packet(block_seq=raw[2:12], count=count, records=out[:rc], side=side[: used[0]].tobytes())


def encode_records(records: np.ndarray, side: bytes | np.ndarray = b"") -> bytes:
    """Encode 1..999 records as one packet, following the spec's encoder rules."""
    n = int(records.shape[0])
    cap = HEADER_SIZE + 1 + n * 300 + int(records["var_len"].sum() if n else 0) + 2048
    out = bytearray(cap)
    err = ffi.new("omdp_opra_error_t*")
    side_buf = side if len(side) else b"\0"
    rc = lib.omdp_opra_encode_packet(_msgs(records), n, _u8(side_buf), len(side), ffi.from_buffer(out), cap, err)
    if rc < 0:
        raise OpraEncodeError(int(err.code), int(err.message_index), int(err.slot))
    return bytes(out[:rc])


def encode_packet(packet: Packet) -> bytes:
    """Encode a packet's records (with its side buffer) back to wire bytes.

    ``encode_packet(decode_packet(p)) == p`` for every packet SIAC's encoder makes.
    """
    return encode_records(packet.records, packet.side)


_STREAM_CHUNK = 1 << 20


def encode_stream(
    records: np.ndarray,
    side: bytes | np.ndarray,
    wanted_counts: np.ndarray | list[int],
    max_packet_bytes: int = MAX_PACKET_BYTES,
) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """Cut a run of records into packets.

    Packet k takes up to ``wanted_counts[k % len(wanted_counts)]`` records, fewer when the
    next record would make it longer than ``max_packet_bytes`` or could not follow in the
    same packet. Returns ``(buf, offsets, lengths, first_msg)``: packet k is
    ``buf[offsets[k]:offsets[k]+lengths[k]]`` and begins with record ``first_msg[k]``.
    """
    records = np.ascontiguousarray(records)
    n = int(records.shape[0])
    wanted = np.ascontiguousarray(np.asarray(wanted_counts, dtype=np.uint32))
    if wanted.size == 0:
        raise ValueError("wanted_counts is empty")
    side_arr = np.frombuffer(side, dtype=np.uint8) if isinstance(side, (bytes, bytearray, memoryview)) else np.ascontiguousarray(side, np.uint8)
    side_ptr = ffi.from_buffer("uint8_t[]", side_arr if side_arr.size else np.zeros(1, np.uint8))
    err = ffi.new("omdp_opra_error_t*")
    res = ffi.new("omdp_opra_stream_result_t*")
    parts: list[bytes] = []
    offs: list[np.ndarray] = []
    lens: list[np.ndarray] = []
    firsts: list[np.ndarray] = []
    done = 0
    packets = 0
    base = 0
    while done < n:
        chunk = records[done : done + _STREAM_CHUNK]
        m = int(chunk.shape[0])
        cap = m * 64 + int(chunk["var_len"].astype(np.int64).sum()) + 4 * max_packet_bytes
        max_pkts = m
        rot = np.roll(wanted, -(packets % wanted.size))
        while True:
            out = np.empty(cap, dtype=np.uint8)
            pkt_off = np.empty(max_pkts, dtype=np.uint64)
            pkt_len = np.empty(max_pkts, dtype=np.uint32)
            pkt_first = np.empty(max_pkts, dtype=np.uint64)
            k = lib.omdp_opra_encode_stream(
                _msgs(chunk), m, side_ptr, side_arr.size, ffi.from_buffer("uint32_t[]", rot), rot.size,
                max_packet_bytes, ffi.from_buffer("uint8_t[]", out), cap,
                ffi.from_buffer("uint64_t[]", pkt_off), ffi.from_buffer("uint32_t[]", pkt_len),
                ffi.from_buffer("uint64_t[]", pkt_first), max_pkts, res, err,
            )
            if k < 0:
                raise OpraEncodeError(int(err.code), done + int(err.message_index), int(err.slot))
            if k > 0:
                break
            cap *= 2
        parts.append(out[: res.bytes_used].tobytes())
        offs.append(pkt_off[:k].astype(np.int64) + base)
        lens.append(pkt_len[:k].copy())
        firsts.append(pkt_first[:k].astype(np.int64) + done)
        base += int(res.bytes_used)
        done += int(res.messages_done)
        packets += int(k)
    if not parts:
        return b"", np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int64)
    return b"".join(parts), np.concatenate(offs), np.concatenate(lens), np.concatenate(firsts)


RENDER_STYLES = {"ascii": lib.OMDP_OPRA_RENDER_ASCII, "table": lib.OMDP_OPRA_RENDER_TABLE}

TABLE_HEADER = (
    f"{'c'} {'seq':>10} {'time':12} {'p'} {'root':6} {'expiry':10} {'strike':>10} {'p/c'} "
    f"{'bid':>10} x {'size':6} / {'offer':>10} x {'size':6} bbo"
)
"""Column titles of the 'table' rendering (quotes fill every column; other categories
describe themselves after the p/c column, text messages after the participant)."""


def render_text(records: np.ndarray, side: bytes | np.ndarray, style: str = "ascii") -> tuple[str, np.ndarray]:
    """All records rendered in one C call: ``(text, line_end)``, each line ending in a newline,
    ``line_end[i]`` the offset just after record i's newline."""
    if style not in RENDER_STYLES:
        raise ValueError(f"style must be one of {sorted(RENDER_STYLES)}")
    n = int(records.shape[0])
    if n == 0:
        return "", np.zeros(0, dtype=np.int64)
    side_arr = np.frombuffer(side, dtype=np.uint8) if isinstance(side, (bytes, bytearray, memoryview)) else np.ascontiguousarray(side, np.uint8)
    side_ptr = ffi.from_buffer("uint8_t[]", side_arr if side_arr.size else np.zeros(1, np.uint8))
    cap = n * 400 + int(records["var_len"].astype(np.int64).sum())
    out = np.empty(cap, dtype=np.uint8)
    ends = np.empty(n, dtype=np.uint64)
    rc = lib.omdp_opra_render_batch(
        _msgs(records), n, side_ptr, side_arr.size, RENDER_STYLES[style], ffi.from_buffer("char[]", out), cap,
        ffi.from_buffer("uint64_t[]", ends),
    )
    if rc < 0:
        raise OpraEncodeError(int(rc), -1, -1)
    return out[:rc].tobytes().decode("latin-1"), ends.astype(np.int64)


def render_records(records: np.ndarray, side: bytes | np.ndarray, style: str = "ascii") -> list[str]:
    """Render records one line each: ``style`` 'ascii' is SIAC's reference layout (spec
    section 7), 'table' readable columns. One C call for all of them."""
    text, ends = render_text(records, side, style)
    starts = np.concatenate([[0], ends[:-1]]) if ends.size else ends
    return [text[s : e - 1] for s, e in zip(starts.tolist(), ends.tolist())]


def render_ascii(packet: Packet) -> list[str]:
    """A packet's messages as SIAC's reference decoder prints them, one string each."""
    return render_records(packet.records, packet.side, "ascii")


def build_packet(
    records: np.ndarray,
    texts: dict[int, bytes] | None = None,
    y_groups: dict[int, np.ndarray] | None = None,
) -> Packet:
    """Assemble a Packet from records plus their variable parts: ``texts[i]`` for 'C'/'H'/
    default messages, ``y_groups[i]`` (OPRA_Y_ENTRY_DTYPE) for 'Y' messages. Sets each
    record's var_off/var_len (and y_count); the block sequence is what the encoder derives
    (characters 4..13 of the first message's ASCII rendering)."""
    records = records.copy()
    side = bytearray()
    for i, t in sorted((texts or {}).items()):
        records[i]["var_off"] = len(side)
        records[i]["var_len"] = len(t)
        side += t
    for i, g in sorted((y_groups or {}).items()):
        g = np.ascontiguousarray(g, dtype=OPRA_Y_ENTRY_DTYPE)
        side += b"\0" * (-len(side) % 8)
        records[i]["var_off"] = len(side)
        records[i]["var_len"] = g.nbytes
        records[i]["y_count"] = g.shape[0]
        side += g.tobytes()
    first = render_records(records[:1], bytes(side))
    block_seq = first[0].ljust(14).encode("latin-1")[4:14] if first else b" " * 10
    return Packet(block_seq=block_seq, count=int(records.shape[0]), records=records, side=bytes(side))
