"""Runs of records as OBI blocks, as OPRA packs a line: the stream encoder (one C call per
chunk of records), and the choice OPRA makes between the long and the short quote form.

Synthetic captures and benchmarks build records once and write them in either of OPRA's
formats; ``as_obi`` makes FAST V2-style records ready for the OBI encoder.
"""
from __future__ import annotations

import numpy as np

from feedhandlers.opra_obi import MAX_BLOCK_BYTES, WIRE_OBI, WIRE_SHORT
from feedhandlers.opra_obi_errors import ObiEncodeError
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib

_CHUNK = 1 << 20


def short_eligible(records: np.ndarray) -> np.ndarray:
    """Which 'k' records OPRA would send as a short quote 'q' (spec 7.5): a symbol of at most
    4 characters, strike in tenths up to 6,553.5, prices in cents up to 655.35, sizes up to
    65,535."""
    r = records
    root = np.frombuffer(np.ascontiguousarray(r["root"]).tobytes(), np.uint8).reshape(-1, 6) if len(r) else np.zeros((0, 6), np.uint8)
    short_root = (r["root_len"] <= 4) | ((r["root_len"] == 5) & (root[:, 4] == ord(" ")))
    small = (r["strike"] <= 0xFFFF) & (r["bid"] <= 0xFFFF) & (r["offer"] <= 0xFFFF) & (r["bid_size"] <= 0xFFFF) & \
        (r["offer_size"] <= 0xFFFF)
    return (r["category"] == ord("k")) & short_root & (r["strike_den"] == ord("A")) & (r["premium_den"] == ord("B")) & small


def as_obi(records: np.ndarray, short: bool = True) -> np.ndarray:
    """A copy of FAST V2-style records for the OBI encoder: flagged OBI, the regular session
    (FAST's ' ' is OBI's 0x00), and short quotes where OPRA would send them (``short``)."""
    out = records.copy()
    out["wire"] = WIRE_OBI
    out["session"] = np.where(out["session"] == ord(" "), 0, out["session"])
    if short:
        out["wire"] = np.where(short_eligible(out), WIRE_OBI | WIRE_SHORT, WIRE_OBI)
    return out


def encode_stream(records: np.ndarray, side: bytes | np.ndarray, wanted_counts: np.ndarray | list[int],
                  ts_ns: np.ndarray | None = None, max_block_bytes: int = MAX_BLOCK_BYTES,
                  ) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """Cut a run of records into OBI blocks (``omdp_obi_encode_stream``): block k takes up to
    ``wanted_counts[k % len]`` records; its time is ``ts_ns`` of its last record (UTC ns).
    Returns ``(buf, offsets, lengths, first_msg)``: block k is ``buf[offsets[k]:offsets[k] +
    lengths[k]]`` and begins with record ``first_msg[k]``."""
    if records.dtype != OPRA_MSG_DTYPE:
        raise TypeError(f"records must have OPRA_MSG_DTYPE, not {records.dtype}")
    records = np.ascontiguousarray(records)
    n = int(records.shape[0])
    wanted = np.ascontiguousarray(np.asarray(wanted_counts, dtype=np.uint32))
    if wanted.size == 0:
        raise ValueError("wanted_counts is empty")
    ts = None if ts_ns is None else np.ascontiguousarray(ts_ns, dtype=np.int64)
    if ts is not None and ts.shape[0] != n:
        raise ValueError(f"ts_ns has {ts.shape[0]} entries for {n} records")
    side_arr = np.frombuffer(bytes(side), np.uint8) if not isinstance(side, np.ndarray) else np.ascontiguousarray(side, np.uint8)
    side_ptr = ffi.from_buffer("uint8_t[]", side_arr if side_arr.size else np.zeros(1, np.uint8))
    err = ffi.new("omdp_obi_error_t*")
    res = ffi.new("omdp_obi_stream_result_t*")
    parts, offs, lens, firsts = [], [], [], []
    done = blocks = base = 0
    while done < n:
        m = min(_CHUNK, n - done)
        chunk = records[done : done + m]
        cap = m * 260 + 2 * MAX_BLOCK_BYTES
        out = np.empty(cap, dtype=np.uint8)
        blk_off = np.empty(m, dtype=np.uint64)
        blk_len = np.empty(m, dtype=np.uint32)
        blk_first = np.empty(m, dtype=np.uint64)
        rot = np.roll(wanted, -(blocks % wanted.size))
        k = lib.omdp_obi_encode_stream(
            ffi.from_buffer("omdp_opra_msg_t[]", chunk), m,
            ffi.from_buffer("int64_t[]", ts[done : done + m]) if ts is not None else ffi.NULL,
            side_ptr, side_arr.size, ffi.from_buffer("uint32_t[]", rot), rot.size, max_block_bytes,
            ffi.from_buffer("uint8_t[]", out), cap, ffi.from_buffer("uint64_t[]", blk_off),
            ffi.from_buffer("uint32_t[]", blk_len), ffi.from_buffer("uint64_t[]", blk_first), m, res, err,
        )
        if k < 0:
            raise ObiEncodeError(int(err.code), done + int(err.message_index), int(err.category))
        parts.append(out[: res.bytes_used].tobytes())
        offs.append(blk_off[:k].astype(np.int64) + base)
        lens.append(blk_len[:k].copy())
        firsts.append(blk_first[:k].astype(np.int64) + done)
        base += int(res.bytes_used)
        done += int(res.messages_done)
        blocks += int(k)
    if not parts:
        return b"", np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int64)
    return b"".join(parts), np.concatenate(offs), np.concatenate(lens), np.concatenate(firsts)
