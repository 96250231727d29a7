"""OPRA binary output (OBI, block format version 6) codec, Python face: blocks <-> arrays of
OPRA message records, the same records FAST V2 decodes to (``native/include/omdp/opra_obi.h``
has the field map, docs/obi.md the format's choices).

Every call crosses into C once per block (``decode_block``, ``encode_block``) or once per
batch of blocks (``ObiBatchDecoder``); no message is decoded in Python. A block's header
values that are not per message (nanosecond time, feed indicator, size, checksum) come back
as an ``OBI_BLOCK_DTYPE`` row, which ``encode_block`` takes back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from feedhandlers.opra_obi_errors import (
    CAPACITY,
    OBI_BLOCK_DTYPE,
    OBI_EXTRA_DTYPE,
    ObiDecodeError,
    ObiEncodeError,
    counters_dict,
)
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib

MAX_BLOCK_BYTES = lib.OMDP_OBI_MAX_BLOCK
"""1000: the largest block, pad byte included."""
HEADER_SIZE = lib.OMDP_OBI_HEADER_SIZE
MAX_MESSAGES = lib.OMDP_OBI_MAX_MESSAGES
WIRE_OBI = lib.OMDP_OBI_WIRE_OBI
WIRE_SHORT = lib.OMDP_OBI_WIRE_SHORT
WIRE_EXTRA = lib.OMDP_OBI_WIRE_EXTRA
WIRE_FEED = lib.OMDP_OBI_WIRE_FEED
KEEP_BAD_CHECKSUM = lib.OMDP_OBI_KEEP_BAD_CHECKSUM
BLK_CHECKSUM_BAD = lib.OMDP_OBI_BLK_CHECKSUM_BAD
BLK_FEED_FLAGGED = lib.OMDP_OBI_BLK_FEED_FLAGGED
BLK_PAD = lib.OMDP_OBI_BLK_PAD
BLK_EMPTY = lib.OMDP_OBI_BLK_EMPTY
EXTRA_SIZE = OBI_EXTRA_DTYPE.itemsize


def is_obi(data: bytes | bytearray | memoryview) -> bool:
    """Whether a datagram looks like an OBI block: version 6, a block size within the
    datagram and the format's limits. (A FAST V2 packet starts with SOH, 0x01.)"""
    if len(data) < HEADER_SIZE or data[0] != lib.OMDP_OBI_VERSION:
        return False
    size = (data[1] << 8) | data[2]
    return HEADER_SIZE <= size <= min(len(data), MAX_BLOCK_BYTES)


def detect_feed(data: bytes | bytearray | memoryview) -> str | None:
    """'obi' for an OBI v6 block, 'fast' for a FAST V2 packet (SOH, version 2), None when the
    bytes are neither: how ``--format auto`` tells a capture's feed from its first packet."""
    if is_obi(data):
        return "obi"
    if bytes(data[:2]) == b"\x01\x02":
        return "fast"
    return None


FEED_FORMATS = {"fast": "opra-fast-v2", "obi": "obi-v6"}
"""A ``detect_feed`` name -> the format's name in a capture's manifest (``feed_format``) and
in the nightly tables."""


def feed_format(data: bytes | bytearray | memoryview) -> str:
    """The manifest name of the format ``data`` (a capture's first packet) is in: "obi-v6"
    for an OBI block, else "opra-fast-v2" (whose decoder counts a packet of neither bad)."""
    return FEED_FORMATS[detect_feed(data) or "fast"]


def checksum(data: bytes | bytearray | memoryview) -> int:
    """The spec's block checksum (section 4.2) of ``data``."""
    return int(lib.omdp_obi_checksum(bytes(data), len(data)))


def new_header(block_seq: int = 0, ts_sec: int = 0, ts_nsec: int = 0, session: int = 0, retrans: bytes = b" ",
               feed: bytes = b"O") -> np.ndarray:
    """A block header row (``OBI_BLOCK_DTYPE``) for ``encode_block``."""
    h = np.zeros(1, dtype=OBI_BLOCK_DTYPE)[0]
    h["block_seq"], h["ts_sec"], h["ts_nsec"], h["session"] = block_seq, ts_sec, ts_nsec, session
    h["retrans"], h["feed"] = retrans[0], feed[0]
    return h


@dataclass
class Block:
    """One decoded block: its header row, its records, and the side buffer their text and
    extras point into."""

    header: np.ndarray
    records: np.ndarray
    side: bytes

    def __len__(self) -> int:
        return int(self.records.shape[0])

    @property
    def checksum_ok(self) -> bool:
        return not int(self.header["status"]) & BLK_CHECKSUM_BAD

    def text(self, i: int) -> bytes:
        """The text of a 'C' message."""
        r = self.records[i]
        return self.side[int(r["var_off"]) : int(r["var_off"]) + int(r["var_len"])]

    def extra(self, i: int) -> tuple[int, int, int]:
        """(txn_id, prn, trade_id) of message i: zeros unless the record carries extras."""
        return record_extra(self.records[i], self.side)


def record_extra(rec: np.void, side: bytes | np.ndarray) -> tuple[int, int, int]:
    """(txn_id, prn, trade_id) of a record whose extras sit in ``side`` (zeros without)."""
    if not int(rec["wire"]) & WIRE_EXTRA:
        return 0, 0, 0
    at = int(rec["var_off"]) + int(rec["var_len"])
    x = np.frombuffer(bytes(side[at : at + EXTRA_SIZE]), dtype=OBI_EXTRA_DTYPE)[0]
    return int(x["txn_id"]), int(x["prn"]), int(x["trade_id"])


def decode_block(data: bytes | bytearray | memoryview, packet_index: int = 0, keep_bad_checksum: bool = False) -> Block:
    """Decode one block (a UDP payload); raises ObiDecodeError naming where it is malformed.
    A checksum mismatch is an error unless ``keep_bad_checksum`` (the block then comes back
    with ``checksum_ok`` False)."""
    raw = bytes(data)
    out = np.zeros(max(raw[10] if len(raw) > 10 else 0, 1), dtype=OPRA_MSG_DTYPE)
    side = np.zeros(len(raw) + 64 + out.shape[0] * EXTRA_SIZE, dtype=np.uint8)
    info = np.zeros(1, dtype=OBI_BLOCK_DTYPE)
    err = ffi.new("omdp_obi_error_t*")
    used = ffi.new("uint32_t*")
    rc = lib.omdp_obi_decode_block(
        raw, len(raw), packet_index, KEEP_BAD_CHECKSUM if keep_bad_checksum else 0,
        ffi.from_buffer("omdp_opra_msg_t[]", out), out.shape[0], ffi.from_buffer("uint8_t[]", side), side.shape[0],
        used, ffi.cast("omdp_obi_block_t*", ffi.from_buffer(info)), err, ffi.NULL,
    )
    if rc < 0:
        raise ObiDecodeError.from_c(err)
    return Block(header=info[0], records=out[:rc], side=side[: used[0]].tobytes())


def encode_records(header: np.void | np.ndarray, records: np.ndarray, side: bytes | np.ndarray = b"") -> bytes:
    """Encode 0..255 records as one block with ``header``'s block_seq, time, feed,
    retransmission and session (an ``OBI_BLOCK_DTYPE`` row, see ``new_header``)."""
    if records.dtype != OPRA_MSG_DTYPE:
        raise TypeError(f"records must have OPRA_MSG_DTYPE, not {records.dtype}")
    recs = np.ascontiguousarray(records)
    hdr = np.array([header], dtype=OBI_BLOCK_DTYPE)
    side_arr = np.frombuffer(bytes(side), dtype=np.uint8) if not isinstance(side, np.ndarray) else np.ascontiguousarray(side, np.uint8)
    side_ptr = ffi.from_buffer("uint8_t[]", side_arr if side_arr.size else np.zeros(1, np.uint8))
    out = bytearray(MAX_BLOCK_BYTES + 256)
    err = ffi.new("omdp_obi_error_t*")
    rc = lib.omdp_obi_encode_block(
        ffi.cast("omdp_obi_block_t*", ffi.from_buffer(hdr)), ffi.from_buffer("omdp_opra_msg_t[]", recs) if len(recs) else ffi.NULL,
        len(recs), side_ptr, side_arr.size, ffi.from_buffer(out), len(out), err,
    )
    if rc < 0:
        raise ObiEncodeError(int(err.code), int(err.message_index), int(err.category))
    return bytes(out[:rc])


def encode_block(block: Block) -> bytes:
    """A decoded block back to wire bytes: ``encode_block(decode_block(b)) == b`` for every
    well-formed block whose reserved bytes are zero."""
    return encode_records(block.header, block.records, block.side)


@dataclass
class DecodedBlocks:
    """What one batch decode produced. Block i's records are
    ``records[blocks[i]['first'] : blocks[i]['first'] + blocks[i]['count']]`` (count 0 for a
    bad block); ``errors`` the first errors; ``counter_values`` this call's counters."""

    records: np.ndarray
    side: np.ndarray
    blocks: np.ndarray
    errors: list[ObiDecodeError]
    counter_values: np.ndarray

    @property
    def counters(self) -> dict[str, int]:
        return counters_dict(self.counter_values)


class ObiBatchDecoder:
    """Decodes batches of blocks into buffers it owns and reuses (grown when a batch needs
    more). Arrays a ``decode`` returns are views valid until the next call; ``counters``
    accumulate over every call. ``keep_bad_checksum`` keeps (flagged) the records of blocks
    whose checksum does not match instead of dropping them: for viewers, not the live path."""

    def __init__(self, max_messages: int = 1 << 16, side_bytes: int = 1 << 20, max_errors: int = 1024,
                 keep_bad_checksum: bool = False) -> None:
        self._records = np.zeros(0, dtype=OPRA_MSG_DTYPE)
        self._side = np.zeros(0, dtype=np.uint8)
        self._errs = ffi.new("omdp_obi_error_t[]", max_errors)
        self._max_errors = max_errors
        self._options = KEEP_BAD_CHECKSUM if keep_bad_checksum else 0
        self._res = ffi.new("omdp_obi_batch_result_t*")
        self._c_counters = ffi.new("omdp_obi_counters_t*")
        self._totals = np.frombuffer(ffi.buffer(self._c_counters), dtype=np.uint64)
        self._reserve(max_messages, side_bytes)

    def _reserve(self, messages: int, side_bytes: int) -> None:
        if messages > self._records.shape[0]:
            self._records = np.zeros(messages, dtype=OPRA_MSG_DTYPE)
        if side_bytes > self._side.shape[0]:
            self._side = np.zeros(side_bytes, dtype=np.uint8)

    @property
    def counters(self) -> dict[str, int]:
        """Totals over every batch decoded so far."""
        return counters_dict(self._totals)

    def decode(self, buf: bytes | bytearray | memoryview | np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
               first_packet_index: int = 0) -> DecodedBlocks:
        """Decode blocks ``buf[offsets[i] : offsets[i] + lengths[i]]``; malformed ones are
        skipped, reported in ``errors`` and counted."""
        data = np.ascontiguousarray(np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.reshape(-1), dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.uint64)
        lengths = np.ascontiguousarray(lengths, dtype=np.uint32)
        n = int(offsets.shape[0])
        if n and int((offsets + lengths).max()) > data.shape[0]:
            raise ValueError("a block lies outside the buffer")
        blocks = np.zeros(n, dtype=OBI_BLOCK_DTYPE)
        before = self._totals.copy()
        p_data = ffi.from_buffer("uint8_t[]", data if data.size else np.zeros(1, np.uint8))
        while True:
            status = lib.omdp_obi_decode_batch(
                p_data, ffi.from_buffer("uint64_t[]", offsets), ffi.from_buffer("uint32_t[]", lengths), n,
                first_packet_index, self._options, ffi.from_buffer("omdp_opra_msg_t[]", self._records), self._records.shape[0],
                ffi.from_buffer("uint8_t[]", self._side), self._side.shape[0],
                ffi.cast("omdp_obi_block_t*", ffi.from_buffer(blocks)) if n else ffi.NULL,
                self._errs, self._max_errors, self._c_counters, self._res,
            )
            if status != CAPACITY:
                break
            # The buffers could not take a block: grow them and decode the batch again.
            self._totals[:] = before
            self._reserve(max(255 * n, 2 * self._records.shape[0]), max(2 * self._side.shape[0], int(lengths.sum()) * 2))
        res = self._res
        n_err = min(int(res.errors), self._max_errors)
        errors = [ObiDecodeError.from_c(self._errs[i]) for i in range(n_err)]
        return DecodedBlocks(
            records=self._records[: res.messages], side=self._side[: res.side_used], blocks=blocks,
            errors=errors, counter_values=self._totals - before,
        )


def decode_blocks(buf: bytes | bytearray | memoryview | np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
                  first_packet_index: int = 0, keep_bad_checksum: bool = False) -> DecodedBlocks:
    """Decode many blocks in one C call, into arrays sized for them that the caller keeps."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum()) if lengths.size else 0
    # a message is at least 12 bytes, so a block of L bytes holds at most (L - 21) / 12 + 1
    dec = ObiBatchDecoder(max_messages=max(total // 12 + len(lengths), 1), side_bytes=total * 2 + 4096,
                          keep_bad_checksum=keep_bad_checksum)
    return dec.decode(buf, offsets, lengths, first_packet_index)
