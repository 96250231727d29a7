"""Per run and per hop latency statistics: count, mean, p50..p99.99, min, max - exact.

Percentiles are Spark's ``percentile`` (exact, linear interpolation between the two nearest
ranks, as numpy's default), never ``approx_percentile``. A sample whose two stamps are not
both set (0 = not stamped) does not count for that hop.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ops.spark.latency_hops import HOP_ORDER, PERCENTILES, SAMPLE_HOPS, SEND_LAG_HOP, Hop


def _hop_latency(hop: Hop) -> F.Column:
    start, end = F.col(hop.start), F.col(hop.end)
    return F.when((start > 0) & (end > 0), end - start)


def _long(df: DataFrame, hops: tuple[Hop, ...]) -> DataFrame:
    pairs = F.array(*[F.struct(F.lit(h.name).alias("hop"), _hop_latency(h).alias("latency_ns")) for h in hops])
    return df.select("run_dir", F.explode(pairs).alias("x")).select("run_dir", "x.hop", "x.latency_ns")


def hop_latencies(samples: DataFrame, intended: DataFrame) -> DataFrame:
    """Long format ``run_dir, hop, latency_ns``: one row per sample and hop (null latency
    where a stamp is missing), plus one per packet copy sent for the replayer's send lag."""
    return _long(samples, SAMPLE_HOPS).unionByName(_long(intended, (SEND_LAG_HOP,)))


def breakdown(latencies: DataFrame) -> DataFrame:
    """``run_dir, hop, hop_order, rows, count, mean_ns, p50_ns .. p9999_ns, min_ns, max_ns``.

    ``rows`` counts every record read (for reconciling with the file footers), ``count``
    those with a latency. A percentile with fewer than its ``min_samples`` is null (n/a).
    """
    lat = F.col("latency_ns")
    stats = latencies.groupBy("run_dir", "hop").agg(
        F.count(F.lit(1)).alias("rows"),
        F.count(lat).alias("count"),
        F.avg(lat).alias("mean_ns"),
        F.percentile(lat, [p.p for p in PERCENTILES]).alias("pcts"),
        F.min(lat).alias("min_ns"),
        F.max(lat).alias("max_ns"),
    )
    order = F.create_map(*[x for name, i in HOP_ORDER.items() for x in (F.lit(name), F.lit(i))])
    return stats.select(
        "run_dir",
        "hop",
        order[F.col("hop")].alias("hop_order"),
        "rows",
        "count",
        "mean_ns",
        *[F.when(F.col("count") >= p.min_samples, F.col("pcts")[i]).alias(p.name) for i, p in enumerate(PERCENTILES)],
        "min_ns",
        "max_ns",
    )
