"""Compare tonight's latency with earlier nights and flag regressions.

For each (topology, config, rate, hop) the night's value of a metric (``mean_ns``,
``p99_ns``) is the median over that night's runs; the baseline is the most recent earlier
night within the look-back that has the same key. A regression is flagged when tonight is
more than ``threshold`` above the baseline (relative) AND more than ``min_delta_ns`` above it
(absolute, so nanosecond jitter on a sub-microsecond hop never fails a night). A sweep's
sustainable rate (per topology and config) regresses when it falls more than ``threshold``
below the baseline's; a sweep that sustained nothing counts as rate 0.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ops.spark.report_schemas import LATENCY_REGRESSIONS, conform


@dataclass(frozen=True)
class RegressionRule:
    """When a change against the baseline night is a regression."""

    threshold: float = 0.20
    min_delta_ns: float = 1_000.0
    lookback_nights: int = 7
    metrics: tuple[str, ...] = ("mean_ns", "p99_ns")


_LAT_KEY = ["topology", "config", "rate_key", "hop"]
_RATE_KEY = ["topology", "config"]


def _latest_baseline(history: DataFrame, key: list[str]) -> DataFrame:
    newest = Window.partitionBy(*key).orderBy(F.col("date").desc())
    return history.withColumn("_rank", F.row_number().over(newest)).where("_rank = 1").drop("_rank")


def _nightly_medians(breakdown: DataFrame, metrics: tuple[str, ...]) -> DataFrame:
    return breakdown.withColumn("rate_key", F.round("rate_x", 3)).groupBy("date", *_LAT_KEY).agg(
        *[F.median(m).alias(m) for m in metrics]
    )


def compare_latency(today: DataFrame, history: DataFrame, rule: RegressionRule) -> DataFrame:
    """Rows of the regressions table for every (key, metric) that has a baseline."""
    now = _nightly_medians(today, rule.metrics)
    base = _latest_baseline(_nightly_medians(history, rule.metrics), _LAT_KEY)
    base = base.select(*_LAT_KEY, F.col("date").alias("baseline_date"), *[F.col(m).alias(f"b_{m}") for m in rule.metrics])
    joined = now.join(base, _LAT_KEY, "inner")
    frames = []
    for m in rule.metrics:
        value, baseline = F.col(m), F.col(f"b_{m}")
        frames.append(
            joined.select(
                "date",
                F.lit("latency").alias("kind"),
                "topology",
                "config",
                F.col("rate_key").alias("rate_x"),
                "hop",
                F.lit(m).alias("metric"),
                value.alias("value"),
                "baseline_date",
                baseline.alias("baseline_value"),
                F.when(baseline > 0, value / baseline - 1).alias("change_ratio"),
                F.lit(rule.threshold).alias("threshold"),
                F.coalesce(
                    (value > baseline * (1 + rule.threshold)) & (value - baseline > rule.min_delta_ns), F.lit(False)
                ).alias("flagged"),
            )
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return conform(out, LATENCY_REGRESSIONS)


def _nightly_sustainable(sweeps: DataFrame) -> DataFrame:
    return sweeps.groupBy("date", *_RATE_KEY).agg(
        F.max(F.coalesce("max_sustainable_rate_x", F.lit(0.0))).alias("rate")
    )


def compare_sustainable_rate(today: DataFrame, history: DataFrame, rule: RegressionRule) -> DataFrame:
    """Rows of the regressions table for every (topology, config) sweep with a baseline."""
    now = _nightly_sustainable(today)
    base = _latest_baseline(_nightly_sustainable(history), _RATE_KEY).select(
        *_RATE_KEY, F.col("date").alias("baseline_date"), F.col("rate").alias("baseline_value")
    )
    value, baseline = F.col("rate"), F.col("baseline_value")
    out = now.join(base, _RATE_KEY, "inner").select(
        "date",
        F.lit("sustainable_rate").alias("kind"),
        "topology",
        "config",
        F.lit(None).cast("double").alias("rate_x"),
        F.lit(None).cast("string").alias("hop"),
        F.lit("max_sustainable_rate_x").alias("metric"),
        value.alias("value"),
        "baseline_date",
        "baseline_value",
        F.when(baseline > 0, value / baseline - 1).alias("change_ratio"),
        F.lit(rule.threshold).alias("threshold"),
        F.coalesce(value < baseline * (1 - rule.threshold), F.lit(False)).alias("flagged"),
    )
    return conform(out, LATENCY_REGRESSIONS)
