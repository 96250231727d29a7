"""Explicit schemas of every summary table the nightly jobs write to ``reports/<date>/``.

Times and latencies are int64 nanoseconds, or double nanoseconds where they are means or
interpolated percentiles; rates are per second. A null percentile is "n/a": too few samples.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ops.spark.common.file_problems import FILE_PROBLEM_SCHEMA


@dataclass(frozen=True)
class Percentile:
    """Column ``name`` holds the p-th quantile when at least ``min_samples`` samples exist."""

    name: str
    p: float
    min_samples: int


PERCENTILES: tuple[Percentile, ...] = (
    Percentile("p50_ns", 0.5, 20),
    Percentile("p90_ns", 0.9, 100),
    Percentile("p99_ns", 0.99, 1_000),
    Percentile("p999_ns", 0.999, 10_000),
    Percentile("p9999_ns", 0.9999, 100_000),
)
"""min_samples = 10 / (1 - p), written out so no float rounding decides a boundary."""


def _schema(*fields: tuple[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(n, t, True) for n, t in fields])


_S, _L, _D, _I, _B = T.StringType(), T.LongType(), T.DoubleType(), T.IntegerType(), T.BooleanType()

_RUN_KEY = (("date", _S), ("run_id", _S), ("sweep_id", _S), ("topology", _S), ("config", _S), ("rate_x", _D))

LATENCY_BREAKDOWN = _schema(
    *_RUN_KEY,
    ("target_pps", _D),
    ("hop", _S),
    ("hop_order", _I),
    ("count", _L),
    ("mean_ns", _D),
    *[(p.name, _D) for p in PERCENTILES],
    ("min_ns", _L),
    ("max_ns", _L),
)

LATENCY_RUNS = _schema(
    *_RUN_KEY,
    ("capture_date", _S),
    ("target_pps", _D),
    ("achieved_pps", _D),
    ("achieved_ratio", _D),
    ("messages_per_packet", _D),
    ("messages_sent", _L),
    ("messages_missed", _L),
    ("missed_ratio", _D),
    ("samples", _L),
    ("e2e_fh_p50_ns", _D),
    ("e2e_fh_p99_ns", _D),
    ("e2e_intended_p50_ns", _D),
    ("e2e_intended_p99_ns", _D),
    ("first_third_p50_ns", _D),
    ("last_third_p50_ns", _D),
    ("growth_ratio", _D),
    ("latency_growing", _B),
    ("sustainable", _B),
    ("reasons", _S),
)

LATENCY_SWEEPS = _schema(
    ("date", _S),
    ("sweep_id", _S),
    ("topology", _S),
    ("config", _S),
    ("runs", _L),
    ("min_rate_x", _D),
    ("max_rate_x", _D),
    ("first_unsustainable_rate_x", _D),
    ("max_sustainable_rate_x", _D),
)

LATENCY_REGRESSIONS = _schema(
    ("date", _S),
    ("kind", _S),            # "latency" or "sustainable_rate"
    ("topology", _S),
    ("config", _S),
    ("rate_x", _D),
    ("hop", _S),
    ("metric", _S),
    ("value", _D),
    ("baseline_date", _S),
    ("baseline_value", _D),
    ("change_ratio", _D),
    ("threshold", _D),
    ("flagged", _B),
)

LATENCY_INGEST = _schema(
    ("date", _S),
    ("run_id", _S),
    ("line", _I),
    ("packets_received", _L),
    ("messages_received", _L),
    ("messages_missed", _L),
    ("packets_duplicate", _L),
    ("decode_errors", _L),
)

LATENCY_SIGNALS = _schema(("date", _S), ("run_id", _S), ("kind", _S), ("signals", _L))

SKIPPED_FILES = FILE_PROBLEM_SCHEMA


def conform(df: DataFrame, schema: T.StructType) -> DataFrame:
    """``df`` with exactly the columns of ``schema``, in order, cast to its types."""
    return df.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])

FEEDS_DAY = _schema(
    ("date", _S),
    ("lines", _L),
    ("files", _L),
    ("files_skipped", _L),
    ("packets", _L),
    ("messages", _L),
    ("bytes", _L),
    ("bad_packets", _L),
    ("bad_checksums", _L),   # of bad_packets: OBI blocks dropped for a checksum mismatch
    ("gaps", _L),            # gaps in the message sequence numbers, summed over the files
    ("gap_messages", _L),    # the sequence numbers they skip
    ("messages_per_packet", _D),
    ("first_ns", _L),
    ("last_ns", _L),
    ("span_s", _D),          # last packet time minus the first
    ("mean_pps", _D),
    ("peak_1s_pps", _D),
    ("peak_100ms_pps", _D),
    ("peak_10ms_pps", _D),
    ("mean_mps", _D),
    ("peak_1s_mps", _D),
    ("peak_100ms_mps", _D),
    ("peak_10ms_mps", _D),
    ("rate_x", _D),
    ("peak_1s_rate_x", _D),
)

FEEDS_RATE_PROFILE = _schema(
    ("date", _S),
    ("line", _I),            # null: all lines together
    ("window_ms", _I),
    ("windows", _L),         # windows from the first to the last packet, empty ones included
    ("mean_pps", _D),        # count / (last packet time - first), the same for every window
    ("peak_pps", _D),
    ("mean_mps", _D),
    ("peak_mps", _D),
    ("peak_mps_at_ns", _L),  # start of the window with the most messages
)

FEEDS_RATE_PER_SECOND = _schema(
    ("date", _S),
    ("line", _I),            # null: all lines together
    ("second_ns", _L),
    ("packets", _L),
    ("messages", _L),
    ("bytes", _L),
)

FEEDS_MESSAGES_PER_PACKET = _schema(
    ("date", _S),
    ("line", _I),            # null: all lines together
    ("messages_per_packet", _I),
    ("packets", _L),
)

FEEDS_CATEGORY_MIX = _schema(
    ("date", _S),
    ("category", _S),
    ("category_name", _S),
    ("messages", _L),
    ("share", _D),
)

FEEDS_TOP_UNDERLYINGS = _schema(
    ("date", _S),
    ("rank", _I),
    ("underlying", _S),
    ("messages", _L),
    ("quotes", _L),
    ("last_sales", _L),
    ("share", _D),
)

FEEDS_FILES = _schema(
    ("date", _S),
    ("path", _S),
    ("line", _I),
    ("copy", _S),
    ("part", _I),
    ("bytes", _L),
    ("packets", _L),
    ("messages", _L),
    ("bad_packets", _L),
    ("bad_checksums", _L),   # of bad_packets: OBI blocks whose checksum did not match (dropped)
    ("gaps", _L),            # gaps in the file's message sequence numbers
    ("gap_messages", _L),    # the sequence numbers they skip
    ("frames_skipped", _L),
    ("feed", _S),            # "opra-fast-v2" or "obi-v6" ("" for a file not read)
    ("status", _S),          # "ok", "partly skipped", "skipped"
    ("error", _S),
    ("output", _S),          # the tick file written ("" if none)
    ("cpu_s", _D),           # CPU seconds of the decode task (read, decode, convert, write)
    ("write_cpu_s", _D),     # of cpu_s: writing the tick file (Parquet)
)
