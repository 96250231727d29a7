"""Per-second rates of cumulative counters, from successive snapshots.

The stats segment keeps cumulative counters and the time each entry was last published;
a rate is the change between the newest snapshot and one about ``span_s`` older, divided
by the writer's own time between them (so the reader's polling jitter does not enter).
An entry that has not been published for ``stale_s`` runs at 0/s.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable, Mapping


class CounterRates:
    """Snapshots of cumulative counters per key (a line, an operator, a process)."""

    def __init__(self, span_s: float = 1.0, keep_s: float = 10.0, stale_s: float = 3.0) -> None:
        if not 0 < span_s <= keep_s:
            raise ValueError(f"need 0 < span_s <= keep_s, got span_s={span_s}, keep_s={keep_s}")
        self._span_ns = int(span_s * 1e9)
        self._keep_ns = int(keep_s * 1e9)
        self._stale_ns = int(stale_s * 1e9)
        self._snaps: dict[Hashable, deque[tuple[int, dict[str, float]]]] = {}
        self._lock = threading.Lock()

    def add(self, key: Hashable, ts_ns: int, values: Mapping[str, float]) -> None:
        """Record the counters of ``key`` as published at ``ts_ns`` (repeats of the newest
        publication are ignored, and so is an entry registered but never published: its
        time is 0, and a rate against it would spread the counts over the whole epoch)."""
        if ts_ns <= 0:
            return
        with self._lock:
            q = self._snaps.setdefault(key, deque())
            if q and ts_ns <= q[-1][0]:
                return
            q.append((ts_ns, dict(values)))
            while len(q) > 2 and q[1][0] <= ts_ns - self._keep_ns:
                q.popleft()

    def rates(self, key: Hashable, now_ns: int) -> dict[str, float] | None:
        """Counter -> change per second over about ``span_s``; None before two snapshots."""
        with self._lock:
            q = self._snaps.get(key)
            if not q or len(q) < 2:
                return None
            newest_ts, newest = q[-1]
            if now_ns - newest_ts > self._stale_ns:
                return {k: 0.0 for k in newest}
            ref_ts, ref = q[0]
            for ts, values in reversed(q):
                if ts <= newest_ts - self._span_ns:
                    ref_ts, ref = ts, values
                    break
            dt = (newest_ts - ref_ts) / 1e9
            return {k: (v - ref.get(k, 0)) / dt for k, v in newest.items() if k in ref}

    def forget_except(self, keys: set[Hashable]) -> None:
        """Drop keys no longer present (closed processes, entries reused)."""
        with self._lock:
            for k in set(self._snaps) - keys:
                del self._snaps[k]
