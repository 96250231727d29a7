"""Re-sharding between engines from Python: the run's reshard segment and the triggers.

The mechanism is C (``native/include/omdp/reshard.h``: feed handlers switch a bucket's route
at a point in their own stream and mark it on both engines' ports; the old engine hands the
bucket's books to the new one through the segment's hand-over area). Python only creates
the segment when a run starts, asks for moves - ``omdp reshard RUN``, or ``omdp run
--reshard-every MS`` through :class:`ReshardSchedule` - and reads the move log for the run's
report. None of it is in the data path: a request is a few stores into the segment that the
feed handlers look at between polls.
"""
from __future__ import annotations

import threading
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from omdp.c_layout import c_dtype
from omdp.clock import now_ns
from omdp.native import ffi, lib
from omdp.transport.shm_names import shm_name

RESHARD_MARKER_DTYPE = c_dtype("omdp_reshard_marker_t")
"""``omdp_reshard_marker_t`` (record.h numbers its type, reshard.h lays it out)."""

MAX_BUCKETS = int(lib.OMDP_RESHARD_MAX_BUCKETS)
SERIES_BYTES = int(lib.OMDP_RESHARD_SERIES_SIZE)
_ERRORS = {
    int(lib.OMDP_RESHARD_EINVAL): "bucket or engine out of range",
    int(lib.OMDP_RESHARD_EBUSY): "a move is in flight (one at a time); try again when it is installed",
    int(lib.OMDP_RESHARD_ESAME): "the bucket is already on that engine",
    int(lib.OMDP_RESHARD_ESYS): "the segment could not be created or opened",
    int(lib.OMDP_RESHARD_EFORMAT): "not a reshard segment of this omdp version",
    int(lib.OMDP_RESHARD_EENDED): "the run's feed has ended: no more moves",
}
_MOVE_FIELDS = ("id", "bucket", "to", "from", "n_series", "requested_ns", "exported_ns", "installed_ns",
                "state_bytes", "held", "hold_ns", "installed")


class ReshardError(RuntimeError):
    """A request or the segment was refused; ``code`` is the C error (OMDP_RESHARD_E*)."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what}: {_ERRORS.get(code, f'error {code}')}")
        self.code = code


def reshard_name(run_id: str) -> str:
    """Shared-memory name of run ``run_id``'s reshard segment."""
    return shm_name(run_id, "reshard")


def bucket_homes(underlying_ids: Sequence[int], root_engines: Sequence[int], buckets: int, engines: int) -> list[int]:
    """Each bucket's engine in a routing table that is by bucket; buckets without a root go
    round-robin. Raises ValueError when two underlyings of one bucket are on two engines."""
    home: dict[int, int] = {}
    for uid, eng in zip(underlying_ids, root_engines):
        b = uid % buckets
        if home.setdefault(b, eng) != eng:
            raise ValueError(f"bucket {b} is on engines {home[b]} and {eng}: the routing is not by bucket")
    return [home.get(b, b % engines) for b in range(buckets)]


class ReshardSegment:
    """The run's segment (reshard.h). ``create`` when the run starts (the run owns the name
    and unlinks it at the end); ``open`` from anything else of the run."""

    def __init__(self, ptr: Any, name: str, creator: bool) -> None:
        self._ptr = ptr
        self.name = name
        self._creator = creator

    @classmethod
    def create(cls, run_id: str, buckets: int, engines: int, feed_handlers: int, home: Sequence[int],
               handover_bytes: int) -> "ReshardSegment":
        """A new segment for ``buckets`` (a power of two) with each bucket's home engine."""
        if buckets < 1 or buckets > MAX_BUCKETS or buckets & (buckets - 1):
            raise ValueError(f"reshard buckets {buckets}: a power of two, 1..{MAX_BUCKETS}")
        if len(home) != buckets:
            raise ValueError(f"home: {len(home)} engines for {buckets} buckets")
        name = reshard_name(run_id)
        err = ffi.new("int *")
        ptr = lib.omdp_reshard_create(name.encode(), buckets, engines, feed_handlers,
                                      ffi.new("uint16_t[]", list(home)), handover_bytes, err)
        if ptr == ffi.NULL:
            raise ReshardError(f"reshard segment {name} ({buckets} buckets, {engines} engines, "
                               f"{feed_handlers} feed handlers)", err[0])
        return cls(ptr, name, True)

    @classmethod
    def open(cls, run_id: str) -> "ReshardSegment":
        """The segment of a live run; ReshardError when it has none."""
        name = reshard_name(run_id)
        err = ffi.new("int *")
        ptr = lib.omdp_reshard_open(name.encode(), err)
        if ptr == ffi.NULL:
            raise ReshardError(f"run {run_id} has no reshard segment (was it started with re-sharding?)", err[0])
        return cls(ptr, name, False)

    @classmethod
    def for_operator(cls, name: str, run_dir: str | Path | None) -> "ReshardSegment":
        """The segment of the run an operator belongs to (its run directory names the run);
        a ValueError naming the operator when there is no run or no segment, the way an
        operator's bad parameters are reported."""
        run_id = Path(run_dir).name if run_dir is not None else None
        if not run_id:
            raise ValueError(f"{name}: reshard needs a run (its reshard segment)")
        try:
            return cls.open(run_id)
        except ReshardError as e:
            raise ValueError(f"{name}: {e}") from None

    @property
    def c_handle(self) -> Any:
        """The omdp_reshard_seg_t * for a C operator's parameters."""
        return self._ptr

    def close(self) -> None:
        """Unmap (and, for the creator, remove the name)."""
        if self._ptr is not None:
            lib.omdp_reshard_close(self._ptr)
            self._ptr = None
            if self._creator:
                lib.omdp_reshard_unlink(self.name.encode())

    def request(self, bucket: int, to: int) -> int:
        """Ask for ``bucket`` -> engine ``to``; the move id. ReshardError when refused."""
        rc = int(lib.omdp_reshard_request(self._ptr, bucket, to, now_ns()))
        if rc < 0:
            raise ReshardError(f"move of bucket {bucket} to de[{to}]", rc)
        return rc

    def totals(self) -> dict[str, int]:
        """buckets, n_engines, n_fh, requested, exported, installed, handover_cap, attached, ended."""
        t = ffi.new("omdp_reshard_totals_t *")
        lib.omdp_reshard_totals(self._ptr, t)
        return {k: int(getattr(t, k)) for k in ("buckets", "n_engines", "n_fh", "requested", "exported",
                                                "installed", "handover_cap", "attached", "ended")}

    def ready(self) -> bool:
        """Every feed handler and engine of the run has attached (moves may be asked for)."""
        t = self.totals()
        return t["attached"] >= t["n_fh"] + t["n_engines"]

    def owner(self, bucket: int) -> int:
        """The engine that owns ``bucket`` now."""
        return int(lib.omdp_reshard_owner(self._ptr, bucket))

    def move(self, move_id: int) -> dict[str, int] | None:
        """One move of the log (times in omdp clock ns), or None when not (or no longer) there."""
        m = ffi.new("omdp_reshard_move_t *")
        if lib.omdp_reshard_move_info(self._ptr, move_id, m) < 0:
            return None
        return {k: int(getattr(m, k)) for k in _MOVE_FIELDS}

    def moves(self) -> list[dict[str, int]]:
        """Every move still in the log, oldest first."""
        last = self.totals()["requested"]
        first = max(1, last - int(lib.OMDP_RESHARD_LOG) + 1)
        return [m for i in range(first, last + 1) if (m := self.move(i)) is not None]


def summarize_moves(moves: list[dict[str, int]]) -> dict[str, Any]:
    """What a run reports of its moves: counts, request -> installed latency percentiles (us),
    messages held back and hold times, state bytes handed over."""
    done = [m for m in moves if m["installed"]]
    lat = np.array([(m["installed_ns"] - m["requested_ns"]) / 1e3 for m in done], dtype=float)
    hold = np.array([m["hold_ns"] / 1e3 for m in done], dtype=float)
    held = np.array([m["held"] for m in done], dtype=float)

    def pct(a: np.ndarray) -> dict[str, float] | None:
        if not len(a):
            return None
        return {"p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
                "p99": float(np.percentile(a, 99)), "max": float(a.max())}

    return {"requested": len(moves), "completed": len(done),
            "latency_us": pct(lat), "hold_us": pct(hold), "held": pct(held),
            "held_total": int(held.sum()) if len(held) else 0,
            "state_bytes": int(sum(m["state_bytes"] for m in done)),
            "series": int(sum(m["n_series"] for m in done))}


class ReshardSchedule:
    """``--reshard-every MS``: a thread that asks for a move every period - the buckets in
    turn, each to the next engine after its owner - skipping a period while a move is still
    in flight. Not in the data path: it only writes requests into the segment."""

    def __init__(self, segment: ReshardSegment, period_s: float, engines: int) -> None:
        if period_s <= 0:
            raise ValueError(f"reshard period {period_s} s: must be > 0")
        self.segment = segment
        self.period_s = period_s
        self.engines = engines
        self.issued = 0
        self.busy = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reshard-schedule", daemon=True)

    def start(self) -> None:
        """Start asking."""
        self._thread.start()

    def stop(self) -> None:
        """Stop asking (a move in flight completes by itself)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        buckets = self.segment.totals()["buckets"]
        b = 0
        while not self.segment.ready():  # every party attached: the first move finds them all
            if self._stop.wait(0.01):
                return
        while not self._stop.wait(self.period_s):
            try:
                self.segment.request(b, (self.segment.owner(b) + 1) % self.engines)
                self.issued += 1
                b = (b + 1) % buckets
            except ReshardError as e:
                if e.code == int(lib.OMDP_RESHARD_EENDED):
                    return
                self.busy += 1


LIVE_COUNTERS = ("requested", "completed", "held", "state_bytes", "series", "last_us", "max_us", "max_hold_us")
"""The run's stats-segment entry ``reshard`` (kind ``reshard``): moves requested and installed,
messages held back, state bytes and series handed over, the last and the largest request ->
installed latency and the longest hold (us)."""


class ReshardLive:
    """Publishes the move log's running totals (LIVE_COUNTERS) every ``interval_s`` from a
    thread of the run's parent, so the dashboard and /metrics show moves while they happen;
    the move log is read, never the data path."""

    def __init__(self, segment: ReshardSegment, publish: Callable[[dict[str, int]], None],
                 interval_s: float = 0.1) -> None:
        self.segment = segment
        self._publish = publish
        self.interval_s = interval_s
        self._seen = 0  # moves accounted for (installed), in id order
        self._totals = dict.fromkeys(LIVE_COUNTERS, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reshard-live", daemon=True)

    def start(self) -> None:
        """Start publishing."""
        self._thread.start()

    def stop(self) -> None:
        """Publish once more and stop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.publish_now()

    def publish_now(self) -> dict[str, int]:
        """Take the moves installed since the last call into the totals and publish them."""
        t = self._totals
        while (m := self.segment.move(self._seen + 1)) is not None and m["installed"]:
            self._seen += 1
            lat = (m["installed_ns"] - m["requested_ns"]) // 1000
            t["completed"] += 1
            t["held"] += m["held"]
            t["state_bytes"] += m["state_bytes"]
            t["series"] += m["n_series"]
            t["last_us"] = lat
            t["max_us"] = max(t["max_us"], lat)
            t["max_hold_us"] = max(t["max_hold_us"], m["hold_ns"] // 1000)
        t["requested"] = self.segment.totals()["requested"]
        self._publish(dict(t))
        return dict(t)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.publish_now()
