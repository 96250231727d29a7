"""Is a run's rate sustainable, and how far does each sweep go (the paper's Figures 5, 8)?

DESIGN.md: a rate is sustainable when the replayer achieves >= 99.99% of the target
packets/s, missed messages are <= 0.01%, and latency from ``intended`` does not grow over
the run. "Grows" is made concrete here: split the run's samples into quarters by their
``intended`` time; latency is growing when the median end-to-end-from-intended latency of
the last quarter exceeds ``growth_factor`` times that of the first quarter AND the two differ
by more than ``growth_floor_ns`` (so sub-microsecond jitter on a fast run never counts).
With fewer than ``min_quarter_samples`` in either quarter it cannot be told (null), and so
neither can sustainability unless another criterion already failed.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


@dataclass(frozen=True)
class SustainabilityRule:
    """The thresholds of "sustainable" (defaults: DESIGN.md and the growth rule above)."""

    min_achieved_ratio: float = 0.9999
    max_missed_ratio: float = 0.0001
    growth_factor: float = 2.0
    growth_floor_ns: float = 50_000.0
    min_quarter_samples: int = 20


def latency_growth(samples: DataFrame) -> DataFrame:
    """``run_dir, first_quarter_p50_ns, last_quarter_p50_ns, first_quarter_n, last_quarter_n``
    of the end-to-end-from-intended latency."""
    valid = samples.where((F.col("intended") > 0) & (F.col("mc_in") > 0))
    run = Window.partitionBy("run_dir")
    span = valid.select(
        "run_dir",
        "intended",
        (F.col("mc_in") - F.col("intended")).alias("lat"),
        F.min("intended").over(run).alias("t0"),
        F.max("intended").over(run).alias("t1"),
    )
    quarter = F.floor(4 * (F.col("intended") - F.col("t0")) / (F.col("t1") - F.col("t0") + 1))
    per_q = (
        span.select("run_dir", quarter.alias("q"), "lat")
        .where(F.col("q").isin(0, 3))
        .groupBy("run_dir")
        .agg(
            F.percentile(F.when(F.col("q") == 0, F.col("lat")), 0.5).alias("first_quarter_p50_ns"),
            F.percentile(F.when(F.col("q") == 3, F.col("lat")), 0.5).alias("last_quarter_p50_ns"),
            F.count(F.when(F.col("q") == 0, 1)).alias("first_quarter_n"),
            F.count(F.when(F.col("q") == 3, 1)).alias("last_quarter_n"),
        )
    )
    return per_q


def judge_runs(runs: DataFrame, rule: SustainabilityRule) -> DataFrame:
    """Add ``achieved_ratio, missed_ratio, growth_ratio, latency_growing, sustainable`` to a
    frame holding the run's meta columns and ``latency_growth`` columns. Spark's three-valued
    logic gives the wanted nulls: one failed criterion is enough for False."""
    first, last = F.col("first_quarter_p50_ns"), F.col("last_quarter_p50_ns")
    enough = (F.col("first_quarter_n") >= rule.min_quarter_samples) & (F.col("last_quarter_n") >= rule.min_quarter_samples)
    growing = F.when(enough, (last > rule.growth_factor * first) & (last - first > rule.growth_floor_ns))
    achieved = F.when(F.col("target_pps") > 0, F.col("achieved_pps") / F.col("target_pps"))
    missed = F.when(F.col("messages_sent") > 0, F.col("messages_missed") / F.col("messages_sent"))
    return runs.select(
        "*",
        achieved.alias("achieved_ratio"),
        missed.alias("missed_ratio"),
        F.when(first > 0, last / first).alias("growth_ratio"),
        growing.alias("latency_growing"),
    ).withColumn(
        "sustainable",
        (F.col("achieved_ratio") >= rule.min_achieved_ratio)
        & (F.col("missed_ratio") <= rule.max_missed_ratio)
        & ~F.col("latency_growing"),
    )


def sweep_summary(runs: DataFrame) -> DataFrame:
    """Per ``sweep_id`` (runs outside a sweep left out): the rates tried, the lowest rate not
    sustained, and the highest rate sustained below it - the sweep's sustainable rate. A rate
    tried more than once is sustained only if every try was."""
    per_rate = (
        runs.where(F.col("sweep_id") != "")
        .groupBy("date", "sweep_id", "topology", "config", "rate_x")
        .agg(F.count(F.lit(1)).alias("n"), F.min(F.col("sustainable").cast("int")).alias("ok"))
    )
    first_bad = F.min(F.when(F.col("ok") == 0, F.col("rate_x"))).over(Window.partitionBy("sweep_id"))
    marked = per_rate.withColumn("first_bad", first_bad)
    below = (F.col("ok") == 1) & (F.col("first_bad").isNull() | (F.col("rate_x") < F.col("first_bad")))
    return marked.groupBy("date", "sweep_id", "topology", "config").agg(
        F.sum("n").alias("runs"),
        F.min("rate_x").alias("min_rate_x"),
        F.max("rate_x").alias("max_rate_x"),
        F.min("first_bad").alias("first_unsustainable_rate_x"),
        F.max(F.when(below, F.col("rate_x"))).alias("max_sustainable_rate_x"),
    )
