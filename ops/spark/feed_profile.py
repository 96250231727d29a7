"""What a day of the feed looks like, from its tick table: the rate profile per line and in
total over 1 s, 100 ms and 10 ms windows (OPRA plans capacity on the 100 ms and 10 ms peaks),
the per-second series, messages per packet, the category mix and the top underlyings.

A packet is counted once, on its first message (``msg_index`` 0). The rate profile is
derived from one 10 ms aggregate per line (the ticks are scanned once for it), and all window
sizes are aggregated together. Means are over the active span (first to last non-empty
window, empty windows included), peaks are the busiest window, both scaled to per second.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ONE_X_PPS = 24_000.0
"""The paper's unit: 1x = 24,000 packets/s summed over all lines (DESIGN.md)."""

WINDOWS_MS: tuple[int, ...] = (1_000, 100, 10)
_BASE_NS = 10_000_000

CATEGORY_NAMES = {
    "a": "last sale",
    "k": "quote",
    "d": "open interest",
    "f": "end of day summary",
    "Y": "underlying value",
    "C": "administrative",
    "H": "control",
    "?": "unknown",
}


def ten_ms_counts(ticks: DataFrame) -> DataFrame:
    """``line, w10 (window start ns), packets, messages, bytes, first_ns, last_ns`` per line
    and 10 ms window."""
    first = F.col("msg_index") == 0
    return ticks.groupBy("line", (F.floor(F.col("ts_ns") / _BASE_NS) * _BASE_NS).cast("long").alias("w10")).agg(
        F.sum(first.cast("long")).alias("packets"),
        F.count(F.lit(1)).alias("messages"),
        F.sum(F.when(first, F.col("packet_bytes")).otherwise(0).cast("long")).alias("bytes"),
        F.min("ts_ns").alias("first_ns"),
        F.max("ts_ns").alias("last_ns"),
    )


def rate_windows(base: DataFrame) -> DataFrame:
    """``line, window_ms, w (window start ns), packets, messages, bytes`` for every window size
    of WINDOWS_MS, per line and (line null) over all lines, from the 10 ms counts."""
    keys = F.array(
        *[
            F.struct(F.lit(ms).alias("window_ms"), (F.floor(F.col("w10") / (ms * 1_000_000)) * (ms * 1_000_000)).cast("long").alias("w"))
            for ms in WINDOWS_MS
        ]
    )
    sums = [F.sum(c).alias(c) for c in ("packets", "messages", "bytes")]
    exploded = base.select("line", F.explode(keys).alias("k"), "packets", "messages", "bytes")
    per_line = exploded.groupBy("line", "k.window_ms", "k.w").agg(*sums)
    total = per_line.groupBy("window_ms", "w").agg(*sums).withColumn("line", F.lit(None).cast("int"))
    return per_line.unionByName(total)


def rate_profile(windows: DataFrame, date: str) -> DataFrame:
    """The FEEDS_RATE_PROFILE rows: per line (and null = all lines) and window size, the
    mean and peak packets/s and messages/s."""
    width = F.col("window_ms") * 1_000_000
    per_s = 1_000.0 / F.col("window_ms")
    stats = windows.groupBy("line", "window_ms").agg(
        ((F.max("w") - F.min("w")) / F.first(width) + 1).cast("long").alias("windows"),
        F.sum("packets").alias("packets"),
        F.sum("messages").alias("messages"),
        F.max("packets").alias("max_packets"),
        F.max("messages").alias("max_messages"),
        F.max_by(F.col("w"), F.col("messages")).alias("peak_mps_at_ns"),
    )
    return stats.select(
        F.lit(date).alias("date"),
        "line",
        "window_ms",
        "windows",
        (F.col("packets") * per_s / F.col("windows")).alias("mean_pps"),
        (F.col("max_packets") * per_s).alias("peak_pps"),
        (F.col("messages") * per_s / F.col("windows")).alias("mean_mps"),
        (F.col("max_messages") * per_s).alias("peak_mps"),
        "peak_mps_at_ns",
    )


def rate_per_second(windows: DataFrame, date: str) -> DataFrame:
    """The FEEDS_RATE_PER_SECOND rows: packets, messages and bytes per line (and in total)
    per second of capture time."""
    return windows.where(F.col("window_ms") == 1_000).select(
        F.lit(date).alias("date"), "line", F.col("w").alias("second_ns"), "packets", "messages", "bytes"
    )


def messages_per_packet(ticks: DataFrame, date: str) -> DataFrame:
    """The FEEDS_MESSAGES_PER_PACKET histogram per line and in total."""
    per_line = ticks.where(F.col("msg_index") == 0).groupBy("line", "packet_messages").agg(F.count(F.lit(1)).alias("packets"))
    total = per_line.groupBy("packet_messages").agg(F.sum("packets").alias("packets")).withColumn("line", F.lit(None).cast("int"))
    return per_line.unionByName(total).select(
        F.lit(date).alias("date"), "line", F.col("packet_messages").alias("messages_per_packet"), "packets"
    )


def category_mix(ticks: DataFrame, date: str) -> DataFrame:
    """The FEEDS_CATEGORY_MIX rows: messages per category and their share of the day."""
    counts = ticks.groupBy("category").agg(F.count(F.lit(1)).alias("messages"))
    total = counts.agg(F.sum("messages").alias("total"))
    names = F.create_map(*[x for k, v in CATEGORY_NAMES.items() for x in (F.lit(k), F.lit(v))])
    return counts.crossJoin(total).select(
        F.lit(date).alias("date"),
        "category",
        F.coalesce(names[F.col("category")], F.lit("other")).alias("category_name"),
        "messages",
        (F.col("messages") / F.col("total")).alias("share"),
    )


def top_underlyings(ticks: DataFrame, date: str, n: int) -> DataFrame:
    """The FEEDS_TOP_UNDERLYINGS rows: the ``n`` underlyings with the most messages (roots
    the manifest maps to no underlying are left out). Ties rank by name."""
    counts = (
        ticks.where(F.col("underlying").isNotNull())
        .groupBy("underlying")
        .agg(
            F.count(F.lit(1)).alias("messages"),
            F.sum((F.col("category") == "k").cast("long")).alias("quotes"),
            F.sum((F.col("category") == "a").cast("long")).alias("last_sales"),
        )
        .cache()
    )
    total = counts.agg(F.sum("messages")).first()[0] or 0
    top = counts.orderBy(F.col("messages").desc(), F.col("underlying")).limit(n).collect()
    counts.unpersist()
    rows = [
        (date, rank, r["underlying"], r["messages"], r["quotes"], r["last_sales"], r["messages"] / total)
        for rank, r in enumerate(top, start=1)
    ]
    return ticks.sparkSession.createDataFrame(
        rows, "date string, rank int, underlying string, messages long, quotes long, last_sales long, share double"
    )
