"""The sustainability rule (omdp.metrics.definitions, docs/architecture.md "Rates, latency,
sustainability") as the nightly latency job applies it, and the sweep summary, on hand-made
rows: no Spark needed."""
from __future__ import annotations

import numpy as np
import pytest

from omdp.metrics.definitions import DEFAULT_RULE, MIN_GROWTH_SAMPLES, latency_growth
from ops.spark.latency.sustainability import judge_run, sweep_summaries

RULE = DEFAULT_RULE


def _meta(achieved: float = 24_000.0, missed: int = 0, sent: int = 1_000_000) -> dict:
    return {"target_pps": 24_000.0, "achieved_pps": achieved, "messages_sent": sent, "messages_missed": missed}


def _figures(first_us: float, last_us: float, n: int = 500, p99_us: float | None = 100.0, **more) -> dict:
    return {"first_third_p50_us": first_us, "last_third_p50_us": last_us, "growth_samples": n,
            "p99_from_intended_us": p99_us, "replayer_status": False, "replayer_fraction": None, "failed": False, **more}


def test_a_clean_run_is_sustainable() -> None:
    v = judge_run(_meta(), _figures(10, 11), [], RULE)
    assert v["sustainable"] is True and v["latency_growing"] is False and v["reasons"] == ""
    assert v["achieved_ratio"] == 1.0 and v["missed_ratio"] == 0.0 and v["growth_ratio"] == pytest.approx(1.1)
    assert v["first_third_p50_ns"] == 10_000 and v["last_third_p50_ns"] == 11_000


@pytest.mark.parametrize(
    "meta,figures,why",
    [
        (_meta(achieved=24_000 * 0.9998), _figures(10, 10), "replayer kept"),
        (_meta(missed=101), _figures(10, 10), "missed"),
        (_meta(), _figures(10, 90), "grew"),
        (_meta(), _figures(10, 10, p99_us=1_000.5), "p99 latency from intended"),
        (_meta(), _figures(10, 10, failed=True), "the run failed"),
        (_meta(), _figures(10, 10, replayer_status=True, replayer_fraction=0.999), "replayer kept 99.9000%"),
    ],
)
def test_each_criterion_alone_makes_a_rate_unsustainable(meta: dict, figures: dict, why: str) -> None:
    v = judge_run(meta, figures, [], RULE)
    assert v["sustainable"] is False and why in v["reasons"], v["reasons"]


def test_the_replayers_own_share_of_its_schedule_counts_over_the_packet_rates() -> None:
    # The feed senders' status says the schedule was kept: a packet rate below the target
    # (a capture's bursts cut mid-lap) does not make the run unsustainable.
    kept = _figures(10, 10, replayer_status=True, replayer_fraction=1.0)
    assert judge_run(_meta(achieved=20_000), kept, [], RULE)["sustainable"] is True


def test_the_boundaries_are_inclusive() -> None:
    at_bounds = _figures(1, 1, p99_us=1_000.0, replayer_status=True, replayer_fraction=0.9999)
    assert judge_run(_meta(missed=100), at_bounds, [], RULE)["sustainable"] is True


def test_growth_allows_50_us_or_half_the_first_median() -> None:
    # Three times slower but only 2 us more: jitter on a fast run, not a queue building up.
    assert judge_run(_meta(), _figures(1, 3), [], RULE)["latency_growing"] is False
    # 60 us more but only half again: not growing either.
    assert judge_run(_meta(), _figures(120, 180), [], RULE)["latency_growing"] is False
    assert judge_run(_meta(), _figures(120, 181), [], RULE)["latency_growing"] is True
    assert judge_run(_meta(), _figures(30, 90), [], RULE)["latency_growing"] is True


def test_too_few_samples_make_it_unknown_never_yes() -> None:
    few = _figures(None, None, n=MIN_GROWTH_SAMPLES - 1)
    v = judge_run(_meta(), few, [], RULE)
    assert v["sustainable"] is None and v["latency_growing"] is None and "too few samples (29)" in v["reasons"]
    assert judge_run(_meta(), None, [], RULE)["sustainable"] is None


def test_messages_come_from_the_ingest_counters_when_the_meta_has_none() -> None:
    ingest = [{"line": 1, "messages_received": 9_000, "messages_missed": 0},
              {"line": 2, "messages_received": 9_000, "messages_missed": 1_000}]
    v = judge_run(_meta(sent=0), _figures(10, 10), ingest, RULE)
    assert v["sustainable"] is False and "missed 5.2632%" in v["reasons"]


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


def test_growth_compares_the_first_and_last_third_in_arrival_order() -> None:
    t0 = 1_202_135_400_000_000_000  # epoch ns: past 2**53
    intended = t0 + np.arange(300, dtype=np.int64) * 1_000_000
    latency = np.where(np.arange(300) < 100, 10_000, 0) + np.where(np.arange(300) >= 200, 500_000, 0)
    latency = latency + np.arange(300) % 3
    mc_in = intended + latency
    mc_in[5] = 0  # not stamped: left out
    g = latency_growth(intended, mc_in)
    kept = np.arange(300) != 5
    order = np.argsort(mc_in[kept], kind="stable")
    lat_us = (latency[kept] / 1e3)[order]
    assert g.samples == 299
    assert g.first_us == float(np.median(lat_us[:99])) and g.last_us == float(np.median(lat_us[-99:]))
    assert g.growing is True
