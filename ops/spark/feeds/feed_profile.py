"""What a day of the feed looks like: the rate profile per line and in total over 1 s,
100 ms and 10 ms windows (OPRA plans capacity on the 100 ms and 10 ms peaks), the
per-second series, messages per packet, the category mix and the top underlyings.

The decode tasks count them from the batches they write (``ops.spark.feeds.feed_tally``; a packet
is counted once, on its first message): the 10 ms windows of each capture file into the
tick-windows table, which Spark aggregates here into every window size, per line and in
total; the histogram and the (underlying, category) counts come back with the tasks and are
finished on the driver.

- A mean rate is the count over the span: last packet time minus the first (as ``omdp
  capture stats`` computes it), so it does not depend on the window size.
- A peak is the busiest window, scaled to per second. Windows are tumbling, aligned to whole
  multiples of their size since the epoch: the busiest aligned window can hold fewer packets
  than the busiest sliding window of ``omdp capture stats`` (never fewer than half of it).
- Window starts are computed in int64: epoch nanoseconds do not survive a double division.
"""
from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

ONE_X_PPS = 24_000.0
"""The paper's unit: 1x = 24,000 packets/s summed over all lines (docs/architecture.md)."""

WINDOWS_MS: tuple[int, ...] = (1_000, 100, 10)

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


def window_start(ts_ns: Column, width_ns: int) -> Column:
    """The start of the ``width_ns`` window holding ``ts_ns``, in int64 arithmetic: a double
    division would round epoch nanoseconds (~1.2e18, past 2**53) into the wrong window."""
    return ts_ns - F.pmod(ts_ns, F.lit(width_ns).cast("long"))


TICK_WINDOWS_READ_SCHEMA = T.StructType(
    [T.StructField(n, T.LongType(), True) for n in ("w10", "packets", "messages", "bytes", "first_ns", "last_ns")]
    + [T.StructField("line", T.IntegerType(), True)]
)
"""The tick-windows table as Spark reads one date of it (``ops.spark.feeds.feed_tally``'s
TICK_WINDOWS_SCHEMA and the ``line`` partition): ``line, w10`` may repeat, once per
capture file of the line holding ticks of that window."""


def rate_windows(base: DataFrame) -> DataFrame:
    """``line, window_ms, w (window start ns), packets, messages, bytes, first_ns, last_ns``
    for every window size of WINDOWS_MS, per line and (line null) over all lines, from the
    10 ms counts ``base`` (TICK_WINDOWS_READ_SCHEMA; a line's files' rows are summed)."""
    keys = F.array(
        *[F.struct(F.lit(ms).alias("window_ms"), window_start(F.col("w10"), ms * 1_000_000).alias("w")) for ms in WINDOWS_MS]
    )
    aggs = [F.sum(c).alias(c) for c in ("packets", "messages", "bytes")] + [
        F.min("first_ns").alias("first_ns"),
        F.max("last_ns").alias("last_ns"),
    ]
    exploded = base.select("line", F.explode(keys).alias("k"), "packets", "messages", "bytes", "first_ns", "last_ns")
    per_line = exploded.groupBy("line", "k.window_ms", "k.w").agg(*aggs)
    total = per_line.groupBy("window_ms", "w").agg(*aggs).withColumn("line", F.lit(None).cast("int"))
    return per_line.unionByName(total)


def rate_profile(windows: DataFrame, date: str) -> DataFrame:
    """The FEEDS_RATE_PROFILE rows - per line (and null = all lines) and window size, the
    mean and peak packets/s and messages/s - plus the span's ``packets, messages, bytes,
    first_ns, last_ns`` for the day summary."""
    per_s = 1_000.0 / F.col("window_ms")
    span_s = F.when(F.col("last_ns") > F.col("first_ns"), (F.col("last_ns") - F.col("first_ns")) / 1e9)
    stats = windows.groupBy("line", "window_ms").agg(
        ((F.max("w") - F.min("w")) / F.first(F.col("window_ms") * 1_000_000) + 1).cast("long").alias("windows"),
        F.sum("packets").alias("packets"),
        F.sum("messages").alias("messages"),
        F.sum("bytes").alias("bytes"),
        F.min("first_ns").alias("first_ns"),
        F.max("last_ns").alias("last_ns"),
        F.max("packets").alias("max_packets"),
        F.max("messages").alias("max_messages"),
        F.max_by(F.col("w"), F.col("messages")).alias("peak_mps_at_ns"),
    )
    return stats.select(
        F.lit(date).alias("date"),
        "line",
        "window_ms",
        "windows",
        (F.col("packets") / span_s).alias("mean_pps"),
        (F.col("max_packets") * per_s).alias("peak_pps"),
        (F.col("messages") / span_s).alias("mean_mps"),
        (F.col("max_messages") * per_s).alias("peak_mps"),
        "peak_mps_at_ns",
        "packets",
        "messages",
        "bytes",
        "first_ns",
        "last_ns",
    )


def rate_per_second(windows: DataFrame, date: str) -> DataFrame:
    """The FEEDS_RATE_PER_SECOND rows: packets, messages and bytes per line (and in total)
    per second of capture time."""
    return windows.where(F.col("window_ms") == 1_000).select(
        F.lit(date).alias("date"), "line", F.col("w").alias("second_ns"), "packets", "messages", "bytes"
    )


def messages_per_packet(counts: Mapping[tuple[int, int], int], date: str) -> list[dict]:
    """The FEEDS_MESSAGES_PER_PACKET histogram per line and (line None) in total, from
    packets per (line, messages in the packet)."""
    total: dict[int, int] = {}
    for (_, k), n in counts.items():
        total[k] = total.get(k, 0) + n
    rows = [{"line": line, "messages_per_packet": k, "packets": n} for (line, k), n in counts.items()]
    rows += [{"line": None, "messages_per_packet": k, "packets": n} for k, n in total.items()]
    rows.sort(key=lambda r: (r["line"] is not None, r["line"] or 0, r["messages_per_packet"]))
    return [{"date": date, **r} for r in rows]


def category_mix(counts: Mapping[tuple[str | None, str | None], int], date: str) -> list[dict]:
    """The FEEDS_CATEGORY_MIX rows from messages per (underlying, category): messages per
    category and their share of the day."""
    per_cat: dict[str | None, int] = {}
    for (_, c), m in counts.items():
        per_cat[c] = per_cat.get(c, 0) + m
    total = sum(per_cat.values())
    return [
        {"date": date, "category": c, "category_name": CATEGORY_NAMES.get(c, "other"), "messages": m, "share": m / total}
        for c, m in sorted(per_cat.items(), key=lambda kv: (-kv[1], kv[0] or ""))
    ]


def top_underlyings(counts: Mapping[tuple[str | None, str | None], int], date: str, n: int) -> list[dict]:
    """The FEEDS_TOP_UNDERLYINGS rows from messages per (underlying, category): the ``n``
    underlyings with the most messages (roots the manifest maps to no underlying are left
    out). Ties rank by name."""
    per: dict[str, dict[str, int]] = {}
    for (name, category), m in counts.items():
        if name is None:
            continue
        u = per.setdefault(name, {"messages": 0, "quotes": 0, "last_sales": 0})
        u["messages"] += m
        u["quotes"] += m if category == "k" else 0
        u["last_sales"] += m if category == "a" else 0
    total = sum(u["messages"] for u in per.values())
    ranked = sorted(per.items(), key=lambda kv: (-kv[1]["messages"], kv[0]))[:n]
    return [
        {"date": date, "rank": i, "underlying": name, **u, "share": u["messages"] / total}
        for i, (name, u) in enumerate(ranked, start=1)
    ]
