"""The latency breakdown of a run as text: the paper's Figure 6, hop by hop.

Per hop: sample count, mean, p50, p90, p99, p99.9, p99.99 and max, each in the unit that
reads best (``omdp.units``: 12.3 us, 4.31 s; n/a
where a tail has fewer than 10 / (1 - p) samples), the share of each hop in the summed
mean, then the missed-message ratio and the achieved vs target rate. ``omdp run`` and
``omdp demo`` print it from the live collector; ``omdp runs show`` rebuilds it from a run
directory's records with the same C arithmetic.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from omdp.metrics.definitions import COMPONENT_HOPS, HOP_DEFINITIONS, HOP_KEYS, HOP_LABELS
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_summary import PERCENTILES, HopSummary, percentile_field, summarize_hops
from omdp.metrics.run_files import RunRecordError, read_meta, read_run_file
from omdp.native import ffi, lib
from omdp.record import HOPS
from omdp.units import fmt_ns, fmt_us

BASE_PPS = 24_000.0
"""1x: the February 2008 OPRA rate in packets/s over all lines (docs/architecture.md)."""



@dataclass
class Breakdown:
    """Everything the breakdown table prints; plain data (``to_dict`` for JSON)."""

    hops: dict[str, HopSummary]
    sample_every: int | None = None
    method: str = "all"
    samples_total: int | None = None          # samples taken, including any not reported
    messages_sent: int | None = None
    messages_missed: int | None = None
    target_pps: float | None = None
    achieved_pps: float | None = None
    messages_per_packet: float | None = None
    clock_offset_error_ns: int | None = None  # stated error of cross-host stamps (0: one clock)
    title: str = ""

    @classmethod
    def from_histograms(cls, hists: Mapping[str, LatencyHistogram], **fields: Any) -> Breakdown:
        """A breakdown of per-hop histograms plus the run figures given as fields."""
        return cls(hops=summarize_hops(dict(hists)), **fields)

    @classmethod
    def from_run_dir(cls, run_dir: str | Path) -> Breakdown:
        """Rebuild a finished run's breakdown from meta.parquet, samples.parquet and, when the
        meta lacks message counts, ingest.parquet."""
        run_dir = Path(run_dir)
        meta = read_meta(run_dir)
        samples = read_run_file(run_dir, "samples.parquet")
        md = {k.decode(): v.decode() for k, v in (samples.schema.metadata or {}).items()}
        start, end = report_rows(md, samples.num_rows)
        hists = hop_histograms_from_table(samples, start, end)
        sent, missed = int(meta["messages_sent"]), int(meta["messages_missed"])
        if sent == 0 and (run_dir / "ingest.parquet").is_file():
            sent, missed = _ingest_totals(read_run_file(run_dir, "ingest.parquet"))
        return cls.from_histograms(
            hists,
            sample_every=int(meta["sample_every"]),
            method=md.get("omdp.sample_method", "all"),
            samples_total=int(md["omdp.samples"]) if "omdp.samples" in md else samples.num_rows,
            messages_sent=sent,
            messages_missed=missed,
            target_pps=float(meta["target_pps"]),
            achieved_pps=float(meta["achieved_pps"]),
            messages_per_packet=float(meta["messages_per_packet"]),
            clock_offset_error_ns=int(meta["clock_offset_error_ns"]),
            title=f"run {meta['run_id']} ({meta['topology']}, {meta['config']}, capture {meta['capture_date']})",
        )

    @property
    def missed_ratio(self) -> float | None:
        """Missed / sent messages; None when unknown."""
        if not self.messages_sent:
            return None
        return (self.messages_missed or 0) / self.messages_sent

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON output, with the missed ratio."""
        d = asdict(self)
        d["missed_ratio"] = self.missed_ratio
        return d


def report_rows(md: Mapping[str, str], rows: int) -> tuple[int, int]:
    """Rows [start, end) of a samples file the run's report used (metadata ``omdp.report_rows``)."""
    text = md.get("omdp.report_rows")
    if not text:
        return 0, rows
    try:
        start, end = (int(x) for x in text.split(":"))
    except ValueError as e:
        raise RunRecordError("samples.parquet", f"metadata omdp.report_rows={text!r} is not 'start:end'") from e
    if not 0 <= start <= end <= rows:
        raise RunRecordError("samples.parquet", f"report rows {start}:{end} outside the file's {rows} rows")
    return start, end


def _ingest_totals(ingest: pa.Table) -> tuple[int, int]:
    """Sent = received + missed, from each line's last row."""
    if ingest.num_rows == 0:
        return 0, 0
    d = ingest.select(["ts_ns", "line", "messages_received", "messages_missed"]).to_pydict()
    last: dict[int, tuple[int, int, int]] = {}
    for ts, line, rec, mis in zip(d["ts_ns"], d["line"], d["messages_received"], d["messages_missed"]):
        if line not in last or ts >= last[line][0]:
            last[line] = (ts, rec, mis)
    received = sum(v[1] for v in last.values())
    missed = sum(v[2] for v in last.values())
    return received + missed, missed


def hop_histograms_from_table(samples: pa.Table, start: int = 0, end: int | None = None) -> dict[str, LatencyHistogram]:
    """Per-hop histograms of rows [start, end) of a samples table (C, same arithmetic as live)."""
    end = samples.num_rows if end is None else end
    cols = ffi.new("omdp_sample_columns_t *")
    keep = []
    for h in HOPS:
        arr = np.ascontiguousarray(samples.column(h).to_numpy(zero_copy_only=False), dtype=np.int64)
        keep.append(arr)
        setattr(cols, h, ffi.from_buffer("int64_t[]", arr) if len(arr) else ffi.NULL)
    cols.rows = samples.num_rows
    hists = ffi.new("omdp_hist_t[]", len(HOP_KEYS))
    for i in range(len(HOP_KEYS)):
        lib.omdp_hist_init(hists + i)
    rc = lib.omdp_latency_hists_from_columns(cols, start, end, hists, ffi.NULL)
    if rc != 0:
        raise ValueError(f"rows {start}:{end} of a {samples.num_rows}-row samples table")
    return {k: LatencyHistogram(hists + i) for i, k in enumerate(HOP_KEYS)}


def _share_bars(hops: Mapping[str, HopSummary], width: int) -> dict[str, str]:
    means = {h.key: hops[h.key]["mean_us"] for h in COMPONENT_HOPS}
    total = sum(v for v in means.values() if v)
    if not total:
        return {}
    out = {}
    for k, v in means.items():
        frac = (v or 0.0) / total
        out[k] = f"{'#' * round(frac * width):<{width}} {frac:6.1%}"
    return out


def headline(b: Breakdown) -> list[str]:
    """The run's latency first: end to end from ``intended`` (the replayer's planned send:
    coordinated-omission-safe, a stalled pipeline cannot hide its queue) beside end to end
    from ``fh_in``, and what the difference between them is."""
    hi, hf = b.hops["e2e_intended"], b.hops["e2e"]
    return [f"latency end to end, from intended: p50 {fmt_us(hi['p50_us'])}, p99 {fmt_us(hi['p99_us'])}"
            f" | from fh_in: p50 {fmt_us(hf['p50_us'])}, p99 {fmt_us(hf['p99_us'])}",
            "  (from intended counts from the planned send time, so it is safe from coordinated omission; "
            "the difference is queueing before the feed handler: replayer lag, ring or socket queue)"]


def format_breakdown(b: Breakdown, bar_width: int = 20) -> str:
    """The title, the headline (latency from intended beside from fh_in), then the table, one
    line per hop, then the run's ingest and rate."""
    lines = []
    sampling = f"1 in {b.sample_every:,} messages sampled" if b.sample_every else "sampling unknown"
    reported = b.hops["e2e"]["count"]
    method = "all samples" if b.method == "all" else "middle samples of the collection (the paper's method)"
    head = f"Latency breakdown: {sampling}; {reported:,} samples reported, {method}"
    if b.samples_total is not None and b.samples_total != reported:
        head += f", of {b.samples_total:,} taken"
    if b.title:
        lines.append(b.title)
    lines += headline(b)
    lines.append(head)
    cols = ["count", "mean"] + [n for n, _ in PERCENTILES] + ["max"]
    label_w = max(len(v) for v in HOP_LABELS.values())
    lines.append(f"{'hop':<{label_w}}  " + " ".join(f"{c:>10}" for c in cols) + "  share of mean")
    bars = _share_bars(b.hops, bar_width)
    for k in HOP_KEYS:
        s = b.hops[k]
        vals = [f"{s['count']:,}", fmt_us(s["mean_us"])]
        vals += [fmt_us(s[percentile_field(n)]) for n, _ in PERCENTILES]  # type: ignore[literal-required]
        vals.append(fmt_us(s["max_us"]))
        lines.append(f"{HOP_LABELS[k]:<{label_w}}  " + " ".join(f"{v:>10}" for v in vals) + f"  {bars.get(k, '')}".rstrip())
    lines.append("hops: " + "; ".join(f"{HOP_LABELS[k]} = {HOP_DEFINITIONS[k]}" for k in HOP_KEYS[:4])
                 + ". n/a: fewer than 10/(1-p) samples for percentile p.")
    if b.missed_ratio is not None:
        lines.append(f"missed: {b.messages_missed or 0:,} of {b.messages_sent:,} messages ({b.missed_ratio:.4%})")
    else:
        lines.append("missed: unknown (no message counts)")
    lines.append(_rate_line(b))
    if b.clock_offset_error_ns:
        lines.append(f"clocks: hosts' stamps corrected to the collector's host; a cross-host hop carries up to "
                     f"+-{fmt_ns(b.clock_offset_error_ns)} of clock offset error (estimated, see clocks.json)")
    elif b.clock_offset_error_ns == 0:
        lines.append("clocks: every stamp from one clock (no cross-host error)")
    return "\n".join(lines)


def _rate_line(b: Breakdown) -> str:
    if not b.target_pps:
        return "rate: unknown (no target)"
    text = f"rate: target {b.target_pps:,.0f} packets/s ({b.target_pps / BASE_PPS:.2f}x)"
    if b.achieved_pps is not None:
        # The target is the capture's mean rate scaled; a run that ends partway through a lap
        # has the packets its schedule made due, more or fewer than the mean by where the
        # capture's peaks fall: whether the schedule was kept is the replayer's own figure.
        text += f", achieved {b.achieved_pps:,.0f} packets/s ({b.achieved_pps / b.target_pps:.3%} of the target's mean)"
        if b.messages_per_packet:
            text += f"; {b.achieved_pps * b.messages_per_packet:,.0f} messages/s at {b.messages_per_packet:.2f} messages/packet"
    return text
