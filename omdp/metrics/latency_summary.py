"""What a latency report holds: the percentiles of each hop (the hops: ``omdp.metrics.definitions``),
and when a tail is n/a.

The rule (docs/architecture.md): every percentile is printed with its sample count, and a tail
percentile p with fewer than 10 / (1 - p) samples is n/a (None), because it would be
decided by a handful of samples. One summary shape serves the collector, the stats
segment reader, the breakdown printer and the dashboard.
"""
from __future__ import annotations

from typing import TypedDict

from omdp.metrics.definitions import HOP_KEYS, min_samples
from omdp.metrics.histogram import LatencyHistogram

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
)

class HopSummary(TypedDict):
    """One hop's figures in microseconds; None where empty or too few samples."""

    count: int
    mean_us: float | None
    p50_us: float | None
    p90_us: float | None
    p99_us: float | None
    p99_9_us: float | None
    p99_99_us: float | None
    max_us: float | None


def percentile_field(name: str) -> str:
    """The summary key of a percentile name: "p99.9" -> "p99_9_us"."""
    return name.replace(".", "_") + "_us"


def summarize(hist: LatencyHistogram) -> HopSummary:
    """Count, mean, p50..p99.99 and max of a histogram, in us, with the n/a rule applied."""
    n = hist.count
    qs = hist.quantiles_ns([q for _, q in PERCENTILES]) if n else [None] * len(PERCENTILES)
    out: dict[str, float | int | None] = {"count": n, "mean_us": None if n == 0 else hist.mean_ns() / 1e3}
    for (name, p), v in zip(PERCENTILES, qs):
        out[percentile_field(name)] = v / 1e3 if (v is not None and n >= min_samples(p)) else None
    out["max_us"] = None if n == 0 else hist.max_ns / 1e3
    return HopSummary(**out)  # type: ignore[typeddict-item]


def summarize_hops(hists: dict[str, LatencyHistogram]) -> dict[str, HopSummary]:
    """``summarize`` for every hop, in ``HOP_KEYS`` order."""
    return {k: summarize(hists[k]) for k in HOP_KEYS}
