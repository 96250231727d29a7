"""Schemas of the Parquet run records in ``runs/<date>/<run_id>/`` (docs/architecture.md "Data layout").

Every time is int64 nanoseconds of the omdp clock (Spark cannot read nanosecond Parquet
timestamps, so none is a Parquet timestamp type). These schemas are the contract between the
collectors that write a run and the nightly Spark jobs that read it; writers pass them
explicitly and readers check them.
"""
from __future__ import annotations

import pyarrow as pa

from omdp.record import HOPS

RUN_META_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("sweep_id", pa.string()),          # "" when the run is not part of a sweep
        ("date", pa.string()),              # YYYY-MM-DD of the run directory
        ("capture_date", pa.string()),      # YYYY-MM-DD of the capture replayed
        ("topology", pa.string()),          # topology file name
        ("config", pa.string()),            # e.g. "fused", "vega-shm tuned", "vega-shm default"
        ("knobs_json", pa.string()),        # channel knobs as JSON
        ("target_pps", pa.float64()),       # packets/s asked of the replayer, all lines
        ("achieved_pps", pa.float64()),     # packets/s the replayer achieved
        ("rate_x", pa.float64()),           # target_pps / 24,000
        ("messages_per_packet", pa.float64()),
        ("packets_sent", pa.int64()),
        ("messages_sent", pa.int64()),
        ("messages_processed", pa.int64()),
        ("messages_missed", pa.int64()),
        ("sample_every", pa.int64()),       # 1 in N messages sampled (1,600 by default)
        ("started_ns", pa.int64()),
        ("ended_ns", pa.int64()),
        ("host", pa.string()),
        ("cpu_model", pa.string()),
        ("clock_offset_error_ns", pa.int64()),  # stated error of cross-host stamps (0 on one host)
    ]
)

RUN_SAMPLES_SCHEMA = pa.schema(
    [
        ("line", pa.uint16()),
        ("block_seq", pa.uint64()),
        ("msg_seq", pa.uint64()),
        ("engine", pa.uint16()),
        ("underlying_id", pa.uint32()),
        ("category", pa.uint8()),
    ]
    + [(h, pa.int64()) for h in HOPS]
)

RUN_INGEST_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),              # end of the interval this row covers
        ("line", pa.uint16()),
        ("packets_received", pa.int64()),   # cumulative since the run started
        ("messages_received", pa.int64()),
        ("messages_missed", pa.int64()),    # gaps in message sequence numbers
        ("packets_duplicate", pa.int64()),  # the losing copy of A/B arbitration
        ("decode_errors", pa.int64()),
    ]
)

RUN_INTENDED_SCHEMA = pa.schema(
    [
        ("line", pa.uint16()),
        ("block_seq", pa.uint64()),
        ("copy", pa.string()),              # "A" or "B"
        ("intended_ns", pa.int64()),        # planned send time
        ("sent_ns", pa.int64()),            # actual send time
        ("messages", pa.uint16()),
    ]
)

RUN_SIGNALS_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),
        ("engine", pa.uint16()),
        ("line", pa.uint16()),
        ("msg_seq", pa.uint64()),
        ("underlying_id", pa.uint32()),
        ("root", pa.string()),
        ("expiry", pa.uint32()),
        ("strike_px", pa.int64()),
        ("put_call", pa.string()),
        ("kind", pa.string()),              # crossed, locked, off_smile, parity
        ("value", pa.float64()),            # how far: price distance or parity gap
    ]
)

RUN_FILES: dict[str, pa.Schema] = {
    "meta.parquet": RUN_META_SCHEMA,
    "samples.parquet": RUN_SAMPLES_SCHEMA,
    "ingest.parquet": RUN_INGEST_SCHEMA,
    "intended.parquet": RUN_INTENDED_SCHEMA,
    "signals.parquet": RUN_SIGNALS_SCHEMA,
}
"""File name -> schema for every Parquet file of a run directory (plan.json sits beside)."""
