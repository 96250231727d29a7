"""What every row of ``omdp bench transport`` shares, in-process and in the MPI job
(ops.bench.transport, ops.bench.transport_mpi): the CPUs and base settings, the percentile
summary, the clock offset of a ping-pong, the payload check."""
from __future__ import annotations

from typing import Any

import numpy as np

SENDER_CPU, RECEIVER_CPU = 0, 1
BASE = {"queue_size": 128, "max_message": 256, "mutex": False, "wait": "spin", "on_full": "block"}
"""Settings of every run unless a row says otherwise (issue 3: mutex off, 128 x 256 B)."""
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999))


class BenchError(RuntimeError):
    """A benchmark run failed: a process died, timed out, or checksums disagreed."""


def clock_offset(initiator: dict[str, Any], responder: dict[str, Any]) -> float:
    """Responder CPU clock minus initiator CPU clock from one ping-pong: the responder's
    stamp minus the midpoint of the initiator's send and answer, median over the fastest
    tenth of the round trips (where the two directions are most nearly equal)."""
    k = min(initiator["done"], responder["done"])
    sent, answered, seen = initiator["t_a"][:k], initiator["t_b"][:k], responder["t_a"][:k]
    rtt = answered - sent
    fastest = rtt <= np.percentile(rtt, 10)
    return float(np.median((seen - (sent + answered) / 2)[fastest]))


def percentiles(samples: np.ndarray) -> dict[str, Any]:
    """p50/p99/p99.9/max in ns, after dropping the warm-up tenth; a tail percentile with
    fewer than 10/(1-p) samples is None (printed n/a)."""
    kept = samples[len(samples) // 10:]
    out: dict[str, Any] = {"n": int(len(kept))}
    for name, p in PERCENTILES:
        out[f"{name}_ns"] = float(np.percentile(kept, p * 100)) if len(kept) >= 10 / (1 - p) else None
    out["max_ns"] = float(kept.max()) if len(kept) else None
    return out


def settings_text(knobs: dict[str, Any]) -> str:
    return (f"queue {knobs['queue_size']} x {knobs['max_message']} B, mutex {'on' if knobs['mutex'] else 'off'}, "
            f"wait {knobs['wait']}")


def check_payloads(what: str, got: dict[str, Any], sent: dict[str, Any], n: int) -> None:
    if got.get("got", n) != n or sent.get("sent", n) != n:
        raise BenchError(f"{what}: sent {sent.get('sent')} received {got.get('got')} of {n}")
    if got["checksum"] != sent["checksum"]:
        raise BenchError(f"{what}: receiver checksum {got['checksum']:#x} != sender's {sent['checksum']:#x}")
