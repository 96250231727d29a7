"""What the dashboard reads: one interface over a live run and a finished one.

``LiveSource`` reads the stats segment of a running run; ``FinishedRunSource`` reads the
Parquet records of a run directory. Both answer in the shapes of ``StatsReader`` (plain
dicts; times int64 ns; latency histograms as ``LatencyHistogram``), with rates already
computed, so the API, the stream, ``/metrics`` and the page never know which one they have.
"""
from __future__ import annotations

import abc
from typing import Any, Literal

from omdp.metrics.definitions import Verdict
from omdp.metrics.histogram import LatencyHistogram

SourceKind = Literal["live", "finished"]

GAUGE_COUNTERS = frozenset({"occupancy", "ring_occupancy", "queue_depth", "held", "peer_state",
                            # an elastic engine partition's entry (decision_engines/elastic_operator.py)
                            "level", "rate_per_s", "busy_pct", "saturated", "suspended"})
"""Operator counter names that hold a level, not a running count: no rate, a gauge in
/metrics. Every other counter of the stats segment is cumulative."""


def is_gauge(counter: str) -> bool:
    """True for a level (``GAUGE_COUNTERS``, a ``last_*`` value or an elastic partition's
    ``peak_l<N>`` rate), False for a cumulative count."""
    return counter in GAUGE_COUNTERS or counter.startswith(("last_", "peak_l"))


class SourceUnavailable(RuntimeError):
    """The source cannot answer now (a live run whose stats segment is not there yet)."""


class DashboardSource(abc.ABC):
    """A run's figures, live or finished."""

    kind: SourceKind

    @property
    @abc.abstractmethod
    def run_id(self) -> str:
        """The run's id."""

    @property
    @abc.abstractmethod
    def max_window_s(self) -> int:
        """Longest latency window, in seconds, this source can serve."""

    @abc.abstractmethod
    def now_ns(self) -> int:
        """The default end of windows: the clock for a live run, its end for a finished one."""

    @abc.abstractmethod
    def latency_histograms(self, window_s: int | None, at_ns: int) -> dict[str, LatencyHistogram]:
        """Per-hop histograms over the ``window_s`` seconds up to ``at_ns``; None: the whole
        run (live: every sample since the start; finished: the rows its report used)."""

    @abc.abstractmethod
    def latency_history(self, seconds: int, at_ns: int) -> list[dict[str, Any]]:
        """One entry per second up to ``at_ns``, oldest first: {"second", "hops": {hop: summary}}."""

    @abc.abstractmethod
    def missing_stamps(self) -> dict[str, int]:
        """Per hop, samples that lacked a stamp the hop needs."""

    @abc.abstractmethod
    def lines(self) -> list[dict[str, Any]]:
        """Per feed line: line, state, updated_ns, the cumulative ``LINE_COUNTER_NAMES``
        counters, and ``packets_per_s`` / ``messages_per_s`` (None until known; a finished
        run's: its averages)."""

    @abc.abstractmethod
    def ingest_history(self, seconds: int) -> list[dict[str, Any]]:
        """Rates over all lines in the last ``seconds`` seconds, oldest first: ts_ns,
        packets_per_s, messages_per_s, messages_missed (cumulative)."""

    @abc.abstractmethod
    def operators(self) -> list[dict[str, Any]]:
        """Per operator or channel: name, kind, cpu, pid, state, updated_ns, counters (dict),
        rates (counter -> per second, None until known) and process_cpu_percent."""

    @abc.abstractmethod
    def signals(self, limit: int) -> list[dict[str, Any]]:
        """The latest signals, newest first: ts_ns, engine, kind, series, value."""

    @abc.abstractmethod
    def signals_total(self) -> int:
        """Signals raised since the run started."""

    @abc.abstractmethod
    def run_status(self) -> dict[str, Any]:
        """state, topology, config, run_dir, knobs, target_pps, achieved_pps, sample_every,
        messages_per_packet, started_ns, ended_ns, heartbeat_ns, pid, plan (dict or None)."""

    def verdict(self) -> Verdict | None:
        """Whether the run's rate was sustainable (omdp.metrics.definitions); None while it
        runs or when its records cannot tell."""
        return None

    def close(self) -> None:
        """Release what the source holds."""
