"""Per hop latency statistics of one run: count, mean, p50..p99.99, min, max - exact.

``np.percentile`` over every sample (linear interpolation between the two nearest ranks;
Spark's exact ``percentile`` agrees), never an approximation. A sample whose two stamps are
not both set (0 = not stamped) does not count for that hop; a percentile with fewer than its
``min_samples`` (10 / (1 - p)) is None (n/a).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from omdp.metrics.definitions import RUN_RECORD_HOPS, Hop
from ops.spark.common.report_schemas import PERCENTILES

HOP_ORDER: dict[str, int] = {h.table_name: i for i, h in enumerate(RUN_RECORD_HOPS)}
"""A hop's table name -> its place in the breakdown's rows."""

STATS_ARROW_SCHEMA = pa.schema(
    [
        ("run_dir", pa.string()),
        ("hop", pa.string()),
        ("hop_order", pa.int32()),
        ("rows", pa.int64()),      # records read (samples, or packet copies for the send lag)
        ("count", pa.int64()),     # of them with both stamps
        ("mean_ns", pa.float64()),
        *[(p.name, pa.float64()) for p in PERCENTILES],
        ("min_ns", pa.int64()),
        ("max_ns", pa.int64()),
    ]
)


def hop_stats(run_dir: str, hop: Hop, start: np.ndarray, end: np.ndarray) -> dict:
    """The statistics row of one hop of one run from its two int64 stamp columns."""
    lat = (end - start)[(start > 0) & (end > 0)]
    n = int(lat.size)
    ok = [p for p in PERCENTILES if n >= p.min_samples]
    values = np.percentile(lat, [100 * p.p for p in ok]) if ok else []
    row = {
        "run_dir": run_dir,
        "hop": hop.table_name,
        "hop_order": HOP_ORDER[hop.table_name],
        "rows": int(start.size),
        "count": n,
        "mean_ns": float(lat.mean()) if n else None,
        "min_ns": int(lat.min()) if n else None,
        "max_ns": int(lat.max()) if n else None,
    }
    row.update({p.name: None for p in PERCENTILES})
    row.update({p.name: float(v) for p, v in zip(ok, values)})
    return row
