"""A capture's messages as the decision engines see them: the A copy of every line decoded
(feedhandlers' batch decoder of the manifest's ``feed_format``: FAST V2 or OBI v6), each message routed to its underlying with the manifest's
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
from feedhandlers.opra_obi import decode_blocks
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


def _decode(feed_format: str, buf, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One file's packets decoded with its format's batch decoder: the records (copied out of
    the decoder's buffers) and each packet's message count."""
    if feed_format == "obi-v6":
        dec = decode_blocks(buf, offsets, lengths)
        return dec.records.copy(), dec.blocks["count"]
    dec = decode_batch(buf, offsets, lengths)
    return dec.records, dec.pkt_count


def read_capture_records(capture_dir: Path) -> CaptureRecords:
    """Decode, route and order one capture directory (manifest.json beside the pcaps)."""
    manifest = json.loads((capture_dir / "manifest.json").read_text())
    router = root_router(manifest)
    parts, stamps = [], []
    for line in manifest["lines"]:
        for name in line["files"]["a"]:
            cap = read_capture(capture_dir / name)
            buf, offsets, lengths = cap.contiguous()
            recs, per_packet = _decode(manifest.get("feed_format", "opra-fast-v2"), buf, offsets, lengths)
            recs["line"] = line["line"]
            route(recs, router)
            parts.append(recs)
            stamps.append(np.repeat(cap.ts_ns, per_packet))
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
