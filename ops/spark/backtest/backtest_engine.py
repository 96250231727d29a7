"""The backtest's engine side, run inside a Spark task: the C decision engine over one
underlying bucket's records in time order, once per configuration, and the task's output
tables.

The records come decoded and routed once (``backtest_feed``), merged in time order and
expanded a chunk at a time (``backtest_stage``); every configuration gets its own
``DecisionEngine`` (``ConfigRunner``) fed the same chunks. Pricing refreshes every ``refresh_ms`` of capture
time, between stretches of messages, as ``ops/spark/backtest/signal_score.py`` does: the live
refresher's period, in the capture's time instead of the wall clock, so the backtest is
deterministic. The smiles are kept as of each capture minute's end: the last refresh in the
minute (the day's last refresh included).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from decision_engines.engine import DecisionEngine, split_output
from decision_engines.engine_config import DEFAULT_MAX_GROUPS, DEFAULT_MAX_SERIES, EngineConfig
from decision_engines.pricing.refresher import PricingRefresher, PricingState
from decision_engines.signal_record import SIGNAL_DTYPE, SIGNAL_KIND_NAMES, signal_kind_name
from omdp.metrics.run_records import RUN_SIGNALS_SCHEMA
from ops.spark.backtest.backtest_config import BacktestConfig
from ops.spark.backtest.backtest_nbbo import NbboFile
from ops.spark.backtest.backtest_stage import UnderlyingCounts

MINUTE_NS = 60_000_000_000
ENGINE_BATCH = 4096
"""Messages per C call (a fused run's batches are a packet or a few)."""
OUT_BYTES = 1 << 20
"""The engine's output buffer (samples and signals of a call; a full one is handed on and
the call repeated with the rest)."""

BACKTEST_SIGNALS_SCHEMA = pa.schema(
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

BACKTEST_UNDERLYINGS_SCHEMA = pa.schema(
    [("underlying_id", pa.uint32()), ("messages", pa.int64()), ("quotes", pa.int64()),
     ("first_ns", pa.int64()), ("last_ns", pa.int64())]
    + [(k, pa.int64()) for k in SIGNAL_KIND_NAMES.values()]
)
"""Per underlying: messages routed to it, quotes, capture-time span, signals per kind."""

BACKTEST_SMILES_SCHEMA = pa.schema(
    [("ts_ns", pa.int64()), ("underlying_id", pa.uint32()), ("expiry", pa.uint32()), ("forward", pa.float64()),
     ("discount", pa.float64()), ("years", pa.float64()), ("smile_a", pa.float64()), ("smile_b", pa.float64()),
     ("smile_c", pa.float64()), ("k_min", pa.float64()), ("k_max", pa.float64()), ("points", pa.int64())]
)
"""Per (underlying, expiry) group at the last refresh of each capture minute:
sigma(k) = a + b k + c k^2, k = ln(K / F) in [k_min, k_max] (engines.md "Pricing"); ts_ns is
the refresh's boundary (a multiple of refresh_ms): the fit is of every quote before it."""


@dataclass
class EngineRun:
    """One configuration over one bucket."""

    signals: np.ndarray                 # SIGNAL_DTYPE
    counters: dict[str, int]
    nbbo_changes: int = 0               # written to the NBBO file
    nbbo_dropped: int = 0
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


class ConfigRunner:
    """The engine of one configuration over a bucket's records, fed in time order a chunk at
    a time (``feed``), pricing every ``refresh_ms`` of capture time: after the messages
    before each boundary k * refresh_ms (capture ns since the epoch: the same boundaries in
    every bucket, so an underlying's prices do not depend on which others share its bucket),
    when any arrived since the last refresh, and after the last message. Where the chunks
    are cut does not matter: the same messages reach the engine between the same refreshes.
    The engine's tables are sized by ``cfg.slots(*slots)`` (``slots``: the bucket's series
    and groups; without them the live engine's defaults). With ``nbbo_path`` the engine logs
    its NBBO changes and they stream into that file (``backtest_nbbo.NbboFile``), in place once
    ``finish`` returns."""

    def __init__(self, cfg: BacktestConfig, as_of: str, engine_id: int, nbbo_path: Path | None = None,
                 slots: tuple[int, int] = (DEFAULT_MAX_SERIES, DEFAULT_MAX_GROUPS)) -> None:
        self.cfg = cfg
        max_series, max_groups = cfg.slots(*slots)
        self.engine = DecisionEngine(EngineConfig(sample_every=cfg.sample_every, max_series=max_series,
                                                  max_groups=max_groups, engine_id=engine_id),
                                     prefault=False)  # pages are touched as series arrive
        try:
            self.refresher = PricingRefresher(self.engine, cfg.pricing_config(as_of)) if cfg.pricing else None
            # the NBBO changes streamed to nbbo_path, when given
            self._nbbo = NbboFile(nbbo_path) if nbbo_path is not None else None
        except Exception:
            self.engine.close()
            raise
        if self._nbbo is not None:
            self.engine.log_nbbo(ENGINE_BATCH)   # one C call per ENGINE_BATCH messages: never overflows
        self._out = np.zeros(OUT_BYTES, dtype=np.uint8)
        self._step = int(cfg.refresh_ms * 1e6)
        self._next: int | None = None       # the next refresh boundary (capture ns)
        self._pending = False               # messages since the last refresh
        self._last_ts = 0
        self._parts: list[np.ndarray] = []
        self._smiles: list[dict] = []
        self._refreshes, self._minute, self._held = 0, -1, None
        self.cpu_s = 0.0

    def _process(self, records: np.ndarray) -> None:
        """Records through the engine, ENGINE_BATCH per C call into one reused output
        buffer; the NBBO log taken after each call (it holds a call's changes)."""
        if not len(records):
            return
        for s in range(0, len(records), ENGINE_BATCH):
            chunk = records[s:s + ENGINE_BATCH]
            done = 0
            while done < len(chunk):
                consumed, used = self.engine.process_batch(chunk[done:], self._out, 0)
                done += consumed
                if used:
                    self._parts.append(split_output(self._out, used).signals)
            if self._nbbo is not None:
                self._nbbo.extend(self.engine.take_nbbo(copy=False)[0])
        self._pending = True
        self._last_ts = int(_capture_ns(records)[-1])

    def _refresh(self, boundary: int) -> None:
        """Price what arrived before ``boundary`` (capture ns); the smiles are stamped with
        it and belong to the minute of the instant before it."""
        self._pending = False
        state = self.refresher.refresh()
        if state is not None:
            self._refreshes += 1
            minute = (boundary - 1) // MINUTE_NS
            if minute != self._minute and self._held is not None:
                self._smiles.extend(_smile_rows(*self._held))  # the previous minute's last
            self._minute, self._held = minute, (state, boundary)

    def feed(self, records: np.ndarray) -> None:
        """The next messages (time order, continuing the previous chunk)."""
        t0 = time.thread_time()
        if self.refresher is None:
            self._process(records)
        elif len(records):
            ts = _capture_ns(records)
            if self._next is None:
                self._next = (int(ts[0]) // self._step + 1) * self._step
            i, n = 0, len(records)
            while i < n:
                j = i + int(np.searchsorted(ts[i:], self._next, side="left"))
                self._process(records[i:j])
                if j >= n:
                    break
                if self._pending:
                    self._refresh(self._next)
                # the next boundary past this message (boundaries with no message between collapse)
                self._next += self._step * ((int(ts[j]) - self._next) // self._step + 1)
                i = j
        self.cpu_s += time.thread_time() - t0

    def finish(self) -> EngineRun:
        """The last refresh, the signals, counters and smiles; frees the engine."""
        t0 = time.thread_time()
        try:
            if self.refresher is not None and self._pending:
                self._refresh((self._last_ts // self._step + 1) * self._step)
            if self._held is not None:
                self._smiles.extend(_smile_rows(*self._held))
            signals = np.concatenate(self._parts) if self._parts else np.zeros(0, SIGNAL_DTYPE)
            _, dropped = self.engine.take_nbbo()
            counters = self.engine.counters()
            changes = self._nbbo.close() if self._nbbo is not None else 0
        finally:
            self.engine.close()
        self.cpu_s += time.thread_time() - t0
        return EngineRun(signals, counters, changes, dropped, self._smiles, self._refreshes, self.cpu_s)

    def abort(self) -> None:
        """Free the engine and drop the NBBO file (the task failed)."""
        self.engine.close()
        if self._nbbo is not None:
            self._nbbo.abort()


def signals_arrow(signals: np.ndarray) -> pa.Table:
    """BACKTEST_SIGNALS_SCHEMA rows of signal records."""
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
    return pa.table({k: pa.array(v, type=BACKTEST_SIGNALS_SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=BACKTEST_SIGNALS_SCHEMA)


def underlyings_arrow(counts: UnderlyingCounts, signals: np.ndarray) -> pa.Table:
    """BACKTEST_UNDERLYINGS_SCHEMA: one row per underlying among the messages
    (``backtest_stage.underlying_counts``), with its signals per kind."""
    ids = counts.ids
    cols: dict[str, object] = {"underlying_id": ids, "messages": counts.messages, "quotes": counts.quotes,
                               "first_ns": counts.first_ns, "last_ns": counts.last_ns}
    pos = np.searchsorted(ids, signals["underlying_id"]) if len(ids) else np.zeros(0, np.int64)
    for code, name in SIGNAL_KIND_NAMES.items():
        sel = (signals["kind"] == code) & (pos < len(ids))
        cols[name] = np.bincount(pos[sel], minlength=len(ids)).astype(np.int64)
    return pa.table({k: pa.array(v, type=BACKTEST_UNDERLYINGS_SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=BACKTEST_UNDERLYINGS_SCHEMA)


def smiles_arrow(rows: list[dict]) -> pa.Table:
    """BACKTEST_SMILES_SCHEMA rows."""
    return pa.Table.from_pylist(rows, schema=BACKTEST_SMILES_SCHEMA)
