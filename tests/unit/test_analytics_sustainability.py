"""The sustainability rule and the sweep summary of the nightly latency job (docs/architecture.md
"Rates, latency, sustainability"), on hand-made rows: no Spark needed."""
from __future__ import annotations

import numpy as np
import pytest

from ops.spark.latency.sustainability import SustainabilityRule, judge_run, sweep_summaries

RULE = SustainabilityRule()


def _meta(achieved: float = 24_000.0, missed: int = 0, sent: int = 1_000_000) -> dict:
    return {"target_pps": 24_000.0, "achieved_pps": achieved, "messages_sent": sent, "messages_missed": missed}


def _growth(first: float, last: float, n: int = 500) -> dict:
    return {"first_quarter_p50_ns": first, "last_quarter_p50_ns": last, "first_quarter_n": n, "last_quarter_n": n}


def test_a_clean_run_is_sustainable() -> None:
    v = judge_run(_meta(), _growth(10_000, 11_000), RULE)
    assert v["sustainable"] is True and v["latency_growing"] is False
    assert v["achieved_ratio"] == 1.0 and v["missed_ratio"] == 0.0 and v["growth_ratio"] == pytest.approx(1.1)


@pytest.mark.parametrize(
    "meta,growth,why",
    [
        (_meta(achieved=24_000 * 0.9998), _growth(10_000, 10_000), "achieved below 99.99%"),
        (_meta(missed=101), _growth(10_000, 10_000), "missed above 0.01%"),
        (_meta(), _growth(10_000, 90_000), "latency from intended grows"),
    ],
)
def test_each_criterion_alone_makes_a_rate_unsustainable(meta: dict, growth: dict, why: str) -> None:
    assert judge_run(meta, growth, RULE)["sustainable"] is False, why


def test_the_boundaries_are_inclusive() -> None:
    assert judge_run(_meta(achieved=24_000 * 0.9999, missed=100), _growth(1, 1), RULE)["sustainable"] is True


def test_growth_needs_both_the_factor_and_the_floor() -> None:
    # Three times slower but only 2 us more: jitter on a fast run, not a queue building up.
    assert judge_run(_meta(), _growth(1_000, 3_000), RULE)["latency_growing"] is False
    # 60 us more but only 1.5 times: not growing either.
    assert judge_run(_meta(), _growth(120_000, 180_000), RULE)["latency_growing"] is False
    assert judge_run(_meta(), _growth(30_000, 90_000), RULE)["latency_growing"] is True


def test_too_few_samples_leave_it_undecided_unless_something_else_failed() -> None:
    few = _growth(10_000, 10_000, n=RULE.min_quarter_samples - 1)
    assert judge_run(_meta(), few, RULE)["sustainable"] is None
    assert judge_run(_meta(), None, RULE)["sustainable"] is None
    assert judge_run(_meta(missed=5_000), few, RULE)["sustainable"] is False


def _run(rate: float, ok: bool | None, sweep: str = "s1") -> dict:
    return {"date": "2026-03-01", "sweep_id": sweep, "topology": "t.toml", "config": "fused", "rate_x": rate, "sustainable": ok}


def test_sweep_stops_at_the_first_rate_not_sustained() -> None:
    runs = [_run(1, True), _run(2, True), _run(3, False), _run(4, True), _run(0.5, True), _run(9, True, sweep="")]
    (s,) = sweep_summaries(runs)
    assert s["runs"] == 5 and s["min_rate_x"] == 0.5 and s["max_rate_x"] == 4
    assert s["first_unsustainable_rate_x"] == 3 and s["max_sustainable_rate_x"] == 2


def test_a_rate_tried_twice_must_hold_both_times() -> None:
    (s,) = sweep_summaries([_run(1, True), _run(2, True), _run(2, False)])
    assert s["first_unsustainable_rate_x"] == 2 and s["max_sustainable_rate_x"] == 1


def test_undecided_rates_neither_stop_nor_count() -> None:
    (s,) = sweep_summaries([_run(1, True), _run(2, None), _run(3, True)])
    assert s["first_unsustainable_rate_x"] is None and s["max_sustainable_rate_x"] == 3


def test_quarter_medians_split_the_run_by_intended_time() -> None:
    from ops.spark.latency.sustainability import quarter_medians

    t0 = 1_202_135_400_000_000_000  # epoch ns: past 2**53, quarters must not round
    intended = t0 + np.arange(400, dtype=np.int64) * 1_000_000
    latency = np.where(np.arange(400) < 100, 10_000, 0) + np.where(np.arange(400) >= 300, 500_000, 0)
    latency = latency + np.arange(400) % 3
    mc_in = intended + latency
    mc_in[5] = 0  # not stamped: left out
    first, last, n_first, n_last = quarter_medians(intended, mc_in)
    assert (n_first, n_last) == (99, 100)
    assert first == float(np.median(latency[:100][np.arange(100) != 5]))
    assert last == float(np.median(latency[300:]))
