"""``/metrics``: the run's figures for Prometheus, built with prometheus_client's collector API.

Names follow Prometheus' conventions: base units (seconds), counters end in ``_total``.
Latency is one histogram per hop (label ``hop``) over the whole run, with buckets spaced
1-2-5 per decade from 100 ns to 10 s (a stalled pipeline's queueing reaches seconds;
the omdp histograms hold up to 68.7 s). Each bucket counts the samples whose omdp
histogram bucket lies entirely at or below its bound (never overstated; see
``LatencyHistogram.cumulative_counts_le``).
"""
from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.stats_segment import LINE_COUNTER_NAMES
from ops.dashboard import figures
from ops.dashboard.market import market_metrics
from ops.dashboard.source import DashboardSource, SourceUnavailable

BUCKET_BOUNDS_NS: tuple[int, ...] = tuple(m * 10**e for e in range(2, 10) for m in (1, 2, 5)) + (10_000_000_000,)
"""100 ns, 200 ns, 500 ns, 1 us, ... 5 s, 10 s."""


class RunCollector(Collector):
    """Collects one source's figures at every scrape."""

    def __init__(self, source: DashboardSource) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("omdp_stats_available", "1 when the run's figures can be read", labels=["run_id"])
        try:
            metrics = list(self._run_metrics())
        except SourceUnavailable:
            up.add_metric([self.source.run_id], 0)
            yield up
            return
        up.add_metric([self.source.run_id], 1)
        yield up
        yield from metrics

    def _run_metrics(self) -> Iterator[Metric]:
        src = self.source
        yield from self._latency(src)
        yield from self._lines(src)
        yield from self._operators(src)
        signals = CounterMetricFamily("omdp_signals", "Decision-engine signals raised since the run started")
        signals.add_metric([], src.signals_total())
        yield signals
        yield from self._run(src)
        yield from market_metrics(src)

    @staticmethod
    def _latency(src: DashboardSource) -> Iterator[Metric]:
        hists = src.latency_histograms(None, src.now_ns())
        fam = HistogramMetricFamily("omdp_latency_seconds", "Per-hop latency of the sampled messages since the run "
                                    "started (fh, to_de, de, to_mc, e2e from fh_in, e2e_intended)", labels=["hop"])
        for hop in HOP_KEYS:
            h = hists[hop]
            cum = h.cumulative_counts_le(BUCKET_BOUNDS_NS)
            buckets = [(floatToGoString(b / 1e9), float(c)) for b, c in zip(BUCKET_BOUNDS_NS, cum)]
            buckets.append(("+Inf", float(h.count)))
            fam.add_metric([hop], buckets, sum_value=h.sum_ns / 1e9)
        yield fam
        missing = CounterMetricFamily("omdp_latency_missing_stamps", "Samples lacking a stamp the hop needs",
                                      labels=["hop"])
        for hop, n in src.missing_stamps().items():
            missing.add_metric([hop], n)
        yield missing

    @staticmethod
    def _lines(src: DashboardSource) -> Iterator[Metric]:
        rows = src.lines()
        docs = {"packets_received": "Packets received", "messages_received": "Messages received",
                "messages_missed": "Messages missed (sequence gaps)",
                "packets_duplicate": "Duplicate packets (the losing A/B copy)", "decode_errors": "Decode errors"}
        for name in LINE_COUNTER_NAMES:
            fam = CounterMetricFamily(f"omdp_line_{name}", f"{docs[name]} per feed line", labels=["line"])
            for r in rows:
                fam.add_metric([str(r["line"])], r[name])
            yield fam

    @staticmethod
    def _operators(src: DashboardSource) -> Iterator[Metric]:
        ops = figures.operators(src).operators
        counts = CounterMetricFamily("omdp_operator_events", "Cumulative counters of operators and channels",
                                     labels=["operator", "kind", "counter"])
        levels = GaugeMetricFamily("omdp_operator_level", "Levels of operators and channels (ring occupancy, "
                                   "peer state code)", labels=["operator", "kind", "counter"])
        cpu = GaugeMetricFamily("omdp_operator_process_cpu_ratio", "CPU time of the operator's process per second "
                                "(1 = one CPU busy)", labels=["operator", "kind"])
        for op in ops:
            for c in op.counters:
                (levels if c.gauge else counts).add_metric([op.name, op.kind, c.name], c.value)
            if op.process_cpu_percent is not None:
                cpu.add_metric([op.name, op.kind], op.process_cpu_percent / 100.0)
        yield counts
        yield levels
        yield cpu

    @staticmethod
    def _run(src: DashboardSource) -> Iterator[Metric]:
        st = figures.run(src, replay_control=False, with_plan=False)
        info = GaugeMetricFamily("omdp_run_info", "The run (value 1)",
                                 labels=["run_id", "source", "state", "topology", "config"])
        info.add_metric([st.run_id, st.source, st.state, st.topology, st.config], 1)
        yield info
        for name, doc, value in (
            ("omdp_run_target_packets_per_second", "Packets/s asked of the replayer, all lines", st.target_pps),
            ("omdp_run_achieved_packets_per_second", "Packets/s the replayer achieves", st.achieved_pps),
            ("omdp_run_uptime_seconds", "Seconds since the run started (to its end when finished)", st.uptime_s),
        ):
            if value is not None:
                g = GaugeMetricFamily(name, doc)
                g.add_metric([], value)
                yield g


def metrics_registry(source: DashboardSource) -> CollectorRegistry:
    """A registry holding only the run's collector (no process metrics of the dashboard)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(source))
    return registry
