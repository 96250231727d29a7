"""The market windows' sink (``market_sink``): the leaders' AGG and END records kept for
market_windows.parquet, and after each window every leader has ended, a summary in
market_live.json (top underlyings, exchange shares) for the dashboard's market panel and
``/api/v1/market``. A Python sink: a few hundred records a window, once a second."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from omdp.atomic_files import write_parquet_atomic, write_text_atomic
from omdp.operator import Operator, OperatorContext
from ops.market.records import AGG, DIMS, END, MARKET_DTYPE, RT_MARKET, VALUES

SERIES = DIMS.index("series")
LIVE_FILE = "market_live.json"
WINDOWS_FILE = "market_windows.parquet"
TOP = 10


class MarketSinkParams(BaseModel):
    """market_sink parameters."""

    model_config = ConfigDict(extra="forbid")

    leaders: int = Field(1, ge=1, le=8, description="leaders feeding it: a window is shown once all have ended it")
    window_ms: int = Field(1000, ge=1, description="the market_stats window, for the windows' start times")
    history: int = Field(60, ge=1, description="windows kept in market_live.json")


def _names(codes: np.ndarray, names: list[str]) -> pa.Array:
    """A string column from small integer codes, without a Python object per row (a window
    is about 100,000 rows)."""
    return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(names, pa.string())).cast(pa.string())


def windows_table(recs: np.ndarray, window_ms: int) -> pa.Table:
    """AGG and END records as market_windows.parquet's rows (one schema for both kinds)."""
    is_end = recs["kind"] == END
    dim = np.where(is_end, len(DIMS), recs["dim"].astype(np.int64))
    cols: dict[str, Any] = {
        "window": pa.array(recs["window"].astype(np.int64)),
        "start_ms": pa.array(recs["window"].astype(np.int64) * window_ms),
        "leader_or_source": pa.array(recs["source"].astype(np.uint16)),
        "kind": _names(is_end.astype(np.int32), ["agg", "end"]),
        "dim": _names(np.clip(dim, 0, len(DIMS)).astype(np.int32), [*DIMS, ""]),
        "key": pa.array(np.where(is_end, 0, recs["key"]).astype(np.uint64)),
    }
    for v in VALUES:
        cols[v] = pa.array(np.where(is_end, 0, recs[v]).astype(np.int64))
    cols["incomplete"] = pa.array(is_end & (recs["dim"] != 0))
    cols["missing_sources"] = pa.array(np.where(is_end, recs["key"], 0).astype(np.uint64))
    cols["messages"] = pa.array(np.where(is_end, recs["quotes"], 0).astype(np.int64))
    cols["overflow"] = pa.array(np.where(is_end, recs["trades"], 0).astype(np.int64))
    cols["late"] = pa.array(np.where(is_end, recs["contracts"], 0).astype(np.int64))
    return pa.table(cols)


def window_summary(recs: np.ndarray, ends: list[np.void], window_ms: int) -> dict[str, Any]:
    """One window for people: its messages, completeness, top underlyings and each
    exchange's share of quotes and of contracts."""
    und = recs[recs["dim"] == 0]
    order = np.argsort(-(und["quotes"] + und["trades"]).astype(np.int64), kind="stable")[:TOP]
    ex = recs[recs["dim"] == 2]
    quotes, contracts = max(int(ex["quotes"].sum()), 1), max(int(ex["contracts"].sum()), 1)
    return {
        "window": int(ends[0]["window"]),
        "start_ms": int(ends[0]["window"]) * window_ms,
        "complete": not any(int(e["dim"]) for e in ends),
        "missing_sources": int(np.bitwise_or.reduce([int(e["key"]) for e in ends])),
        "messages": max(int(e["quotes"]) for e in ends),
        "overflow": sum(int(e["trades"]) for e in ends),
        "top_underlyings": [{"underlying": int(u["key"]), "messages": int(u["quotes"] + u["trades"]),
                             "contracts": int(u["contracts"]), "notional": int(u["notional"]) / 1e4,
                             "nbbo_changes": int(u["nbbo"])} for u in und[order]],
        "exchanges": [{"exchange": chr(int(e["key"])) if 32 < int(e["key"]) < 127 else str(int(e["key"])),
                       "quote_share": int(e["quotes"]) / quotes, "contract_share": int(e["contracts"]) / contracts}
                      for e in ex[np.argsort(ex["key"])]],
    }


class MarketSink(Operator):
    """Keeps every window record; a window's summary goes live once every leader ended it."""

    def __init__(self, params: MarketSinkParams, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.p = params
        self.parts: list[np.ndarray] = []
        self.open: dict[int, list[np.ndarray]] = defaultdict(list)
        self.ends: dict[int, list[np.void]] = defaultdict(list)
        self.live: list[dict[str, Any]] = []
        self.records = self.windows = self.incomplete = self.foreign = self.leader_lost = 0
        windows_table(np.zeros(1, MARKET_DTYPE), 1)  # pyarrow's first table (a quarter second) now, not in the loop

    def process_batch(self, records: np.ndarray, port: str) -> None:
        """Copy the batch; summarize the windows it completes. Most batches are a window's
        series rows, which only the file needs: they are kept and nothing else is done
        (a leader sends about 100,000 of them a second; this runs in Python per batch)."""
        ok = records["hdr"]["type"] == RT_MARKET
        if not ok.all():
            self.foreign += int((~ok).sum())
            records = records[ok]
        if not len(records):
            return
        recs = np.frombuffer(records.tobytes(), dtype=MARKET_DTYPE)  # one flat copy off the channel
        self.parts.append(recs)
        self.records += len(recs)
        live = (recs["kind"] == END) | (recs["dim"] != SERIES)  # what the live summary reads
        if not live.any():
            return
        recs = recs[live]
        for w in np.unique(recs["window"]):
            mine = recs[recs["window"] == w]
            self.open[int(w)].append(mine[mine["kind"] == AGG])
            self.ends[int(w)].extend(mine[mine["kind"] == END])
            if len(self.ends[int(w)]) >= self.p.leaders:
                self._show(int(w))

    def _show(self, w: int) -> None:
        summary = window_summary(np.concatenate(self.open.pop(w)), self.ends.pop(w), self.p.window_ms)
        self.windows += 1
        self.incomplete += not summary["complete"]
        self.live = [*self.live, summary][-self.p.history:]
        if self.ctx.run_dir is not None:
            write_text_atomic(Path(self.ctx.run_dir) / LIVE_FILE,
                              json.dumps({"window_ms": self.p.window_ms, "windows": self.live}))

    def end_of_stream(self) -> None:
        """Write market_windows.parquet (empty when no window came), after marking any
        window some leader never ended."""
        self._end_unended()
        self._write()

    def _end_unended(self) -> None:
        """Every leader ends every window that had messages, so a window without some
        leader's END at the end of the stream lost that leader (its partition died and the
        run went on without it: ``[run] on_death = "continue"``). It gets an END per missing
        leader, incomplete and naming no source, so the window says it is short."""
        for w in sorted(self.ends.keys() | self.open.keys()):
            have = {int(e["source"]) for e in self.ends.get(w, [])}
            lost = [leader for leader in range(self.p.leaders) if leader not in have]
            recs = np.zeros(len(lost), MARKET_DTYPE)
            recs["hdr"]["type"], recs["hdr"]["length"] = RT_MARKET, MARKET_DTYPE.itemsize
            recs["kind"], recs["window"], recs["source"], recs["dim"] = END, w, lost, 1
            self.parts.append(recs)
            self.leader_lost += len(lost)
            self.open[w].append(recs[:0])
            self.ends[w].extend(recs)
            self._show(w)

    def stopped_early(self) -> None:
        """The run stopped hard (a partition died): market_windows.parquet with the windows
        every leader ended so far, so the run keeps what is known; a window some leader had
        not ended is left out whole (its records are part of a window, never a total)."""
        self._write(unended=set(self.open) | set(self.ends))

    def _write(self, unended: set[int] = frozenset()) -> None:
        if self.ctx.run_dir is None:
            return
        recs = np.concatenate(self.parts) if self.parts else np.zeros(0, MARKET_DTYPE)
        if unended:
            recs = recs[~np.isin(recs["window"], np.array(sorted(unended), dtype=recs["window"].dtype))]
        write_parquet_atomic(windows_table(recs, self.p.window_ms), Path(self.ctx.run_dir) / WINDOWS_FILE)

    def counters(self) -> dict[str, int]:
        """Records and windows seen, incomplete windows, records of another type, ENDs
        written for a leader that never ended its window."""
        return {"records": self.records, "windows": self.windows, "incomplete": self.incomplete,
                "foreign": self.foreign, "leader_lost": self.leader_lost}
