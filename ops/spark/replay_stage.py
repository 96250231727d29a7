"""The staged records between the replay's two stages (docs/analytics.md "Replay").

The day x line decode stage (``replay_feed.decode_line``) writes, per underlying bucket,
the accepted records of its line in arrival order to
``replay/date=D/_stage/b<bucket>/line<NN>.npy``; the day x bucket engine stage
(``merge_bucket``) reads its bucket's file of every line and merges them in time order -
capture time, then line, then the line's own order: the order the live engines see.

A record is staged in ``STAGE_DTYPE``: the fields of the 256-byte OPRA record that the
engine, the replay's tables and the reconciliation read (127 bytes, packed), so a day
stages half the bytes of its records. ``unpack`` rebuilds full records (header type and
length, ``fh_in`` = ``intended`` = the capture time, every field not staged zero, as the
offline feed handler writes the variable-part fields).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.record import RT_OPRA_MSG

STAGE_DIR = "_stage"

_PLAIN: tuple[str, ...] = (
    "block_seq", "msg_seq", "strike_px", "bid_px", "offer_px", "premium_px", "best_bid_px", "best_offer_px",
    "time", "expiry", "underlying_id", "volume", "bid_size", "offer_size", "best_bid_size", "best_offer_size",
    "line", "index", "category", "msg_type", "participant", "put_call", "bbo_ind", "best_bid_part",
    "best_offer_part", "session", "root_len", "root",
)
"""Record fields staged as they are (with ``flags`` and the capture time from the header)."""

STAGE_DTYPE = np.dtype([("ts_ns", "<i8"), ("flags", "<u4")] + [(f, OPRA_MSG_DTYPE[f]) for f in _PLAIN])
"""A staged record (packed)."""


def pack(records: np.ndarray) -> np.ndarray:
    """OPRA records -> STAGE_DTYPE (field by field, a pass each)."""
    out = np.empty(len(records), STAGE_DTYPE)
    out["ts_ns"] = records["hdr"]["stamps"]["fh_in"]
    out["flags"] = records["hdr"]["flags"]
    for f in _PLAIN:
        out[f] = records[f]
    return out


def unpack(staged: np.ndarray) -> np.ndarray:
    """STAGE_DTYPE -> OPRA records, as the offline feed handler wrote them."""
    out = np.zeros(len(staged), OPRA_MSG_DTYPE)
    hdr = out["hdr"]
    hdr["type"] = RT_OPRA_MSG
    hdr["length"] = OPRA_MSG_DTYPE.itemsize
    hdr["flags"] = staged["flags"]
    hdr["stamps"]["fh_in"] = staged["ts_ns"]
    hdr["stamps"]["intended"] = staged["ts_ns"]
    for f in _PLAIN:
        out[f] = staged[f]
    return out


def bucket_dir(day_dir: str | Path, bucket: int) -> Path:
    """Where a bucket's staged files go."""
    return Path(day_dir) / STAGE_DIR / f"b{bucket:03d}"


def write_buckets(day_dir: str | Path, line: int, records: np.ndarray, engines: np.ndarray, buckets: int) -> None:
    """Split one line's records (arrival order) by engine and stage each bucket's part
    (every bucket gets a file, empty or not, so a missing file is a lost task)."""
    staged = pack(records)
    order = np.argsort(engines, kind="stable")
    counts = np.bincount(engines, minlength=buckets)
    if len(counts) > buckets:
        raise ValueError(f"line {line}: a record routed to engine {len(counts) - 1} of {buckets}")
    staged = staged[order]
    start = 0
    for b in range(buckets):
        n = int(counts[b])
        folder = bucket_dir(day_dir, b)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".line{line:02d}.npy.{os.getpid()}"
        with open(tmp, "wb") as fh:
            np.save(fh, staged[start:start + n])
        tmp.replace(folder / f"line{line:02d}.npy")
        start += n


def merge_bucket(day_dir: str | Path, bucket: int, lines: list[int]) -> np.ndarray:
    """The bucket's staged records of every line, merged in time order (capture time, then
    line, then the line's order), as STAGE_DTYPE. Raises FileNotFoundError naming a missing
    part."""
    folder = bucket_dir(day_dir, bucket)
    parts = [np.load(folder / f"line{ln:02d}.npy", mmap_mode="r") for ln in sorted(lines)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(0, STAGE_DTYPE)
    joined = np.concatenate(parts) if len(parts) > 1 else np.array(parts[0])
    # Each part is already in time order: a stable sort of the line-ordered concatenation
    # by capture time merges the runs (timsort finds them) and keeps line, then line order.
    return joined[np.argsort(joined["ts_ns"], kind="stable")]
