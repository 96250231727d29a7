"""The hops and percentiles of a latency breakdown (docs/architecture.md "Rates, latency,
sustainability"): names, the stamps that bound each hop, and the sample count a percentile
needs before it is printed (fewer than 10 / (1 - p) samples: n/a)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hop:
    """A hop from stamp ``start`` to stamp ``end`` of the records in ``source``."""

    name: str
    label: str
    start: str
    end: str
    source: str = "samples.parquet"


PIPELINE_HOPS: tuple[Hop, ...] = (
    Hop("fh", "FH", "fh_in", "fh_out"),
    Hop("to_de", "to DE", "fh_out", "de_in"),
    Hop("de", "DE", "de_in", "de_out"),
    Hop("to_mc", "to MC", "de_out", "mc_in"),
)
"""The four hops that add up to end to end from ``fh_in`` (the stacked bar of Figure 6)."""

END_TO_END_HOPS: tuple[Hop, ...] = (
    Hop("e2e_fh", "end to end from fh_in", "fh_in", "mc_in"),
    Hop("e2e_intended", "end to end from intended", "intended", "mc_in"),
)

SEND_LAG_HOP = Hop("send_lag", "replayer send lag", "intended_ns", "sent_ns", source="intended.parquet")
"""How late the replayer sent each packet after its planned time (both copies)."""

SAMPLE_HOPS: tuple[Hop, ...] = PIPELINE_HOPS + END_TO_END_HOPS
ALL_HOPS: tuple[Hop, ...] = SAMPLE_HOPS + (SEND_LAG_HOP,)
HOP_ORDER: dict[str, int] = {h.name: i for i, h in enumerate(ALL_HOPS)}


@dataclass(frozen=True)
class Percentile:
    """Column ``name`` holds the p-th quantile when at least ``min_samples`` samples exist."""

    name: str
    p: float
    min_samples: int


PERCENTILES: tuple[Percentile, ...] = (
    Percentile("p50_ns", 0.5, 20),
    Percentile("p90_ns", 0.9, 100),
    Percentile("p99_ns", 0.99, 1_000),
    Percentile("p999_ns", 0.999, 10_000),
    Percentile("p9999_ns", 0.9999, 100_000),
)
"""min_samples = 10 / (1 - p), written out so no float rounding decides a boundary."""
