"""The offline replay's engine side, run inside a Spark task: the C decision engine over one
underlying bucket's records in time order, once per configuration, and the task's output
tables.

The records come decoded and routed once (``replay_feed``), merged in time order and
expanded a chunk at a time (``replay_stage``); every configuration gets its own
``DecisionEngine`` (``ConfigRunner``) fed the same chunks. Pricing refreshes every ``refresh_ms`` of capture
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

from decision_engines.engine import DecisionEngine, split_output
from decision_engines.engine_config import EngineConfig
from decision_engines.engine_records import NBBO_CHANGE_DTYPE
from decision_engines.pricing.refresher import PricingRefresher, PricingState
from decision_engines.signal_record import SIGNAL_DTYPE, SIGNAL_KIND_NAMES, signal_kind_name
from omdp.metrics.run_records import RUN_SIGNALS_SCHEMA
from omdp.record import copy_records
from ops.spark.replay_config import ReplayConfig
from ops.spark.replay_stage import UnderlyingCounts

MINUTE_NS = 60_000_000_000
ENGINE_BATCH = 4096
"""Messages per C call (a fused run's batches are a packet or a few)."""
OUT_BYTES = 1 << 20
"""The engine's output buffer (samples and signals of a call; a full one is handed on and
the call repeated with the rest)."""

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

REPLAY_NBBO_SCHEMA = pa.schema(
    [
        ("ts_ns", pa.int64()),           # the quote's capture time
        ("line", pa.int32()),            # the quote's line and sequence number
        ("msg_seq", pa.int64()),
        ("quote_participant", pa.string()),  # the exchange whose quote moved the NBBO
        ("underlying_id", pa.uint32()),
        ("root", pa.string()),
        ("expiry", pa.uint32()),
        ("strike_px", pa.int64()),
        ("put_call", pa.string()),
        ("bid_px", pa.int64()),          # the NBBO after the quote; null: no bid on any exchange
        ("bid_size", pa.int64()),
        ("bid_participant", pa.string()),
        ("offer_px", pa.int64()),        # null: no offer
        ("offer_size", pa.int64()),
        ("offer_participant", pa.string()),
    ]
)
"""One row per quote that changed a series' NBBO (bid or offer: price, size or exchange),
the NBBO after it as the engine holds it (1e-9 price units), in the order the engine saw
them."""

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
    nbbo: np.ndarray = field(default_factory=lambda: np.zeros(0, NBBO_CHANGE_DTYPE))  # NBBO_CHANGE_DTYPE
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


class _Rows:
    """Records appended into one array that doubles when full: each record copied once
    (from the engine's log) instead of into a list of arrays and again into their
    concatenation (4.4 M NBBO changes a 30 s day: hundreds of MB of fresh pages)."""

    def __init__(self, dtype: np.dtype, capacity: int = 1 << 16) -> None:
        self._buf = np.empty(capacity, dtype)
        self._n = 0

    def extend(self, rows: np.ndarray) -> None:
        need = self._n + len(rows)
        if need > len(self._buf):
            grown = np.empty(max(need, 2 * len(self._buf)), self._buf.dtype)
            copy_records(grown[:self._n], self._buf[:self._n])
            self._buf = grown
        copy_records(self._buf[self._n:need], rows)
        self._n = need

    def rows(self) -> np.ndarray:
        """The records so far (a view)."""
        return self._buf[:self._n]


class ConfigRunner:
    """The engine of one configuration over a bucket's records, fed in time order a chunk at
    a time (``feed``), pricing every ``refresh_ms`` of capture time: after the messages
    before each boundary ts0 + k * refresh_ms (ts0: the first message's time), when any
    arrived since the last refresh, and after the last message. Where the chunks are cut
    does not matter: the same messages reach the engine between the same refreshes."""

    def __init__(self, cfg: ReplayConfig, as_of: str, engine_id: int) -> None:
        self.cfg = cfg
        self.engine = DecisionEngine(EngineConfig(sample_every=cfg.sample_every, max_series=cfg.max_series,
                                                  max_groups=cfg.max_groups, engine_id=engine_id),
                                     prefault=False)  # a bucket touches a fraction of max_series
        try:
            self.refresher = PricingRefresher(self.engine, cfg.pricing_config(as_of)) if cfg.pricing else None
        except Exception:
            self.engine.close()
            raise
        if cfg.nbbo:
            self.engine.log_nbbo(ENGINE_BATCH)   # one C call per ENGINE_BATCH messages: never overflows
        self._nbbo = _Rows(NBBO_CHANGE_DTYPE)
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
            if self.cfg.nbbo:
                self._nbbo.extend(self.engine.take_nbbo(copy=False)[0])
        self._pending = True
        self._last_ts = int(_capture_ns(records)[-1])

    def _refresh(self) -> None:
        self._pending = False
        state = self.refresher.refresh()
        if state is not None:
            self._refreshes += 1
            now = self._last_ts
            if now // MINUTE_NS != self._minute and self._held is not None:
                self._smiles.extend(_smile_rows(*self._held))  # the previous minute's last
            self._minute, self._held = now // MINUTE_NS, (state, now)

    def feed(self, records: np.ndarray) -> None:
        """The next messages (time order, continuing the previous chunk)."""
        t0 = time.thread_time()
        if self.refresher is None:
            self._process(records)
        elif len(records):
            ts = _capture_ns(records)
            if self._next is None:
                self._next = int(ts[0]) + self._step
            i, n = 0, len(records)
            while i < n:
                j = i + int(np.searchsorted(ts[i:], self._next, side="left"))
                self._process(records[i:j])
                if j >= n:
                    break
                if self._pending:
                    self._refresh()
                # the next boundary past this message (boundaries with no message between collapse)
                self._next += self._step * ((int(ts[j]) - self._next) // self._step + 1)
                i = j
        self.cpu_s += time.thread_time() - t0

    def finish(self) -> EngineRun:
        """The last refresh, the signals, counters and smiles; frees the engine."""
        t0 = time.thread_time()
        try:
            if self.refresher is not None and self._pending:
                self._refresh()
            if self._held is not None:
                self._smiles.extend(_smile_rows(*self._held))
            signals = np.concatenate(self._parts) if self._parts else np.zeros(0, SIGNAL_DTYPE)
            nbbo = self._nbbo.rows()
            _, dropped = self.engine.take_nbbo()
            counters = self.engine.counters()
        finally:
            self.engine.close()
        self.cpu_s += time.thread_time() - t0
        return EngineRun(signals, counters, nbbo, dropped, self._smiles, self._refreshes, self.cpu_s)


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


def underlyings_arrow(counts: UnderlyingCounts, signals: np.ndarray) -> pa.Table:
    """REPLAY_UNDERLYINGS_SCHEMA: one row per underlying among the messages
    (``replay_stage.underlying_counts``), with its signals per kind."""
    ids = counts.ids
    cols: dict[str, object] = {"underlying_id": ids, "messages": counts.messages, "quotes": counts.quotes,
                               "first_ns": counts.first_ns, "last_ns": counts.last_ns}
    pos = np.searchsorted(ids, signals["underlying_id"]) if len(ids) else np.zeros(0, np.int64)
    for code, name in SIGNAL_KIND_NAMES.items():
        sel = (signals["kind"] == code) & (pos < len(ids))
        cols[name] = np.bincount(pos[sel], minlength=len(ids)).astype(np.int64)
    return pa.table({k: pa.array(v, type=REPLAY_UNDERLYINGS_SCHEMA.field(k).type) for k, v in cols.items()},
                    schema=REPLAY_UNDERLYINGS_SCHEMA)


_CHARS = pa.array([chr(i) for i in range(256)], pa.string())

REPLAY_NBBO_DICT_SCHEMA = pa.schema([
    pa.field(f.name, pa.dictionary(pa.int32(), pa.string()) if f.type == pa.string() else f.type) for f in REPLAY_NBBO_SCHEMA
])
"""What ``nbbo_arrow`` builds: REPLAY_NBBO_SCHEMA with its strings as dictionary arrays."""

_NBBO_DELTA = ["ts_ns", "msg_seq", "bid_size", "offer_size"]

NBBO_WRITE_OPTIONS = {
    "use_dictionary": [f.name for f in REPLAY_NBBO_SCHEMA if f.type == pa.string()]
    + ["line", "underlying_id", "expiry", "strike_px", "bid_px", "offer_px"],
    "column_encoding": {n: "DELTA_BINARY_PACKED" for n in _NBBO_DELTA},
    "write_statistics": ["ts_ns", "msg_seq"],
    "store_schema": False,
}
"""How NBBO files are written, chosen by timing the write of one bucket's 2.2 M changes
one column choice at a time: the string columns' dictionaries as built (casting them to
plain strings for the writer to hash back into dictionaries row by row was the write's
biggest part); the series fields and prices as dictionaries (few distinct values in a row
group); the times, sequence numbers and sizes delta-encoded; min/max statistics only on
the time and sequence columns (what a reader prunes on); snappy throughout; no Arrow
schema stored, so Spark and pyarrow read REPLAY_NBBO_SCHEMA's strings (docs/benchmarks.md,
2026-11-28)."""


def _chars(codes: np.ndarray) -> pa.DictionaryArray:
    """One-byte codes as one-letter strings (0: null), a dictionary over the 256 codes."""
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=codes == 0), _CHARS)


def nbbo_arrow(changes: np.ndarray) -> pa.Table:
    """REPLAY_NBBO_DICT_SCHEMA rows of NBBO_CHANGE_DTYPE records (write them with
    NBBO_WRITE_OPTIONS); each series' root is named once, from any of its records."""
    slot = changes["slot"].astype(np.int64)
    n_slots = int(slot.max()) + 1 if len(slot) else 0
    some = np.zeros(n_slots, dtype=np.int64)
    some[slot] = np.arange(len(changes))  # a record of each series (all carry its root)
    seen = np.zeros(n_slots, dtype=bool)
    seen[slot] = True
    roots = [bytes(r).rstrip(b" \0").decode("ascii", "replace") if ok else ""
             for r, ok in zip(changes["root"][some], seen)]
    root = pa.DictionaryArray.from_arrays(pa.array(slot.astype(np.int32)), pa.array(roots, pa.string()))
    no_bid, no_offer = changes["bid_part"] == 0, changes["offer_part"] == 0
    cols = {
        "ts_ns": pa.array(changes["ts_ns"], pa.int64()),
        "line": pa.array(changes["line"].astype(np.int32)),
        "msg_seq": pa.array(changes["msg_seq"].astype(np.int64)),
        "quote_participant": _chars(changes["quote_part"]),
        "underlying_id": pa.array(changes["underlying_id"], pa.uint32()),
        "root": root,
        "expiry": pa.array(changes["expiry"], pa.uint32()),
        "strike_px": pa.array(changes["strike_px"], pa.int64()),
        "put_call": _chars(changes["put_call"]),
        "bid_px": pa.array(changes["bid_px"], pa.int64(), mask=no_bid),
        "bid_size": pa.array(changes["bid_size"].astype(np.int64), mask=no_bid),
        "bid_participant": _chars(changes["bid_part"]),
        "offer_px": pa.array(changes["offer_px"], pa.int64(), mask=no_offer),
        "offer_size": pa.array(changes["offer_size"].astype(np.int64), mask=no_offer),
        "offer_participant": _chars(changes["offer_part"]),
    }
    return pa.table(cols, schema=REPLAY_NBBO_DICT_SCHEMA)


def smiles_arrow(rows: list[dict]) -> pa.Table:
    """REPLAY_SMILES_SCHEMA rows."""
    return pa.Table.from_pylist(rows, schema=REPLAY_SMILES_SCHEMA)
