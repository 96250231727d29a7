"""Signal records as the run's ``signals.parquet`` table (omdp.metrics.run_records
RUN_SIGNALS_SCHEMA): what a collector writes for the signals it receives."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from decision_engines.signal_record import SIGNAL_DTYPE, signal_kind_name
from omdp.metrics.run_records import RUN_SIGNALS_SCHEMA


def signals_table(signals: np.ndarray) -> pa.Table:
    """One row per signal record; ``ts_ns`` is when it left the engine (de_out)."""
    if signals.dtype != SIGNAL_DTYPE:
        raise TypeError(f"expected SIGNAL_DTYPE records, got {signals.dtype}")
    kinds, inverse = np.unique(signals["kind"], return_inverse=True)
    names = np.array([signal_kind_name(int(k)) for k in kinds], dtype=object)
    roots, rinv = np.unique(signals["root"], return_inverse=True)
    root_names = np.array([bytes(r).rstrip(b" \0").decode("ascii", "replace") for r in roots], dtype=object)
    cols = {
        "ts_ns": signals["hdr"]["stamps"]["de_out"],
        "engine": signals["engine"],
        "line": signals["line"],
        "msg_seq": signals["msg_seq"],
        "underlying_id": signals["underlying_id"],
        "root": root_names[rinv] if len(roots) else np.zeros(0, dtype=object),
        "expiry": signals["expiry"],
        "strike_px": signals["strike_px"],
        "put_call": np.where(signals["put_call"] == ord("P"), "P", "C").astype(object),
        "kind": names[inverse] if len(kinds) else np.zeros(0, dtype=object),
        "value": signals["value"],
    }
    return pa.table({k: pa.array(v, type=RUN_SIGNALS_SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=RUN_SIGNALS_SCHEMA)
