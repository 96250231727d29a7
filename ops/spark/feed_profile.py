"""What a day of the feed looks like, from its tick table: the rate profile per line and in
total over 1 s, 100 ms and 10 ms windows (OPRA plans capacity on the 100 ms and 10 ms peaks),
the per-second series, messages per packet, the category mix and the top underlyings.

A packet is counted once, on its first message (``msg_index`` 0). Everything is derived
from one 10 ms aggregate per line, so the ticks are scanned once for the rate profile. Means
are over the active span (first to last non-empty window, empty windows included).
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


def _with_total(counts: DataFrame, key: str) -> DataFrame:
    total = counts.groupBy(key).agg(*[F.sum(c).alias(c) for c in ("packets", "messages", "bytes")])
    return counts.unionByName(total.withColumn("line", F.lit(None).cast("int")))


def _windowed(base: DataFrame, window_ms: int) -> DataFrame:
    width = window_ms * 1_000_000
    w = (F.floor(F.col("w10") / width) * width).cast("long").alias("w")
    return base.groupBy("line", w).agg(*[F.sum(c).alias(c) for c in ("packets", "messages", "bytes")])


def rate_profile(base: DataFrame, date: str) -> DataFrame:
    """The FEEDS_RATE_PROFILE rows: per line (and null = all lines) and window size, the
    mean and peak packets/s and messages/s."""
    frames = []
    for window_ms in WINDOWS_MS:
        width = window_ms * 1_000_000
        per_s = 1_000.0 / window_ms
        win = _with_total(_windowed(base, window_ms), "w")
        peak_at = F.max_by(F.col("w"), F.col("messages"))
        frames.append(
            win.groupBy("line").agg(
                ((F.max("w") - F.min("w")) / width + 1).cast("long").alias("windows"),
                F.sum("packets").alias("packets"),
                F.sum("messages").alias("messages"),
                (F.max("packets") * per_s).alias("peak_pps"),
                (F.max("messages") * per_s).alias("peak_mps"),
                peak_at.alias("peak_mps_at_ns"),
            ).select(
                F.lit(date).alias("date"),
                "line",
                F.lit(window_ms).alias("window_ms"),
                "windows",
                (F.col("packets") * per_s / F.col("windows")).alias("mean_pps"),
                "peak_pps",
                (F.col("messages") * per_s / F.col("windows")).alias("mean_mps"),
                "peak_mps",
                "peak_mps_at_ns",
            )
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def rate_per_second(base: DataFrame, date: str) -> DataFrame:
    """The FEEDS_RATE_PER_SECOND rows: packets, messages and bytes per line (and in total)
    per second of capture time."""
    per_s = _with_total(_windowed(base, 1_000), "w")
    return per_s.select(F.lit(date).alias("date"), "line", F.col("w").alias("second_ns"), "packets", "messages", "bytes")


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
