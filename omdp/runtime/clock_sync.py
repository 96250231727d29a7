"""Clock offsets between the hosts of a run, estimated NTP style over the control connection.

Per hop latencies across hosts need one time base (the paper used IBM CCT, about 1 us).
Before the loops start, the supervisor plays ping-pong with one partition of every host:
it stamps t0 and sends a ping; the partition stamps t1 on receipt and t2 when it answers
with both; the supervisor stamps t3 on the answer. From the round trip with the smallest
delay (best of ``run.clock_pings``)::

    offset = ((t1 - t0) + (t2 - t3)) / 2        the host's clock minus the supervisor's
    error  = ((t3 - t0) - (t2 - t1)) / 2        half that round trip: a hard bound

(whatever the split of the delay between the two directions, the true offset lies within
``error`` of the estimate, as long as neither clock jumps during the exchange). A host's
offset from the reference host (the collector's) is the difference of the two estimates,
its error the sum of both errors. Every partition of a host then subtracts that offset
from its clock (``omdp_clock_set_correction``), so all stamps are in the reference host's
time and a cross-host hop carries at most the stated error.

Hosts marked ``ptp`` whose /dev/ptp* device exists are taken as they are when the
reference is too (no correction; error ``run.ptp_error_ns`` each). The result is written
to ``clocks.json`` in the run directory; ``clock_offset_error_ns`` is the largest error
of any host, the figure meta.parquet and every breakdown carry.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from omdp.atomic_files import write_text_atomic
from omdp.plan import Plan

CLOCKS_FILE = "clocks.json"


@dataclass(frozen=True)
class Exchange:
    """One ping-pong: t0 and t3 on the supervisor's clock, t1 and t2 on the host's."""

    t0: int
    t1: int
    t2: int
    t3: int

    @property
    def delay(self) -> int:
        """Round trip minus the time the host held the ping."""
        return (self.t3 - self.t0) - (self.t2 - self.t1)

    @property
    def offset(self) -> float:
        """The host's clock minus the supervisor's, as this exchange sees it."""
        return ((self.t1 - self.t0) + (self.t2 - self.t3)) / 2


@dataclass(frozen=True)
class ClockEstimate:
    """A host's clock against the supervisor's, from its best exchange."""

    offset_ns: int
    error_ns: int
    delay_ns: int
    samples: int


def best_estimate(exchanges: Sequence[Exchange]) -> ClockEstimate:
    """The estimate of the exchange with the smallest delay; raises ValueError when there
    is none or a round trip is impossible (negative delay: a clock jumped)."""
    if not exchanges:
        raise ValueError("no clock exchanges")
    best = min(exchanges, key=lambda e: e.delay)
    if best.delay < 0:
        raise ValueError(f"clock exchange with a negative round trip ({best.delay} ns): a clock stepped")
    return ClockEstimate(offset_ns=round(best.offset), error_ns=math.ceil(best.delay / 2), delay_ns=best.delay,
                         samples=len(exchanges))


@dataclass(frozen=True)
class HostClock:
    """What a host's partitions do with their clock in this run."""

    host: str
    method: str               # "reference", "ping-pong" or "ptp"
    offset_ns: int            # this host's clock minus the reference host's
    error_ns: int             # bound on |true offset - offset_ns|
    delay_ns: int | None      # best round trip (ping-pong), else None
    samples: int
    note: str = ""


def reference_host(plan: Plan, collector_kind: str = "latency_collector") -> str:
    """The host whose clock every stamp is corrected to: ``run.clock_reference``, else the
    host of the partition holding the latency collector, else of the last partition."""
    if plan.run.clock_reference:
        return plan.run.clock_reference
    for p in plan.partitions:
        if any(plan.operators[o].kind == collector_kind for o in p.operators):
            return p.host
    return plan.partitions[-1].host


def relative_clocks(estimates: dict[str, ClockEstimate], reference: str, ptp_hosts: set[str],
                    ptp_error_ns: int, notes: dict[str, str] | None = None) -> dict[str, HostClock]:
    """Each host's clock against ``reference`` from the estimates against the supervisor.
    Hosts in ``ptp_hosts`` (PTP flagged and a device found) are used as they are when the
    reference is one of them."""
    notes = notes or {}
    out: dict[str, HostClock] = {}
    ref = estimates.get(reference)
    for host, est in estimates.items():
        if host == reference:
            out[host] = HostClock(host, "reference", 0, 0, est.delay_ns, est.samples, notes.get(host, ""))
        elif host in ptp_hosts and reference in ptp_hosts:
            out[host] = HostClock(host, "ptp", 0, 2 * ptp_error_ns, None, 0, notes.get(host, ""))
        elif ref is None:
            raise ValueError(f"no clock estimate of the reference host {reference!r}")
        else:
            out[host] = HostClock(host, "ping-pong", est.offset_ns - ref.offset_ns, est.error_ns + ref.error_ns,
                                  est.delay_ns, est.samples, notes.get(host, ""))
    return out


def max_error_ns(clocks: dict[str, HostClock]) -> int:
    """The stated error of cross-host stamps in the run: the largest of any host (0 on one)."""
    return max((c.error_ns for c in clocks.values()), default=0)


def clocks_json(reference: str, clocks: dict[str, HostClock]) -> dict[str, Any]:
    """What clocks.json holds."""
    return {"reference": reference, "clock_offset_error_ns": max_error_ns(clocks),
            "hosts": {h: asdict(c) for h, c in clocks.items()}}


def write_clocks(run_dir: Path, reference: str, clocks: dict[str, HostClock]) -> Path:
    """Write clocks.json into the run directory."""
    path = Path(run_dir) / CLOCKS_FILE
    return write_text_atomic(path, json.dumps(clocks_json(reference, clocks), indent=2))


def run_clock_error_ns(run_dir: Path) -> int:
    """``clock_offset_error_ns`` of a run (for meta.parquet): from its clocks.json, 0 when
    the run had no cross-host clocks to relate (no file)."""
    path = Path(run_dir) / CLOCKS_FILE
    if not path.is_file():
        return 0
    return int(json.loads(path.read_text())["clock_offset_error_ns"])


def describe(clocks: dict[str, HostClock], reference: str) -> str:
    """One line for the run's summary."""
    parts = []
    for h, c in clocks.items():
        if c.method == "reference":
            continue
        parts.append(f"{h} {c.offset_ns / 1000:+,.1f} us +- {c.error_ns / 1000:,.1f} us ({c.method}"
                     + (f", best of {c.samples}" if c.method == "ping-pong" else "") + ")"
                     + (f" [{c.note}]" if c.note else ""))
    return f"clocks: stamps in host {reference}'s time" + ("; " + "; ".join(parts) if parts else "")
