"""``FinishedRunSource``: a finished run's figures, from its run directory's records.

Latency windows are computed from samples.parquet with the live collector's rule (a
sample belongs to the epoch second of its final stamp ``mc_in``; a window of N seconds
ending at t holds the N seconds up to t's second) and the same C histograms, so a window
of a finished run equals what the live dashboard showed for it. The whole-run figures
("all") use the rows the run's report used, as ``omdp runs show`` does. Ingest comes from
ingest.parquet (rates: the run's averages; history: per interval), operators and channels from run.json
(final counters), signals from signals.parquet; the files other than meta.parquet are
optional.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from feedhandlers.opra_record import PRICE_SCALE
from omdp.metrics.breakdown import hop_histograms_from_table
from omdp.metrics.definitions import HOP_KEYS, HOP_STAMPS
from omdp.metrics.definitions import Verdict
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_summary import summarize_hops
from omdp.metrics.run_files import RunRecordError, read_meta, read_run_file
from omdp.metrics.run_verdict import read_verdict
from omdp.metrics.stats_segment import LINE_COUNTER_NAMES
from ops.dashboard.source import DashboardSource

MAX_FINISHED_WINDOW_S = 86_400


def report_rows(samples: pa.Table) -> tuple[int, int]:
    """Rows [start, end) the run's report used (schema metadata ``omdp.report_rows``)."""
    md = {k.decode(): v.decode() for k, v in (samples.schema.metadata or {}).items()}
    text = md.get("omdp.report_rows")
    if not text:
        return 0, samples.num_rows
    try:
        start, end = (int(x) for x in text.split(":"))
    except ValueError:
        raise RunRecordError("samples.parquet", f"metadata omdp.report_rows={text!r} is not 'start:end'") from None
    if not 0 <= start <= end <= samples.num_rows:
        raise RunRecordError("samples.parquet", f"report rows {start}:{end} outside the file's {samples.num_rows} rows")
    return start, end


def series_label(root: str, expiry: int, put_call: str, strike_px: int) -> str:
    """An option series as people write it: ``XYZ 20080322 C 12.5``."""
    return f"{root.strip()} {expiry} {put_call} {strike_px / PRICE_SCALE:g}".strip()


def _optional(run_dir: Path, file: str) -> pa.Table | None:
    return read_run_file(run_dir, file) if (run_dir / file).is_file() else None


def _json(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


class FinishedRunSource(DashboardSource):
    """The records of one finished run directory (loaded once)."""

    kind = "finished"

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.meta = read_meta(self.run_dir)
        self.plan = _json(self.run_dir / "plan.json")
        self.run_json = _json(self.run_dir / "run.json")
        self._samples = _optional(self.run_dir, "samples.parquet")
        self._ingest = _optional(self.run_dir, "ingest.parquet")
        self._signals = _optional(self.run_dir, "signals.parquet")
        if self._samples is not None:
            self._report = report_rows(self._samples)
            self._by_time = self._samples.sort_by("mc_in")
            self._mc_in = self._by_time.column("mc_in").to_numpy()
        else:
            self._report = (0, 0)
            self._by_time = None
            self._mc_in = np.zeros(0, dtype=np.int64)
        ended = int(self.meta["ended_ns"])
        if ended <= 0:
            ended = int(self._mc_in.max()) if len(self._mc_in) else int(self.meta["started_ns"])
        self._end_ns = ended
        self._verdict: Verdict | None = None

    @property
    def run_id(self) -> str:
        return str(self.meta["run_id"])

    @property
    def max_window_s(self) -> int:
        start = int(self.meta["started_ns"]) or (int(self._mc_in[0]) if len(self._mc_in) else self._end_ns)
        return max(1, min(MAX_FINISHED_WINDOW_S, math.ceil((self._end_ns - start) / 1e9) + 1))

    def now_ns(self) -> int:
        return self._end_ns

    def _hists(self, lo_ns: int, hi_ns: int) -> dict[str, LatencyHistogram]:
        """Histograms of the samples with lo_ns <= mc_in < hi_ns."""
        if self._by_time is None:
            return {k: LatencyHistogram() for k in HOP_KEYS}
        i0, i1 = np.searchsorted(self._mc_in, [lo_ns, hi_ns], side="left")
        return hop_histograms_from_table(self._by_time, int(i0), int(i1))

    def latency_histograms(self, window_s: int | None, at_ns: int) -> dict[str, LatencyHistogram]:
        if window_s is None:
            if self._samples is None:
                return {k: LatencyHistogram() for k in HOP_KEYS}
            return hop_histograms_from_table(self._samples, *self._report)
        at_s = at_ns // 1_000_000_000
        return self._hists((at_s - window_s + 1) * 1_000_000_000, (at_s + 1) * 1_000_000_000)

    def latency_history(self, seconds: int, at_ns: int) -> list[dict[str, Any]]:
        at_s = at_ns // 1_000_000_000
        out = []
        for sec in range(at_s - seconds + 1, at_s + 1):
            hops = summarize_hops(self._hists(sec * 1_000_000_000, (sec + 1) * 1_000_000_000))
            out.append({"second": sec, "hops": {k: dict(v) for k, v in hops.items()}})
        return out

    def missing_stamps(self) -> dict[str, int]:
        if self._samples is None:
            return {k: 0 for k in HOP_KEYS}
        start, end = self._report
        rows = self._samples.slice(start, end - start)
        cols = {c: rows.column(c).to_numpy() for c in {s for pair in HOP_STAMPS.values() for s in pair}}
        return {k: int(np.count_nonzero((cols[a] == 0) | (cols[b] == 0))) for k, (a, b) in HOP_STAMPS.items()}

    def lines(self) -> list[dict[str, Any]]:
        """Each line's last ingest row; rates are the run's averages over the replay's span
        (its first send to its end, ``meta`` started_ns / ended_ns): the collector's last row
        comes after the pipeline drained and stopped, and counting that tail as sending time
        made a run that kept its schedule read several percent short of its target."""
        if self._ingest is None or self._ingest.num_rows == 0:
            return []
        d = self._ingest.sort_by([("line", "ascending"), ("ts_ns", "ascending")]).to_pylist()
        last = {row["line"]: row for row in d}
        started, ended = int(self.meta["started_ns"]), int(self.meta["ended_ns"])
        rows = []
        for line, r in sorted(last.items()):
            row = {"line": int(line), "state": "closed", "pid": 0, "updated_ns": int(r["ts_ns"])}
            row.update({k: int(r[k]) for k in LINE_COUNTER_NAMES})
            until = min(int(r["ts_ns"]), ended) if ended > started else int(r["ts_ns"])
            span = (until - started) / 1e9 if started else 0.0
            row["packets_per_s"] = r["packets_received"] / span if span > 0 else None
            row["messages_per_s"] = r["messages_received"] / span if span > 0 else None
            rows.append(row)
        return rows

    def ingest_history(self, seconds: int) -> list[dict[str, Any]]:
        """Per ingest.parquet interval of the last ``seconds`` seconds: rates over all lines."""
        if self._ingest is None or self._ingest.num_rows == 0:
            return []
        d = self._ingest.group_by("ts_ns").aggregate(
            [(k, "sum") for k in ("packets_received", "messages_received", "messages_missed")]
        ).sort_by("ts_ns").to_pydict()
        prev = (int(self.meta["started_ns"]) or d["ts_ns"][0], 0, 0)
        out = []
        for ts, pk, msg, missed in zip(d["ts_ns"], d["packets_received_sum"], d["messages_received_sum"],
                                       d["messages_missed_sum"]):
            dt = (ts - prev[0]) / 1e9
            if dt > 0:
                out.append({"ts_ns": int(ts), "packets_per_s": (pk - prev[1]) / dt,
                            "messages_per_s": (msg - prev[2]) / dt, "messages_missed": int(missed)})
            prev = (ts, pk, msg)
        return [p for p in out if p["ts_ns"] > self._end_ns - seconds * 1_000_000_000]

    def operators(self) -> list[dict[str, Any]]:
        if not self.run_json:
            return []
        cpus = {p["name"]: (p.get("cpus") or [-1])[0] for p in (self.plan or {}).get("partitions", [])}
        rows = []
        for pname, part in (self.run_json.get("partitions") or {}).items():
            report = part.get("report") or {}
            base = {"cpu": cpus.get(pname, -1), "pid": int(part.get("pid") or 0), "state": "closed",
                    "updated_ns": self._end_ns, "process_cpu_percent": None}
            for kind, entries in (("operator", report.get("operators") or {}), ("channel", report.get("channels") or {})):
                for name, counters in entries.items():
                    ints = {k: int(v) for k, v in counters.items() if isinstance(v, int) and not isinstance(v, bool)}
                    label = name if kind == "operator" else f"{name} @ {pname}"
                    rows.append({"name": label, "kind": kind, **base, "counters": ints, "rates": {k: None for k in ints}})
        return rows

    def signals(self, limit: int) -> list[dict[str, Any]]:
        if self._signals is None or limit <= 0:
            return []
        t = self._signals.sort_by([("ts_ns", "descending")]).slice(0, limit).to_pydict()
        return [{"ts_ns": int(t["ts_ns"][i]), "engine": int(t["engine"][i]), "kind": t["kind"][i],
                 "series": series_label(t["root"][i], int(t["expiry"][i]), t["put_call"][i], int(t["strike_px"][i])),
                 "value": float(t["value"][i])} for i in range(len(t["ts_ns"]))]

    def signals_total(self) -> int:
        return 0 if self._signals is None else self._signals.num_rows

    def verdict(self) -> Verdict | None:
        """The run's verdict from its records, as ``omdp runs show`` and the nightly job judge it."""
        if self._verdict is None and self._samples is not None:
            try:
                self._verdict = read_verdict(self.run_dir)
            except RunRecordError:
                return None
        return self._verdict

    def run_status(self) -> dict[str, Any]:
        m = self.meta
        knobs = json.loads(m["knobs_json"]) if m["knobs_json"] else {}
        state = (self.run_json or {}).get("status") or "done"
        return {
            "state": state, "topology": m["topology"], "config": m["config"], "run_dir": str(self.run_dir),
            "knobs": knobs, "target_pps": m["target_pps"] or None, "achieved_pps": m["achieved_pps"] or None,
            "sample_every": int(m["sample_every"]) or None, "messages_per_packet": m["messages_per_packet"] or None,
            "started_ns": int(m["started_ns"]), "ended_ns": self._end_ns, "heartbeat_ns": None, "pid": None,
            "plan": self.plan,
        }
