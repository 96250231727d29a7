"""``LiveSource``: a running run's figures, from its shared-memory stats segment.

Reads only the segment (one C call per read, never the data path). A background sampler
takes a snapshot of the line and operator tables and of the run's processes' CPU time
every ``sample_s`` seconds, so packets/s, messages/s and counter rates are known at any
request, and keeps one point of total rates per second (the ingest history). The segment may appear after the dashboard starts (the run is still starting):
until it does, reads raise ``SourceUnavailable``. When the run ends its owner unlinks the
segment; the mapping held here stays readable, so the last figures remain on show.
"""
from __future__ import annotations

import json
import threading
from collections import deque
from pathlib import Path
from typing import Any

from omdp.clock import now_ns
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.stats_segment import RING_SECONDS, StatsReader, StatsSegmentError
from ops.dashboard.process_cpu import cpu_seconds
from ops.dashboard.rates import CounterRates
from ops.dashboard.source import DashboardSource, SourceUnavailable, is_gauge

INGEST_HISTORY_S = 600
"""Seconds of per-second ingest rates the sampler keeps (the rate chart of a page opened late)."""


class LiveSource(DashboardSource):
    """The stats segment of run ``run_id`` on this host."""

    kind = "live"

    def __init__(self, run_id: str, sample_s: float = 0.25, run_dir: Path | None = None) -> None:
        """run_dir: where the run's plan.json is, until the run info names the directory."""
        self._run_id = run_id
        self._run_dir = str(run_dir) if run_dir is not None else ""
        self._sample_s = sample_s
        self._reader: StatsReader | None = None
        self._open_lock = threading.Lock()
        self._rates = CounterRates()
        self._plan: dict[str, Any] | None = None
        self._plan_path: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ingest_points: deque[dict[str, Any]] = deque(maxlen=INGEST_HISTORY_S)

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def max_window_s(self) -> int:
        return RING_SECONDS

    def start(self) -> None:
        """Start the background sampler (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._sample_loop, name="omdp-dashboard-sampler", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the sampler and unmap the segment."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _open(self) -> StatsReader:
        with self._open_lock:
            if self._reader is None:
                try:
                    self._reader = StatsReader(self._run_id)
                except StatsSegmentError as e:
                    raise SourceUnavailable(f"{e} (is run {self._run_id} started on this host?)") from None
            return self._reader

    def _sample_loop(self) -> None:
        next_point = 0
        while not self._stop.wait(self._sample_s):
            try:
                lines = self.lines()
                ops = self.operators()
            except (SourceUnavailable, StatsSegmentError):
                continue
            # entries gone from the tables (a process ended, a slot reused) drop their snapshots
            self._rates.forget_except({("line", r["line"]) for r in lines}
                                      | {("op", r["name"], r["pid"]) for r in ops}
                                      | {("pid", r["pid"]) for r in ops})
            now = now_ns()
            if now >= next_point and lines and all(r["packets_per_s"] is not None for r in lines):
                self._ingest_points.append({
                    "ts_ns": now, "packets_per_s": sum(r["packets_per_s"] for r in lines),
                    "messages_per_s": sum(r["messages_per_s"] for r in lines),
                    "messages_missed": sum(r["messages_missed"] for r in lines)})
                next_point = now + 1_000_000_000

    def now_ns(self) -> int:
        return now_ns()

    def latency_histograms(self, window_s: int | None, at_ns: int) -> dict[str, LatencyHistogram]:
        return self._open().latency_histograms(window_s, at_ns)

    def latency_history(self, seconds: int, at_ns: int) -> list[dict[str, Any]]:
        return self._open().latency_history(seconds, at_ns)

    def missing_stamps(self) -> dict[str, int]:
        return self._open().missing_stamps()

    def lines(self) -> list[dict[str, Any]]:
        rows = self._open().ingest()
        now = now_ns()
        for row in rows:
            key = ("line", row["line"])
            self._rates.add(key, row["updated_ns"], {"packets": row["packets_received"],
                                                     "messages": row["messages_received"]})
            r = self._rates.rates(key, now)
            row["packets_per_s"] = None if r is None else r["packets"]
            row["messages_per_s"] = None if r is None else r["messages"]
        return rows

    def ingest_history(self, seconds: int) -> list[dict[str, Any]]:
        since = now_ns() - seconds * 1_000_000_000
        return [p for p in list(self._ingest_points) if p["ts_ns"] > since]

    def operators(self) -> list[dict[str, Any]]:
        rows = self._open().operators()
        now = now_ns()
        cpu: dict[int, float | None] = {}
        for pid in {r["pid"] for r in rows if r["pid"] > 0}:
            used = cpu_seconds(pid)
            if used is not None:
                self._rates.add(("pid", pid), now, {"cpu": used})
            r = self._rates.rates(("pid", pid), now) if used is not None else None
            cpu[pid] = None if r is None else 100.0 * r["cpu"]
        for row in rows:
            key = ("op", row["name"], row["pid"])
            counting = {k: v for k, v in row["counters"].items() if not is_gauge(k)}
            self._rates.add(key, row["updated_ns"], counting)
            r = self._rates.rates(key, now)
            row["rates"] = {k: (None if r is None else r.get(k)) for k in counting}
            row["process_cpu_percent"] = cpu.get(row["pid"])
        return rows

    def signals(self, limit: int) -> list[dict[str, Any]]:
        return self._open().signals(limit)

    def signals_total(self) -> int:
        return self._open().signals_total()

    def _plan_of(self, run_dir: str) -> dict[str, Any] | None:
        if run_dir and run_dir != self._plan_path:
            path = Path(run_dir) / "plan.json"
            if path.is_file():
                self._plan = json.loads(path.read_text())
                self._plan_path = run_dir
        return self._plan

    def run_status(self) -> dict[str, Any]:
        reader = self._open()
        info, run = reader.info(), reader.run_info()
        lines = reader.ingest()
        packets = sum(r["packets_received"] for r in lines)
        messages = sum(r["messages_received"] for r in lines)
        return {
            "state": run["state"], "topology": run["topology"], "config": run["config"], "run_dir": run["run_dir"],
            "knobs": run["knobs"], "target_pps": run["target_pps"] or None, "achieved_pps": run["achieved_pps"] or None,
            "sample_every": run["sample_every"] or None,
            "messages_per_packet": messages / packets if packets else None,
            "started_ns": info["start_ns"], "ended_ns": info["closed_ns"] or None,
            "heartbeat_ns": info["heartbeat_ns"] or None, "pid": info["pid"],
            "plan": self._plan_of(run["run_dir"] or self._run_dir),
        }
