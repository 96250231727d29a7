"""Compare tonight's latency with earlier nights and flag regressions.

For each (topology, config, rate, hop) the night's value of a metric (``mean_ns``,
``p99_ns``) is the median over that night's runs; the baseline is the most recent earlier
night within the look-back that has the same key. A regression is flagged when tonight is
more than ``threshold`` above the baseline (relative) AND more than ``min_delta_ns`` above it
(absolute, so nanosecond jitter on a sub-microsecond hop never fails a night). A sweep's
sustainable rate (per topology and config) regresses when it falls more than ``threshold``
below the baseline's; a sweep that sustained nothing counts as rate 0.

The inputs are the nights' summary tables (one row per run and hop): small, compared on the
driver.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class RegressionRule:
    """When a change against the baseline night is a regression."""

    threshold: float = 0.20
    min_delta_ns: float = 1_000.0
    lookback_nights: int = 7
    metrics: tuple[str, ...] = ("mean_ns", "p99_ns")


def _lat_key(r: dict) -> tuple:
    return (r["topology"], r["config"], round(r["rate_x"], 3), r["hop"])


def _nightly_medians(rows: list[dict], metrics: tuple[str, ...]) -> dict[tuple, dict[str, float | None]]:
    """{(date, key): {metric: median over the night's runs}}."""
    values: dict[tuple, dict[str, list[float]]] = {}
    for r in rows:
        slot = values.setdefault((r["date"], _lat_key(r)), {m: [] for m in metrics})
        for m in metrics:
            if r[m] is not None:
                slot[m].append(r[m])
    return {k: {m: statistics.median(v) if v else None for m, v in ms.items()} for k, ms in values.items()}


def _latest(history: dict[tuple, object]) -> dict[tuple, tuple[str, object]]:
    """{key: (date, value)} of the most recent night holding each key."""
    out: dict[tuple, tuple[str, object]] = {}
    for (date, key), value in history.items():
        if key not in out or date > out[key][0]:
            out[key] = (date, value)
    return out


def _row(date: str, kind: str, key: dict, metric: str, value, base_date: str, base, threshold: float, flagged: bool) -> dict:
    return {
        "date": date,
        "kind": kind,
        **key,
        "metric": metric,
        "value": value,
        "baseline_date": base_date,
        "baseline_value": base,
        "change_ratio": value / base - 1 if value is not None and base else None,
        "threshold": threshold,
        "flagged": flagged,
    }


def compare_latency(date: str, today: list[dict], history: list[dict], rule: RegressionRule) -> list[dict]:
    """Rows of the regressions table for every (key, metric) that has a baseline night."""
    now = _nightly_medians(today, rule.metrics)
    base = _latest(_nightly_medians(history, rule.metrics))
    out = []
    for (_, key), values in sorted(now.items()):
        if key not in base:
            continue
        base_date, base_values = base[key]
        topology, config, rate_x, hop = key
        for m in rule.metrics:
            v, b = values[m], base_values[m]
            flagged = v is not None and b is not None and v > b * (1 + rule.threshold) and v - b > rule.min_delta_ns
            out.append(
                _row(date, "latency", {"topology": topology, "config": config, "rate_x": rate_x, "hop": hop},
                     m, v, base_date, b, rule.threshold, flagged)
            )
    return out


def _nightly_sustainable(sweeps: list[dict]) -> dict[tuple, float]:
    out: dict[tuple, float] = {}
    for s in sweeps:
        k = (s["date"], (s["topology"], s["config"]))
        out[k] = max(out.get(k, 0.0), s["max_sustainable_rate_x"] or 0.0)
    return out


def compare_sustainable_rate(date: str, today: list[dict], history: list[dict], rule: RegressionRule) -> list[dict]:
    """Rows of the regressions table for every (topology, config) sweep with a baseline."""
    now = _nightly_sustainable(today)
    base = _latest(_nightly_sustainable(history))
    out = []
    for (_, key), v in sorted(now.items()):
        if key not in base:
            continue
        base_date, b = base[key]
        out.append(
            _row(date, "sustainable_rate", {"topology": key[0], "config": key[1], "rate_x": None, "hop": None},
                 "max_sustainable_rate_x", v, base_date, b, rule.threshold, v < b * (1 - rule.threshold))
        )
    return out
