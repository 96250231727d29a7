"""A capture's messages as the decision engines see them: the A copy of every line decoded
(feedhandlers' batch decoder), each message routed to its underlying with the manifest's
root -> underlying map, in capture-time order across lines; and one engine's share of them,
placed as a run's routing places underlyings on engines.

``omdp bench engine --capture`` and the signal score's one-engine reference run
(tests/engine_capture_support.py) read captures so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from feedhandlers.captures import read_capture
from feedhandlers.opra_batch import decode_batch
from feedhandlers.opra_record import NO_UNDERLYING
from feedhandlers.routing import balance


@dataclass(frozen=True)
class CaptureRecords:
    """Every decoded message of a capture (OPRA_MSG_DTYPE) and its packet's capture time, in
    capture-time order; the manifest beside the pcaps."""

    records: np.ndarray
    ts_ns: np.ndarray
    manifest: dict


def root_router(manifest: dict) -> dict[bytes, int]:
    """Option root (stripped) -> underlying id, from the manifest."""
    ids = {u["symbol"]: int(u["id"]) for u in manifest["underlyings"]}
    return {root.encode(): ids[sym] for root, sym in manifest["roots"].items() if sym in ids}


def route(records: np.ndarray, router: dict[bytes, int]) -> None:
    """Set ``underlying_id`` of every record from its root (per distinct root, not per message)."""
    roots, inverse = np.unique(records["root"], return_inverse=True)
    ids = np.array([router.get(bytes(r).rstrip(b" \0"), NO_UNDERLYING) for r in roots], dtype=np.uint32)
    records["underlying_id"] = ids[inverse] if len(roots) else NO_UNDERLYING


def read_capture_records(capture_dir: Path) -> CaptureRecords:
    """Decode, route and order one capture directory (manifest.json beside the pcaps)."""
    manifest = json.loads((capture_dir / "manifest.json").read_text())
    router = root_router(manifest)
    parts, stamps = [], []
    for line in manifest["lines"]:
        for name in line["files"]["a"]:
            cap = read_capture(capture_dir / name)
            buf, offsets, lengths = cap.contiguous()
            dec = decode_batch(buf, offsets, lengths)
            recs = dec.records
            recs["line"] = line["line"]
            route(recs, router)
            parts.append(recs)
            stamps.append(np.repeat(cap.ts_ns, dec.pkt_count))
    records = np.concatenate(parts)
    ts = np.concatenate(stamps)
    order = np.argsort(ts, kind="stable")
    return CaptureRecords(records[order], ts[order], manifest)


def engine_share(records: np.ndarray, engines: int, engine: int = 0) -> np.ndarray:
    """The messages of the underlyings that ``engine`` of ``engines`` owns when underlyings
    are balanced on their message counts (``feedhandlers.routing.balance``, as a run's routing
    table does from its sample), in order; unrouted messages stay with engine 0."""
    uids, counts = np.unique(records["underlying_id"], return_counts=True)
    routed = uids != NO_UNDERLYING
    owner = balance(dict(zip(uids[routed].tolist(), counts[routed].tolist())), engines)
    mine = np.array([owner.get(u, 0) == engine for u in uids.tolist()], dtype=bool)
    return records[mine[np.searchsorted(uids, records["underlying_id"])]]
