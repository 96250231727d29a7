"""Routing by underlying: which decision engine owns which underlying, and the table the
feed handler's C code looks roots up in.

An engine must see every quote of its underlyings from every exchange (it builds the NBBO
of each series), so routing is by underlying across all lines. The table balances the
engines' load by the capture's own symbol distribution: messages are counted per
underlying over a prefix of every line's capture (one C batch decode per file) and the
underlyings are packed greedily, heaviest first, onto the least loaded engine (the LPT
rule: within 4/3 of the best possible maximum load).

Nothing here reads a manifest: the caller (the pipeline assembly in ``ops``) passes the
root -> underlying map and the capture files.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from feedhandlers.captures import Capture, read_capture
from feedhandlers.packet_batch import PacketBatchDecoder

MAX_ENGINES = 64
"""Output ports of the feed handler (OMDP_FH_MAX_ENGINES)."""
DEFAULT_SAMPLE_MESSAGES = 200_000
"""Messages counted per line to estimate the symbol distribution."""
_PACKETS_PER_CALL = 8192


class RoutingTable(BaseModel):
    """Root -> (underlying id, engine), as parallel lists (compact in plan.json), with the
    load estimate the balance came from. ``engines`` is how many engines share the load."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engines: int = Field(1, ge=1, le=MAX_ENGINES, description="decision engines the feed handlers route to")
    roots: list[str] = Field(default_factory=list, description="option roots")
    underlying_ids: list[int] = Field(default_factory=list, description="underlying id of each root")
    root_engines: list[int] = Field(default_factory=list, description="engine of each root")
    engine_messages: list[int] = Field(default_factory=list, description="messages per engine in the sample")
    sampled_messages: int = Field(0, ge=0, description="messages the balance was computed from")

    @model_validator(mode="after")
    def _consistent(self) -> RoutingTable:
        n = len(self.roots)
        if len(self.underlying_ids) != n or len(self.root_engines) != n:
            raise ValueError(f"roots, underlying_ids and root_engines must have one entry per root "
                             f"({n}, {len(self.underlying_ids)}, {len(self.root_engines)})")
        bad = [e for e in self.root_engines if not 0 <= e < self.engines]
        if bad:
            raise ValueError(f"engine {bad[0]} outside 0..{self.engines - 1}")
        long = [r for r in self.roots if not 1 <= len(r.encode()) <= 6]
        if long:
            raise ValueError(f"root {long[0]!r}: 1 to 6 bytes")
        if len(set(self.roots)) != n:
            raise ValueError("a root appears twice")
        return self

    def engine_of_underlying(self) -> dict[int, int]:
        """Underlying id -> engine."""
        return dict(zip(self.underlying_ids, self.root_engines))

    def imbalance(self) -> float | None:
        """Most loaded engine over the mean (1.0 = perfect); None without a sample."""
        total = sum(self.engine_messages)
        if not total or not self.engine_messages:
            return None
        return max(self.engine_messages) / (total / len(self.engine_messages))


@dataclass(frozen=True)
class RootCounts:
    """Messages per root in a sample of the capture."""

    counts: dict[str, int]
    messages: int


def count_roots(files: Iterable[str | Path | Capture], max_messages: int = DEFAULT_SAMPLE_MESSAGES) -> RootCounts:
    """Messages per root over the first ``max_messages`` of each file's packets (files by path
    or already read), decoded in C a batch of packets per call straight from the mapped file
    and counted with numpy on the roots as 8-byte integers (sorting them as strings, and
    packing the packets first, had been most of the count). Each file's format (FAST V2 or
    OBI v6) is told from its first packet."""
    keys: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    seen = 0
    decoders: dict[str, PacketBatchDecoder] = {}
    for path in files:
        cap = path if isinstance(path, Capture) else read_capture(path)
        if not len(cap.offsets):
            continue
        first = PacketBatchDecoder.for_packet(cap.payload(0))
        dec = decoders.setdefault(first.feed, first)
        taken = 0
        for start in range(0, len(cap.offsets), _PACKETS_PER_CALL):
            if taken >= max_messages:
                break
            end = min(start + _PACKETS_PER_CALL, len(cap.offsets))
            recs = dec.decode(cap.buf, cap.offsets[start:end], cap.lengths[start:end]).records
            k, n = np.unique(root_keys(recs["root"][recs["root_len"] > 0]), return_counts=True)
            keys.append(k)
            counts.append(n)
            taken += len(recs)
        seen += taken
    out: dict[str, int] = {}
    if keys:
        distinct, which = np.unique(np.concatenate(keys), return_inverse=True)
        totals = np.bincount(which, weights=np.concatenate(counts), minlength=len(distinct)).astype(np.int64)
        for name, v in zip(distinct.view("S8").tolist(), totals.tolist()):  # the key's bytes, trailing NULs dropped
            root = name.decode("ascii", "replace").rstrip(" ")  # sent padded with spaces to a fixed width
            out[root] = out.get(root, 0) + v
    return RootCounts(dict(sorted(out.items())), seen)


def root_keys(roots: np.ndarray) -> np.ndarray:
    """Roots (a bytes array of at most 8 bytes each) as little-endian uint64 keys of their
    bytes NUL-padded to 8: equal roots give equal keys, as numpy compares them (trailing NULs
    do not count)."""
    width = roots.dtype.itemsize
    if width > 8:
        raise ValueError(f"roots of {width} bytes do not fit a key")
    padded = np.zeros((len(roots), 8), np.uint8)
    padded[:, :width] = np.frombuffer(np.ascontiguousarray(roots).tobytes(), np.uint8).reshape(len(roots), width)
    return padded.view("<u8").reshape(-1)


def balance(loads: Mapping[int, int], engines: int) -> dict[int, int]:
    """Greedy bin packing (LPT): key -> engine, heaviest first onto the least loaded engine;
    ties go to the lower key and the lower engine, so the result is deterministic."""
    if not 1 <= engines <= MAX_ENGINES:
        raise ValueError(f"engines must be 1..{MAX_ENGINES}, got {engines}")
    load = [0] * engines
    out: dict[int, int] = {}
    for key, n in sorted(loads.items(), key=lambda kv: (-kv[1], kv[0])):
        e = min(range(engines), key=lambda i: (load[i], i))
        out[key] = e
        load[e] += n
    return out


def build_routing(root_underlying: Mapping[str, int], counts: RootCounts, engines: int,
                  buckets: int = 0) -> RoutingTable:
    """The routing table: every root of ``root_underlying`` (root -> underlying id) placed on
    the engine its underlying got from balancing the counted messages. Underlyings without
    messages in the sample are spread round-robin over the engines after the counted ones
    (by id, so the table is deterministic). With ``buckets`` (re-sharding, a power of two)
    the unit balanced is the bucket, underlying_id % buckets, so that every underlying of a
    bucket is on one engine and a bucket can move as a whole."""
    per_underlying: dict[int, int] = {}
    for root, n in counts.counts.items():
        uid = root_underlying.get(root)
        if uid is not None:
            per_underlying[uid] = per_underlying.get(uid, 0) + n
    if buckets:
        per_bucket: dict[int, int] = {}
        for uid, n in per_underlying.items():
            per_bucket[uid % buckets] = per_bucket.get(uid % buckets, 0) + n
        bucket_engine = balance(per_bucket, engines)
        for k, b in enumerate(sorted(set(range(buckets)) - set(bucket_engine))):
            bucket_engine[b] = k % engines
        engine_of = {uid: bucket_engine[uid % buckets] for uid in set(root_underlying.values())}
    else:
        engine_of = balance(per_underlying, engines)
    quiet = sorted(set(root_underlying.values()) - set(engine_of))
    for k, uid in enumerate(quiet):
        engine_of[uid] = k % engines
    engine_messages = [0] * engines
    for uid, n in per_underlying.items():
        engine_messages[engine_of[uid]] += n
    roots = sorted(root_underlying)
    return RoutingTable(
        engines=engines, roots=roots, underlying_ids=[root_underlying[r] for r in roots],
        root_engines=[engine_of[root_underlying[r]] for r in roots], engine_messages=engine_messages,
        sampled_messages=counts.messages,
    )
