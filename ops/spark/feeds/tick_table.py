"""The tick table: one row per decoded OPRA message, Parquet files partitioned by ``date``
and ``line`` under ``ticks/`` (``ticks/date=<date>/line=<n>/<capture file>.parquet``), and the
vectorized conversion from decoded records (``feedhandlers.opra_record.OPRA_MSG_DTYPE``) to
its Arrow batches.

Times are int64 nanoseconds (``ts_ns``: the packet's capture time). Spark has no unsigned
types, so uint32 fields are longs. A field the message does not carry (its slot bit clear in
``fields``, or a price whose denominator code is undefined) is null, not 0. The files hold
the data columns (TICK_FILE_SCHEMA); ``date`` and ``line`` live in the directory names, as
Spark's partition discovery expects, and TICK_SCHEMA (what Spark reads) adds them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

UNDEF_PRICE = np.iinfo(np.int64).max
"""``OMDP_UNDEF_PRICE``: a normalized price whose denominator code is not 'A'..'I'."""

_S, _L, _I = T.StringType(), T.LongType(), T.IntegerType()

TICK_FIELDS: tuple[tuple[str, T.DataType, pa.DataType], ...] = (
    ("ts_ns", _L, pa.int64()),
    ("block_seq", _L, pa.int64()),
    ("msg_seq", _L, pa.int64()),
    ("msg_index", _I, pa.int32()),
    ("packet_messages", _I, pa.int32()),
    ("packet_bytes", _I, pa.int32()),
    ("category", _S, pa.string()),
    ("msg_type", _S, pa.string()),
    ("participant", _S, pa.string()),
    ("root", _S, pa.string()),
    ("underlying", _S, pa.string()),
    ("expiry", _I, pa.int32()),
    ("put_call", _S, pa.string()),
    ("strike_px", _L, pa.int64()),
    ("bid_px", _L, pa.int64()),
    ("bid_size", _L, pa.int64()),
    ("offer_px", _L, pa.int64()),
    ("offer_size", _L, pa.int64()),
    ("premium_px", _L, pa.int64()),
    ("volume", _L, pa.int64()),
    ("open_interest", _L, pa.int64()),
    ("time", _I, pa.int32()),
)

PARTITION_FIELDS: tuple[tuple[str, T.DataType], ...] = (("date", _S), ("line", _I))

TICK_FILE_SCHEMA = pa.schema([(n, a) for n, _, a in TICK_FIELDS])
"""The Arrow schema of a tick file (no partition columns)."""

TICK_SCHEMA = T.StructType(
    [T.StructField(n, s, True) for n, s, _ in TICK_FIELDS] + [T.StructField(n, s, True) for n, s in PARTITION_FIELDS]
)
"""The Spark schema of a tick row, partition columns (``date``, ``line``) last."""


def tick_file_dir(ticks_root: Path, date: str, line: int) -> Path:
    """``ticks/date=<date>/line=<line>/``."""
    return ticks_root / f"date={date}" / f"line={line}"


# Slots of the OPRA FAST V2 message (spec section 4) that say a value is present.
_SLOT = {
    "time": 5,
    "month_code": 7,
    "strike": 11,
    "volume": 13,
    "open_interest": 14,
    "premium": 16,
    "bid": 25,
    "bid_size": 26,
    "offer": 27,
    "offer_size": 28,
}

_ONE_CHAR = pa.array([chr(i) for i in range(256)], pa.string())


def _has(fields: np.ndarray, slot: str) -> np.ndarray:
    return (fields >> np.uint64(_SLOT[slot])) & np.uint64(1) == np.uint64(1)


def _char_column(codes: np.ndarray) -> pa.Array:
    """uint8 character codes -> one-character strings; code 0 -> null."""
    idx = pa.array(codes.astype(np.int16), mask=codes == 0)
    return pa.DictionaryArray.from_arrays(idx, _ONE_CHAR).dictionary_decode()


def _masked(values: np.ndarray, present: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, type=type_, mask=~present)


def root_columns(roots: np.ndarray, root_map: dict[str, str]) -> tuple[pa.Array, pa.Array]:
    """(root, underlying) string columns from the records' ``root`` bytes. Work per distinct
    root, not per message; a root the map lacks has a null underlying."""
    uniq, inverse = np.unique(roots, return_inverse=True)
    # Slot 6 is space padded on the wire (and NUL padded in the record): names have neither.
    names = [u.rstrip(b"\0 ").decode("ascii", "replace") for u in uniq]
    idx = pa.array(inverse.astype(np.int32))
    root = pa.DictionaryArray.from_arrays(idx, pa.array(names, pa.string())).dictionary_decode()
    under = pa.array([root_map.get(n) for n in names], pa.string())
    return root, pa.DictionaryArray.from_arrays(idx, under).dictionary_decode()


def ticks_batch(
    records: np.ndarray,
    *,
    ts_ns: np.ndarray,
    packet_messages: np.ndarray,
    packet_bytes: np.ndarray,
    root_map: dict[str, str],
) -> pa.RecordBatch:
    """The tick rows of decoded ``records`` (OPRA_MSG_DTYPE), given per record its packet's
    capture time, message count and byte length."""
    f = records["fields"]
    root, underlying = root_columns(records["root"], root_map)

    def price(name: str, slot: str) -> pa.Array:
        v = records[name]
        return _masked(v, _has(f, slot) & (v != UNDEF_PRICE), pa.int64())

    def u32(name: str, slot: str) -> pa.Array:
        return _masked(records[name].astype(np.int64), _has(f, slot), pa.int64())

    expiry = records["expiry"]
    cols = [
        pa.array(np.asarray(ts_ns, np.int64)),
        pa.array(records["block_seq"].astype(np.int64)),
        pa.array(records["msg_seq"].astype(np.int64)),
        pa.array(records["index"].astype(np.int32)),
        pa.array(np.asarray(packet_messages, np.int32)),
        pa.array(np.asarray(packet_bytes, np.int32)),
        _char_column(records["category"]),
        _char_column(records["msg_type"]),
        _char_column(records["participant"]),
        root,
        underlying,
        _masked(expiry.astype(np.int32), expiry != 0, pa.int32()),
        _char_column(records["put_call"]),
        price("strike_px", "strike"),
        price("bid_px", "bid"),
        u32("bid_size", "bid_size"),
        price("offer_px", "offer"),
        u32("offer_size", "offer_size"),
        price("premium_px", "premium"),
        u32("volume", "volume"),
        u32("open_interest", "open_interest"),
        _masked(records["time"].astype(np.int32), _has(f, "time"), pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(cols, schema=TICK_FILE_SCHEMA)
