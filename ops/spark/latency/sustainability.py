"""Is a run's rate sustainable, and how far does each sweep go (the paper's Figures 5, 8)?

docs/architecture.md: a rate is sustainable when the replayer achieves >= 99.99% of the target
packets/s, missed messages are <= 0.01%, and latency from ``intended`` does not grow over
the run. "Grows" is made concrete here: split the run's samples into quarters by their
``intended`` time; latency is growing when the median end-to-end-from-intended latency of
the last quarter exceeds ``growth_factor`` times that of the first quarter AND the two differ
by more than ``growth_floor_ns`` (so sub-microsecond jitter on a fast run never counts).
With fewer than ``min_quarter_samples`` in either quarter it cannot be told (None), and then
neither can sustainability, unless another criterion already failed.

The quarter medians are computed on the executors, one run's samples at a time
(``quarter_medians``, called by ``run_analysis``); judging a run and summarizing a sweep work
on one row per run, on the driver.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SustainabilityRule:
    """The thresholds of "sustainable" (defaults: docs/architecture.md and the growth rule above)."""

    min_achieved_ratio: float = 0.9999
    max_missed_ratio: float = 0.0001
    growth_factor: float = 2.0
    growth_floor_ns: float = 50_000.0
    min_quarter_samples: int = 20


def quarter_medians(intended: np.ndarray, mc_in: np.ndarray) -> tuple[float | None, float | None, int, int]:
    """Exact medians of ``mc_in - intended`` over the first and the last quarter of the run
    by ``intended`` time, and the samples in each (unstamped samples left out)."""
    ok = (intended > 0) & (mc_in > 0)
    t, lat = intended[ok], (mc_in - intended)[ok]
    if t.size == 0:
        return None, None, 0, 0
    t0, t1 = int(t.min()), int(t.max())
    quarter = (4 * (t - t0)) // (t1 - t0 + 1)  # int64: no rounding of nanosecond stamps
    first, last = lat[quarter == 0], lat[quarter == 3]
    return (
        float(np.median(first)) if first.size else None,
        float(np.median(last)) if last.size else None,
        int(first.size),
        int(last.size),
    )


def _all_of(*verdicts: bool | None) -> bool | None:
    """Three-valued AND: False if any is False, else None if any is unknown, else True."""
    if any(v is False for v in verdicts):
        return False
    if any(v is None for v in verdicts):
        return None
    return True


def judge_run(meta: dict, growth: dict | None, rule: SustainabilityRule) -> dict:
    """``achieved_ratio, missed_ratio, growth_ratio, latency_growing, sustainable`` of a run
    from its meta row and its ``latency_growth`` row (None: no usable samples)."""
    target, sent = meta["target_pps"], meta["messages_sent"]
    achieved = meta["achieved_pps"] / target if target and target > 0 else None
    missed = meta["messages_missed"] / sent if sent and sent > 0 else None
    first = growth["first_quarter_p50_ns"] if growth else None
    last = growth["last_quarter_p50_ns"] if growth else None
    enough = bool(growth) and min(growth["first_quarter_n"], growth["last_quarter_n"]) >= rule.min_quarter_samples
    growing = None
    if enough and first is not None and last is not None:
        growing = last > rule.growth_factor * first and last - first > rule.growth_floor_ns
    return {
        "achieved_ratio": achieved,
        "missed_ratio": missed,
        "first_quarter_p50_ns": first,
        "last_quarter_p50_ns": last,
        "growth_ratio": last / first if first and last is not None else None,
        "latency_growing": growing,
        # Compared as products, not ratios: 24,000 x 0.9999 achieved of 24,000 is exactly
        # the boundary, which a division would round below.
        "sustainable": _all_of(
            None if achieved is None else meta["achieved_pps"] >= rule.min_achieved_ratio * target,
            None if missed is None else meta["messages_missed"] <= rule.max_missed_ratio * sent,
            None if growing is None else not growing,
        ),
    }


def sweep_summaries(runs: list[dict]) -> list[dict]:
    """Per ``sweep_id`` (runs outside a sweep left out): the rates tried, the lowest rate not
    sustained, and the highest rate sustained below it - the sweep's sustainable rate. A rate
    tried more than once is sustained only if every try was; an undecided rate (None) stops
    neither the search nor counts as sustained."""
    by_sweep: dict[str, list[dict]] = {}
    for r in runs:
        if r["sweep_id"]:
            by_sweep.setdefault(r["sweep_id"], []).append(r)
    out = []
    for sweep_id, rows in sorted(by_sweep.items()):
        per_rate: dict[float, bool | None] = {}
        for r in rows:
            per_rate[r["rate_x"]] = _all_of(per_rate.get(r["rate_x"], True), r["sustainable"])
        rates = sorted(per_rate)
        first_bad = next((x for x in rates if per_rate[x] is False), None)
        good = [x for x in rates if per_rate[x] is True and (first_bad is None or x < first_bad)]
        out.append(
            {
                "date": rows[0]["date"],
                "sweep_id": sweep_id,
                "topology": rows[0]["topology"],
                "config": rows[0]["config"],
                "runs": len(rows),
                "min_rate_x": rates[0],
                "max_rate_x": rates[-1],
                "first_unsustainable_rate_x": first_bad,
                "max_sustainable_rate_x": max(good) if good else None,
            }
        )
    return out
