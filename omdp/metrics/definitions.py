"""The one definition of the hops and of "sustainable" (docs/architecture.md "Rates, latency,
sustainability"). The live run's report, ``omdp runs show``, the dashboard, the capacity
planner and the nightly Spark jobs all import them from here, so a change here changes every
verdict and every hop table together.

**Hops.** Each hop is the difference of two of a record's stamps. ``key`` is the hop's name
in the live figures (the C ``OMDP_LAT_*`` order, the dashboard's JSON and Prometheus label);
``table_name`` its name in the nightly Spark tables, which differ for end to end from
``fh_in`` only (``e2e`` live, ``e2e_fh`` in the tables earlier nights wrote and the
regressions compare against).

**Sustainable.** A run's rate is sustainable when every one of these holds:

- the replayer kept >= 99.99% of its schedule (``achieved_fraction``);
- at most 0.01% of the messages were missed (missed / (received + missed));
- latency from ``intended`` did not grow: the samples that carry both stamps, in arrival
  order (``mc_in``), are cut into thirds; the median of the last third may exceed the first
  third's by at most 50 us or half the first third's median, whichever is larger. A queue
  that builds up under overload grows without bound and fails this at once; noise of a few
  microseconds does not. With fewer than 30 such samples growth cannot be told, and the rate
  is not sustainable;
- the p99 of latency from ``intended`` (the run's breakdown, n/a under 1,000 samples: then
  not judged) is at most the bound, 1 ms by default (``omdp run --max-p99-from-intended``):
  the coordinated-omission-safe figure is the one a consumer of the feed sees;
- the run did not fail.

This is the run report's rule, the stricter of the two the project had: the nightly job
judged growth on quarters by ``intended`` time (last quarter's median > 2x the first's and
50 us above it) and had no p99 bound, so it called runs sustainable that the live run did
not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from omdp.units import fmt_us


@dataclass(frozen=True)
class Hop:
    """A hop from stamp ``start`` to stamp ``end`` of the records in ``source``."""

    key: str
    label: str
    start: str
    end: str
    table_name: str
    source: str = "samples.parquet"

    @property
    def definition(self) -> str:
        return f"{self.end} - {self.start}"


COMPONENT_HOPS: tuple[Hop, ...] = (
    Hop("fh", "FH", "fh_in", "fh_out", "fh"),
    Hop("to_de", "to DE", "fh_out", "de_in", "to_de"),
    Hop("de", "DE", "de_in", "de_out", "de"),
    Hop("to_mc", "to MC", "de_out", "mc_in", "to_mc"),
)
"""The four hops that add up to end to end from ``fh_in`` (the stacked bar of Figure 6)."""

END_TO_END_HOPS: tuple[Hop, ...] = (
    Hop("e2e", "end to end (from fh_in)", "fh_in", "mc_in", "e2e_fh"),
    Hop("e2e_intended", "end to end (from intended)", "intended", "mc_in", "e2e_intended"),
)
"""From packet arrival (the Vega paper's definition) and from the planned send time."""

SAMPLE_HOPS: tuple[Hop, ...] = COMPONENT_HOPS + END_TO_END_HOPS
"""The hops of a sample record, in the C ``OMDP_LAT_*`` order (pinned by a test)."""

SEND_LAG_HOP = Hop("send_lag", "replayer send lag", "intended_ns", "sent_ns", "send_lag", source="intended.parquet")
"""How late the replayer sent each packet after its planned time (both copies)."""

RUN_RECORD_HOPS: tuple[Hop, ...] = SAMPLE_HOPS + (SEND_LAG_HOP,)
"""Every hop a run directory's records give (the nightly latency breakdown's rows, in order)."""

HOP_KEYS: tuple[str, ...] = tuple(h.key for h in SAMPLE_HOPS)
HOP_LABELS: dict[str, str] = {h.key: h.label for h in SAMPLE_HOPS}
HOP_DEFINITIONS: dict[str, str] = {h.key: h.definition for h in SAMPLE_HOPS}
HOP_STAMPS: dict[str, tuple[str, str]] = {h.key: (h.start, h.end) for h in SAMPLE_HOPS}
"""The two stamps each hop needs."""


GROWTH_ALLOWANCE_US = 50.0
"""Latency from intended may grow by this much over the run (or by GROWTH_SHARE of the first
third's median, whichever is larger)."""
GROWTH_SHARE = 0.5
MIN_GROWTH_SAMPLES = 30
"""Fewer samples with both stamps: growth cannot be told."""


def min_samples(p: float) -> int:
    """Samples needed before percentile p is reported: 10 / (1 - p), rounded up (fewer: n/a)."""
    return math.ceil(round(10.0 / (1.0 - p), 6))


@dataclass(frozen=True)
class SustainabilityRule:
    """The thresholds of "sustainable" (the module doc); ``max_p99_from_intended_us`` None: no bound."""

    min_achieved_fraction: float = 0.9999
    max_missed_ratio: float = 0.0001
    max_p99_from_intended_us: float | None = 1000.0


DEFAULT_RULE = SustainabilityRule()


@dataclass(frozen=True)
class Growth:
    """Latency from intended, first vs last third of the run (medians, us)."""

    first_us: float | None = None
    last_us: float | None = None
    samples: int = 0

    @property
    def growing(self) -> bool | None:
        """None when there are too few samples to tell."""
        if self.first_us is None or self.last_us is None:
            return None
        return self.last_us - self.first_us > max(GROWTH_ALLOWANCE_US, GROWTH_SHARE * self.first_us)


def latency_growth(intended: np.ndarray, mc_in: np.ndarray) -> Growth:
    """Medians of latency from intended over the first and last third of the samples (those
    with both stamps set), in arrival order."""
    ok = (intended > 0) & (mc_in > 0)
    lat, when = (mc_in[ok] - intended[ok]) / 1e3, mc_in[ok]
    if len(lat) < MIN_GROWTH_SAMPLES:
        return Growth(samples=int(len(lat)))
    lat = lat[np.argsort(when, kind="stable")]
    third = len(lat) // 3
    return Growth(float(np.median(lat[:third])), float(np.median(lat[-third:])), int(len(lat)))


@dataclass(frozen=True)
class Verdict:
    """Sustainable, not, or unknown, and why. A test that could not be judged (too few samples
    for the p99 bound or the growth test) makes the verdict unknown, never yes."""

    sustainable: bool
    """True only when every test was judged and passed."""
    reasons: tuple[str, ...]
    """The tests that failed."""
    unknown: tuple[str, ...] = ()
    """The tests that could not be judged, and why."""

    @property
    def judged(self) -> bool | None:
        """True (sustainable), False (a test failed) or None (none failed, some not judged)."""
        return False if self.reasons else (None if self.unknown else True)

    def text(self) -> str:
        """``yes``, ``no (why)`` or ``unknown (what could not be judged)``."""
        if self.reasons:
            return "no (" + "; ".join(self.reasons) + ")"
        return "unknown (" + "; ".join(self.unknown) + ")" if self.unknown else "yes"


def judge(*, achieved_fraction: float | None, messages_missed: int | None, messages_seen: int | None, growth: Growth,
          p99_from_intended_us: float | None, failed: bool = False, unreported: tuple[str, ...] = (),
          rule: SustainabilityRule = DEFAULT_RULE) -> Verdict:
    """The rule of the module doc, with the reasons it failed and the tests it could not judge
    (p99 n/a against a bound, too few samples for growth); ``unreported``: partitions that
    died without their figures, so missed messages are unknown (a failure, never a pass)."""
    why: list[str] = []
    unknown: list[str] = []
    bound = rule.max_p99_from_intended_us
    if bound is not None:
        if p99_from_intended_us is None:
            unknown.append(f"p99 latency from intended is n/a (fewer than {min_samples(0.99):,} samples) against the "
                           f"bound {fmt_us(bound)}: run longer or sample more (--sample-every)")
        elif p99_from_intended_us > bound:
            why.append(f"p99 latency from intended {fmt_us(p99_from_intended_us)} is above the bound {fmt_us(bound)}")
    if failed:
        why.append("the run failed")
    if achieved_fraction is None or achieved_fraction < rule.min_achieved_fraction:
        frac = "unknown" if achieved_fraction is None else f"{achieved_fraction:.4%}"
        why.append(f"replayer kept {frac} of its schedule (needs >= {rule.min_achieved_fraction:.2%})")
    ratio = messages_missed / messages_seen if messages_seen and messages_missed is not None else None
    if unreported:
        why.append(f"missed messages unknown: partition {', '.join(unreported)} died without its figures")
    elif messages_missed is None and messages_seen is None:
        why.append("missed messages unknown: the run's records do not say")
    elif ratio is None or ratio > rule.max_missed_ratio:
        why.append("no messages received" if ratio is None else f"missed {ratio:.4%} (limit {rule.max_missed_ratio:.2%})")
    growing = growth.growing
    if growing is None:
        unknown.append(f"too few samples ({growth.samples}) to judge latency growth")
    elif growing:
        why.append(f"latency from intended grew from {fmt_us(growth.first_us)} to {fmt_us(growth.last_us)} (median)")
    return Verdict(not why and not unknown, tuple(why), tuple(unknown))
