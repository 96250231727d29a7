"""Regression flags of the nightly latency job: tonight against the most recent earlier
night with the same topology, config, rate and hop; relative threshold AND absolute floor."""
from __future__ import annotations

import pytest

from ops.spark.latency.regression_check import RegressionRule, compare_latency, compare_sustainable_rate

RULE = RegressionRule(threshold=0.20, min_delta_ns=1_000.0)


def _row(date: str, hop: str, mean: float, p99: float | None, run: str = "r1", rate: float = 1.0, config: str = "fused") -> dict:
    return {"date": date, "run_id": run, "topology": "t.toml", "config": config, "rate_x": rate, "hop": hop,
            "mean_ns": mean, "p99_ns": p99}


def _flags(rows: list[dict]) -> dict[tuple, bool]:
    return {(r["hop"], r["metric"]): r["flagged"] for r in rows}


def test_flags_need_both_the_relative_and_the_absolute_change() -> None:
    history = [_row("2026-03-01", "fh", 10_000, 20_000), _row("2026-03-01", "to_de", 400, 900)]
    today = [_row("2026-03-02", "fh", 12_500, 23_000), _row("2026-03-02", "to_de", 800, 1_900)]
    flags = _flags(compare_latency("2026-03-02", today, history, RULE))
    assert flags[("fh", "mean_ns")] is True  # +25%, +2.5 us
    assert flags[("fh", "p99_ns")] is False  # +15%
    assert flags[("to_de", "mean_ns")] is False  # +100% but only 400 ns
    assert flags[("to_de", "p99_ns")] is False  # +111% but exactly 1,000 ns: not more than the floor


def test_baseline_is_the_most_recent_night_with_the_key_and_runs_take_the_median() -> None:
    history = [
        _row("2026-02-27", "fh", 5_000, None),
        _row("2026-02-28", "fh", 10_000, None),
        _row("2026-02-28", "fh", 11_000, None, run="r2"),
        _row("2026-02-28", "fh", 30_000, None, run="r3"),
        _row("2026-03-01", "fh", 1_000, None, config="vega-shm"),
    ]
    today = [_row("2026-03-02", "fh", 11_000, None), _row("2026-03-02", "fh", 16_000, None, run="r2")]
    (mean, p99) = compare_latency("2026-03-02", today, history, RULE)
    assert mean["baseline_date"] == "2026-02-28" and mean["baseline_value"] == 11_000
    assert mean["value"] == 13_500 and mean["change_ratio"] == pytest.approx(13_500 / 11_000 - 1)
    assert mean["flagged"] is True
    assert p99["value"] is None and p99["flagged"] is False  # n/a both nights: nothing to compare


def test_keys_without_a_baseline_are_not_compared() -> None:
    today = [_row("2026-03-02", "fh", 10_000, None, rate=2.0)]
    assert compare_latency("2026-03-02", today, [_row("2026-03-01", "fh", 1, None)], RULE) == []


def _sweep(date: str, rate: float | None) -> dict:
    return {"date": date, "topology": "t.toml", "config": "fused", "max_sustainable_rate_x": rate}


def test_sustainable_rate_regresses_when_it_drops_beyond_the_threshold() -> None:
    (r,) = compare_sustainable_rate("2026-03-02", [_sweep("2026-03-02", 4.0)], [_sweep("2026-03-01", 8.0)], RULE)
    assert r["flagged"] is True and r["change_ratio"] == -0.5
    (r,) = compare_sustainable_rate("2026-03-02", [_sweep("2026-03-02", 7.0)], [_sweep("2026-03-01", 8.0)], RULE)
    assert r["flagged"] is False
    (r,) = compare_sustainable_rate("2026-03-02", [_sweep("2026-03-02", None)], [_sweep("2026-03-01", 2.0)], RULE)
    assert r["value"] == 0.0 and r["flagged"] is True
