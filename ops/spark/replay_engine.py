"""The offline replay's engine side, run inside a Spark task: the C decision engine over one
underlying bucket's records in time order, once per configuration, and the task's output
tables.

The records come decoded and routed once (``replay_feed``); every configuration gets its own
``DecisionEngine`` over the same array. Pricing refreshes every ``refresh_ms`` of capture
time, between stretches of messages, as ``ops/bench/signal_score.py`` does: the live
refresher's period, in the capture's time instead of the wall clock, so the replay is
deterministic. The smiles are kept as of each capture minute's end: the last refresh in the
minute (the day's last refresh included).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from decision_engines.engine import DecisionEngine
from decision_engines.engine_config import EngineConfig
from decision_engines.pricing.refresher import PricingRefresher, PricingState
from decision_engines.signal_record import SIGNAL_DTYPE, SIGNAL_KIND_NAMES, signal_kind_name
from omdp.metrics.run_records import RUN_SIGNALS_SCHEMA
from ops.spark.replay_config import ReplayConfig

MINUTE_NS = 60_000_000_000
ENGINE_BATCH = 4096
"""Messages per C call (a fused run's batches are a packet or a few)."""

REPLAY_SIGNALS_SCHEMA = pa.schema(
    list(RUN_SIGNALS_SCHEMA)
    + [
        ("bid_px", pa.int64()),     # what was checked (engines.md "Records"), 1e-9 price units
        ("offer_px", pa.int64()),
        ("ref_lo", pa.int64()),     # the limits it was checked against
        ("ref_hi", pa.int64()),
        ("participant", pa.string()),
        ("time", pa.uint32()),      # the message's HHMMSSmmm
    ]
)
"""A run's signals.parquet columns (``ts_ns`` = the message's capture time here) and what
the signal record says was checked."""

REPLAY_UNDERLYINGS_SCHEMA = pa.schema(
    [("underlying_id", pa.uint32()), ("messages", pa.int64()), ("quotes", pa.int64()),
     ("first_ns", pa.int64()), ("last_ns", pa.int64())]
    + [(k, pa.int64()) for k in SIGNAL_KIND_NAMES.values()]
)
"""Per underlying: messages routed to it, quotes, capture-time span, signals per kind."""

REPLAY_SMILES_SCHEMA = pa.schema(
    [("ts_ns", pa.int64()), ("underlying_id", pa.uint32()), ("expiry", pa.uint32()), ("forward", pa.float64()),
     ("discount", pa.float64()), ("years", pa.float64()), ("smile_a", pa.float64()), ("smile_b", pa.float64()),
     ("smile_c", pa.float64()), ("k_min", pa.float64()), ("k_max", pa.float64()), ("points", pa.int64())]
)
"""Per (underlying, expiry) group at the last refresh of each capture minute:
sigma(k) = a + b k + c k^2, k = ln(K / F) in [k_min, k_max] (engines.md "Pricing")."""


@dataclass
class EngineRun:
    """One configuration over one bucket."""

    signals: np.ndarray                 # SIGNAL_DTYPE
    counters: dict[str, int]
    smiles: list[dict] = field(default_factory=list)
    refreshes: int = 0
    cpu_s: float = 0.0


def _capture_ns(records: np.ndarray) -> np.ndarray:
    return records["hdr"]["stamps"]["fh_in"]


def _smile_rows(state: PricingState, ts_ns: int) -> list[dict]:
    rows = []
    s = state.smiles
    for g in range(len(state.groups)):
        if not s.points[g]:
            continue
        rows.append({"ts_ns": ts_ns, "underlying_id": int(state.groups["underlying_id"][g]),
                     "expiry": int(state.groups["expiry"][g]), "forward": float(state.forwards.forward[g]),
                     "discount": float(state.forwards.discount[g]), "years": float(state.years[g]),
                     "smile_a": float(s.coef[g, 0]), "smile_b": float(s.coef[g, 1]), "smile_c": float(s.coef[g, 2]),
                     "k_min": float(s.k_min[g]), "k_max": float(s.k_max[g]), "points": int(s.points[g])})
    return rows


def run_config(records: np.ndarray, cfg: ReplayConfig, as_of: str, engine_id: int) -> EngineRun:
    """The engine of ``cfg`` over ``records`` (time order), pricing every ``refresh_ms``."""
    t0 = time.thread_time()
    engine = DecisionEngine(EngineConfig(sample_every=cfg.sample_every, max_series=cfg.max_series,
                                         max_groups=cfg.max_groups, engine_id=engine_id))
    try:
        refresher = PricingRefresher(engine, cfg.pricing_config(as_of)) if cfg.pricing else None
        ts = _capture_ns(records)
        step = int(cfg.refresh_ms * 1e6)
        if len(ts) and refresher is not None:
            bounds = np.searchsorted(ts, np.arange(int(ts[0]) + step, int(ts[-1]) + step, step), side="left")
            bounds = np.unique(np.append(bounds, len(records)))
        else:
            bounds = np.array([len(records)])
        parts, smiles = [], []
        start, refreshes, minute, held = 0, 0, -1, None
        for end in bounds.tolist():
            if end > start:
                parts.append(engine.process(records[start:end], batch=ENGINE_BATCH).signals)
                now = int(ts[end - 1])
                start = end
                if refresher is not None:
                    state = refresher.refresh()
                    if state is not None:
                        refreshes += 1
                        if now // MINUTE_NS != minute and held is not None:
                            smiles.extend(_smile_rows(*held))  # the previous minute's last
                        minute, held = now // MINUTE_NS, (state, now)
        if held is not None:
            smiles.extend(_smile_rows(*held))
        signals = np.concatenate(parts) if parts else np.zeros(0, SIGNAL_DTYPE)
        return EngineRun(signals, engine.counters(), smiles, refreshes, time.thread_time() - t0)
    finally:
        engine.close()


def signals_arrow(signals: np.ndarray) -> pa.Table:
    """REPLAY_SIGNALS_SCHEMA rows of signal records."""
    kinds = [signal_kind_name(int(k)) for k in signals["kind"]]
    roots = [bytes(r).rstrip(b" \0").decode("ascii", "replace") for r in signals["root"]]
    cols = {
        "ts_ns": signals["hdr"]["stamps"]["fh_in"],
        "engine": signals["engine"],
        "line": signals["line"],
        "msg_seq": signals["msg_seq"],
        "underlying_id": signals["underlying_id"],
        "root": roots,
        "expiry": signals["expiry"],
        "strike_px": signals["strike_px"],
        "put_call": ["P" if p == ord("P") else "C" for p in signals["put_call"]],
        "kind": kinds,
        "value": signals["value"],
        "bid_px": signals["bid_px"],
        "offer_px": signals["offer_px"],
        "ref_lo": signals["ref_lo"],
        "ref_hi": signals["ref_hi"],
        "participant": [chr(p) if p else "" for p in signals["participant"]],
        "time": signals["time"],
    }
    return pa.table({k: pa.array(v, type=REPLAY_SIGNALS_SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=REPLAY_SIGNALS_SCHEMA)


def underlyings_arrow(records: np.ndarray, signals: np.ndarray) -> pa.Table:
    """REPLAY_UNDERLYINGS_SCHEMA: one row per underlying seen in ``records``."""
    uid = records["underlying_id"]
    ids, inv = np.unique(uid, return_inverse=True)
    ts = _capture_ns(records)
    cols: dict[str, object] = {
        "underlying_id": ids,
        "messages": np.bincount(inv, minlength=len(ids)),
        "quotes": np.bincount(inv, weights=(records["category"] == ord("k")), minlength=len(ids)).astype(np.int64),
        "first_ns": np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64),
        "last_ns": np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64),
    }
    np.minimum.at(cols["first_ns"], inv, ts)
    np.maximum.at(cols["last_ns"], inv, ts)
    pos = np.searchsorted(ids, signals["underlying_id"]) if len(ids) else np.zeros(0, np.int64)
    for code, name in SIGNAL_KIND_NAMES.items():
        sel = (signals["kind"] == code) & (pos < len(ids))
        cols[name] = np.bincount(pos[sel], minlength=len(ids)).astype(np.int64)
    return pa.table({k: pa.array(v, type=REPLAY_UNDERLYINGS_SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=REPLAY_UNDERLYINGS_SCHEMA)


def smiles_arrow(rows: list[dict]) -> pa.Table:
    """REPLAY_SMILES_SCHEMA rows."""
    return pa.Table.from_pylist(rows, schema=REPLAY_SMILES_SCHEMA)
