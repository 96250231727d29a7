"""Batch decoding of OPRA FAST V2 packets: many packets, one C call.

This is the path feed handlers, benchmarks and Spark jobs use. ``BatchDecoder`` keeps its
output buffers between calls (no allocation per batch); ``decode_batch`` is the one-shot
form that sizes buffers for its input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from feedhandlers.opra_errors import CAPACITY, CODES, OPRA_ERROR_DTYPE, OpraDecodeError
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib


@dataclass
class DecodedBatch:
    """What one batch decode produced. Packet i's records are
    ``records[pkt_first[i] : pkt_first[i] + pkt_count[i]]`` (count 0 for a malformed packet);
    ``errors`` holds the first errors (at most the decoder's ``max_errors``); ``counters``
    this call's packet and message counts and errors per code name."""

    records: np.ndarray
    side: np.ndarray
    pkt_first: np.ndarray
    pkt_count: np.ndarray
    errors: list[OpraDecodeError]
    counter_values: np.ndarray
    """This call's ``omdp_opra_counters_t`` as an array (packets, ok, bad, messages, errors[])."""

    @property
    def counters(self) -> dict[str, int]:
        return counters_dict(self.counter_values)


def header_counts(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The message count each packet's header claims (0 where it is not three digits)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    ok = lengths >= 15
    pos = np.where(ok, offsets, 0)
    if buf.shape[0] < 15:
        return np.zeros(offsets.shape[0], dtype=np.int64)
    pos = np.minimum(pos, buf.shape[0] - 15)
    d = np.stack([buf[pos + 12 + j].astype(np.int64) - 48 for j in range(3)])
    ok &= ((d >= 0) & (d <= 9)).all(axis=0)
    return np.where(ok, d[0] * 100 + d[1] * 10 + d[2], 0)


def _as_u8(buf: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        return np.ascontiguousarray(buf.reshape(-1), dtype=np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


class BatchDecoder:
    """Decodes batches of packets into buffers it owns and reuses (grown when a batch needs
    more), so a steady stream of batches allocates nothing.

    The arrays a ``decode`` returns are views into those buffers, valid until the next call.
    ``counters`` accumulate over every call (packets, good, bad, messages, errors per code).
    """

    def __init__(self, max_messages: int = 1 << 16, side_bytes: int = 1 << 20, max_packets: int = 1 << 14, max_errors: int = 1024) -> None:
        self._records = np.zeros(0, dtype=OPRA_MSG_DTYPE)
        self._side = np.zeros(0, dtype=np.uint8)
        self._first = np.zeros(0, dtype=np.uint32)
        self._count = np.zeros(0, dtype=np.uint32)
        self._errs = ffi.new("omdp_opra_error_t[]", max_errors)
        self._max_errors = max_errors
        self._res = ffi.new("omdp_opra_batch_result_t*")
        self._c_counters = ffi.new("omdp_opra_counters_t*")
        self._totals = np.frombuffer(ffi.buffer(self._c_counters), dtype=np.uint64)
        self._reserve(max_messages, side_bytes, max_packets)

    def _reserve(self, messages: int, side_bytes: int, packets: int) -> None:
        if messages > self._records.shape[0]:
            self._records = np.zeros(messages, dtype=OPRA_MSG_DTYPE)
            self._p_records = ffi.from_buffer("omdp_opra_msg_t[]", self._records)
        if side_bytes > self._side.shape[0]:
            self._side = np.zeros(side_bytes, dtype=np.uint8)
            self._p_side = ffi.from_buffer("uint8_t[]", self._side)
        if packets > self._first.shape[0]:
            self._first = np.zeros(packets, dtype=np.uint32)
            self._count = np.zeros(packets, dtype=np.uint32)
            self._p_first = ffi.from_buffer("uint32_t[]", self._first)
            self._p_count = ffi.from_buffer("uint32_t[]", self._count)

    @property
    def counters(self) -> dict[str, int]:
        """Totals over every batch decoded so far."""
        return counters_dict(self._totals)

    def decode(
        self,
        buf: bytes | bytearray | memoryview | np.ndarray,
        offsets: np.ndarray,
        lengths: np.ndarray,
        first_packet_index: int = 0,
    ) -> DecodedBatch:
        """Decode packets ``buf[offsets[i] : offsets[i] + lengths[i]]``; malformed ones are
        skipped, reported in ``errors`` and counted."""
        data = _as_u8(buf)
        offsets = np.ascontiguousarray(offsets, dtype=np.uint64)
        lengths = np.ascontiguousarray(lengths, dtype=np.uint32)
        n = int(offsets.shape[0])
        if n and int((offsets + lengths).max()) > data.shape[0]:
            raise ValueError("a packet lies outside the buffer")
        self._reserve(0, 0, n)
        before = self._totals.copy()
        p_data = ffi.from_buffer("uint8_t[]", data if data.size else np.zeros(1, np.uint8))
        p_off = ffi.from_buffer("uint64_t[]", offsets)
        p_len = ffi.from_buffer("uint32_t[]", lengths)
        while True:
            status = lib.omdp_opra_decode_batch(
                p_data, p_off, p_len, n, first_packet_index,
                self._p_records, self._records.shape[0], self._p_side, self._side.shape[0],
                self._p_first, self._p_count, self._errs, self._max_errors, self._c_counters, self._res,
            )
            if status != CAPACITY:
                break
            # The buffers could not take a packet: grow them and decode the batch again.
            self._totals[:] = before
            need = int(header_counts(data, offsets, lengths).sum())
            self._reserve(max(need, 2 * self._records.shape[0]), 2 * self._side.shape[0], n)
        res = self._res
        n_err = min(int(res.errors), self._max_errors)
        errors = []
        if n_err:
            arr = np.frombuffer(ffi.buffer(self._errs, n_err * OPRA_ERROR_DTYPE.itemsize), dtype=OPRA_ERROR_DTYPE)
            errors = [OpraDecodeError(int(e["code"]), int(e["packet_index"]), int(e["offset"]), int(e["message_index"]), int(e["slot"])) for e in arr]
        return DecodedBatch(
            records=self._records[: res.messages],
            side=self._side[: res.side_used],
            pkt_first=self._first[:n],
            pkt_count=self._count[:n],
            errors=errors,
            counter_values=self._totals - before,
        )


def counters_dict(values: np.ndarray) -> dict[str, int]:
    """An ``omdp_opra_counters_t`` (as an array) by name: packets, packets_ok, packets_bad,
    messages, and the error codes that occurred."""
    out = {name: int(values[i]) for i, name in enumerate(("packets", "packets_ok", "packets_bad", "messages"))}
    for code, name in CODES.items():
        v = int(values[4 - code])
        if v:
            out[name] = v
    return out


def decode_batch(
    buf: bytes | bytearray | memoryview | np.ndarray,
    offsets: np.ndarray,
    lengths: np.ndarray,
    first_packet_index: int = 0,
    max_errors: int = 1024,
) -> DecodedBatch:
    """Decode many packets in one C call, into arrays sized for them that the caller keeps."""
    n = int(np.asarray(offsets).shape[0])
    data = _as_u8(buf)
    need = int(header_counts(data, np.asarray(offsets), np.asarray(lengths)).sum()) if n else 0
    side = int(np.asarray(lengths, dtype=np.int64).sum()) + 4096 if n else 4096
    dec = BatchDecoder(max_messages=max(need, 1), side_bytes=side, max_packets=max(n, 1), max_errors=max_errors)
    return dec.decode(buf, offsets, lengths, first_packet_index)
