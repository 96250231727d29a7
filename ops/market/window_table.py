"""The market windows as Arrow tables, computed in one sequential pass over decoded OPRA
records by the rules docs/market_stats.md states: what the nightly job computes offline
and compares with the live runs' merged windows. A pass over part of the stream (one line,
one chunk) gives partial tables; ``merge_partials`` merges them by the same CRDT rules the
leaders use (sums, and max for ``max_trade``), so the split does not change the result.

Tables:
  aggregates  window, start_ms, dim ("underlying", "series", "exchange"), key and the
              six values of ``VALUES`` (one row per key and window)
  messages    window, start_ms, messages (quotes and trades counted in the window)
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ops.market.oracle import event_windows, message_values, series_keys
from ops.market.records import DIMS, VALUES

KEYS = ["window", "dim", "key"]
_RULE = {v: "max" if v == "max_trade" else "sum" for v in VALUES}

AGGREGATES_SCHEMA = pa.schema([("window", pa.int64()), ("start_ms", pa.int64()), ("dim", pa.string()),
                               ("key", pa.uint64()), *[(v, pa.int64()) for v in VALUES]])
MESSAGES_SCHEMA = pa.schema([("window", pa.int64()), ("start_ms", pa.int64()), ("messages", pa.int64())])


def _group(table: pa.Table, keys: list[str], rules: dict[str, str]) -> pa.Table:
    """``table`` grouped by ``keys``, each column of ``rules`` reduced by its rule, names kept."""
    out = table.group_by(keys, use_threads=False).aggregate([(c, r) for c, r in rules.items()])
    return out.rename_columns([n.rsplit("_", 1)[0] if n.endswith(("_sum", "_max")) else n for n in out.column_names])


def partial_tables(msgs: np.ndarray, window_ms: int = 1000, multiplier: int = 100) -> tuple[pa.Table, pa.Table]:
    """(aggregates, messages) of ``msgs`` (OPRA_MSG_DTYPE) with ``dim`` as its number."""
    counted, win = event_windows(msgs, window_ms)
    m, w = msgs[counted], win[counted].astype(np.int64)
    cols = message_values(m, multiplier)
    keys = (m["underlying_id"].astype(np.uint64), series_keys(m), m["participant"].astype(np.uint64))
    parts = [_group(pa.table({"window": w, "dim": np.full(len(w), dim, np.int8), "key": key, **cols}), KEYS, _RULE)
             for dim, key in enumerate(keys)]
    msgs_t = pa.table({"window": w, "messages": np.ones(len(w), np.int64)})
    return pa.concat_tables(parts), _group(msgs_t, ["window"], {"messages": "sum"})


def combine(parts: list[tuple[pa.Table, pa.Table]]) -> tuple[pa.Table, pa.Table]:
    """Partial (aggregates, messages) merged into one partial: a key's rows and a window's
    counts added up (``max_trade``: the largest)."""
    return (_group(pa.concat_tables([a for a, _ in parts]), KEYS, _RULE),
            _group(pa.concat_tables([c for _, c in parts]), ["window"], {"messages": "sum"}))


def merge_partials(parts: list[tuple[pa.Table, pa.Table]], window_ms: int = 1000) -> tuple[pa.Table, pa.Table]:
    """Partial (aggregates, messages) merged: one row per key and window, sorted by window,
    dimension name and key, ``dim`` as its name (AGGREGATES_SCHEMA, MESSAGES_SCHEMA)."""
    aggs, counts = combine(parts)
    counts = counts.sort_by("window")
    window = aggs.column("window").to_numpy()
    dims = np.array(DIMS, dtype=object)[aggs.column("dim").to_numpy().astype(np.int64)]
    aggs_out = pa.table({"window": window, "start_ms": window * window_ms, "dim": pa.array(dims, pa.string()),
                         "key": aggs.column("key"), **{v: aggs.column(v) for v in VALUES}}, schema=AGGREGATES_SCHEMA)
    aggs_out = aggs_out.sort_by([(k, "ascending") for k in KEYS])
    cw = counts.column("window").to_numpy()
    counts_out = pa.table({"window": cw, "start_ms": cw * window_ms, "messages": counts.column("messages")},
                          schema=MESSAGES_SCHEMA)
    return aggs_out, counts_out


def window_tables(msgs: np.ndarray, window_ms: int = 1000, multiplier: int = 100) -> tuple[pa.Table, pa.Table]:
    """(aggregates, messages) of one stream, in one pass."""
    return merge_partials([partial_tables(msgs, window_ms, multiplier)], window_ms)


def live_tables(windows: pa.Table) -> tuple[pa.Table, pa.Table, int]:
    """A run's market_windows.parquet as (aggregates, messages, incomplete windows): its
    ``agg`` rows, and per window the messages its leaders' ``end`` rows counted (each leader
    hears every source's count)."""
    aggs = windows.filter(pc.equal(windows.column("kind"), "agg"))
    aggs = aggs.select(AGGREGATES_SCHEMA.names).cast(AGGREGATES_SCHEMA).sort_by([(k, "ascending") for k in KEYS])
    ends = windows.filter(pc.equal(windows.column("kind"), "end"))
    per = _group(ends.select(["window", "start_ms", "messages", "incomplete"]), ["window", "start_ms"],
                 {"messages": "max", "incomplete": "max"}).sort_by("window")
    incomplete = int(pc.sum(per.column("incomplete").cast(pa.int64())).as_py() or 0)
    return aggs, per.select(MESSAGES_SCHEMA.names).cast(MESSAGES_SCHEMA), incomplete


def _rows(aggs: pa.Table) -> dict[tuple, tuple]:
    cols = [aggs.column(c).to_pylist() for c in (*KEYS, *VALUES)]
    return {(w, d, k): tuple(v) for w, d, k, *v in zip(*cols)}


def compare_windows(offline: tuple[pa.Table, pa.Table], live: tuple[pa.Table, pa.Table]) -> dict[str, int]:
    """Counts of how a live run's windows (aggregates, messages) agree with the offline
    ones: keys equal, keys with other values, keys only one side has, windows whose message
    counts differ. Every count but ``equal`` and ``windows`` is 0 when they are the same."""
    off, liv = _rows(offline[0]), _rows(live[0])
    off_n = dict(zip(offline[1].column("window").to_pylist(), offline[1].column("messages").to_pylist()))
    liv_n = dict(zip(live[1].column("window").to_pylist(), live[1].column("messages").to_pylist()))
    both = off.keys() & liv.keys()
    return {"windows": len(off_n.keys() | liv_n.keys()), "keys": len(off.keys() | liv.keys()),
            "equal": sum(off[k] == liv[k] for k in both), "differ": sum(off[k] != liv[k] for k in both),
            "offline_only": len(off.keys() - liv.keys()), "live_only": len(liv.keys() - off.keys()),
            "messages_differ": sum(off_n.get(w) != liv_n.get(w) for w in off_n.keys() | liv_n.keys())}
