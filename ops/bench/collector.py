"""``omdp bench collector``: the latency collector's cost per sampled record, and the cost of
reading the stats segment the way the dashboard does.

Collector: batches of records whose stamp blocks are filled, every record flagged as
sampled (so each one pays the full path: six hops, histogram updates, one sample row and
identity extraction), collected through the Python API (one C call per batch, clock read
once per batch), with and without live publication to a stats segment; and the cost per
record walked when 1 in 1,600 is sampled (what the collector pays for forwarded records it
does not sample). Reader: a StatsReader in this process over a segment whose per-second ring
holds 60 populated seconds. Figures are medians (and p90) over repeated timed runs.

The command line is ``ops/cli/bench/collector.py``; this module only measures.
"""
from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from omdp.clock import now_ns
from omdp.metrics.definitions import HOP_KEYS
from omdp.metrics.histogram import LatencyHistogram
from omdp.metrics.latency_collector import LatencyCollector
from omdp.metrics.sample_identity import IdentityLayout
from omdp.metrics.stats_segment import StatsReader, StatsWriter
from omdp.record import RECORD_HEADER_DTYPE, RF_SAMPLED
from omdp.runtime.machine import machine_info


def bench_record_dtype(record_bytes: int) -> np.dtype:
    """A generic record: the omdp header, identity-like fields, padding to record_bytes."""
    pad = record_bytes - RECORD_HEADER_DTYPE.itemsize - 24
    if pad < 0 or record_bytes % 8:
        raise ValueError(f"record size must be a multiple of 8 and >= {RECORD_HEADER_DTYPE.itemsize + 24}")
    return np.dtype([("hdr", RECORD_HEADER_DTYPE), ("seq", "<u8"), ("key", "<u4"), ("line", "<u2"),
                     ("category", "u1"), ("flag", "u1"), ("sub", "<u8"), ("pad", "u1", (pad,))])


def make_batch(n: int, record_bytes: int, sample_every: int, rng: np.random.Generator) -> np.ndarray:
    """n records with realistic stamp gaps (a few us per hop), 1 in sample_every flagged."""
    dt = bench_record_dtype(record_bytes)
    b = np.zeros(n, dtype=dt)
    b["hdr"]["type"] = 3
    b["hdr"]["length"] = dt.itemsize
    b["hdr"]["flags"][::sample_every] = RF_SAMPLED
    t = now_ns() - 50_000
    hops = rng.integers(200, 5_000, size=(n, 4))
    st = b["hdr"]["stamps"]
    st["intended"] = t
    st["fh_in"] = t + rng.integers(0, 2_000, size=n)
    st["fh_out"] = st["fh_in"] + hops[:, 0]
    st["de_in"] = st["fh_out"] + hops[:, 1]
    st["de_out"] = st["de_in"] + hops[:, 2]
    b["seq"] = np.arange(n)
    b["key"] = rng.integers(0, 3000, size=n)
    b["line"] = rng.integers(0, 24, size=n)
    return b


def _quantiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values)
    return {"median": float(np.median(arr)), "p90": float(np.percentile(arr, 90)), "min": float(arr.min())}


def time_collect(batch: np.ndarray, batches: int, stats: StatsWriter | None, sample_every: int) -> dict[str, Any]:
    """ns per record (and per sample) of collect() over `batches` calls on one batch."""
    identity = IdentityLayout.from_dtype(batch.dtype, line="line", block_seq="seq", msg_seq="sub", key="key",
                                         category="category")
    collector = LatencyCollector(stats=stats, identity=identity, max_rows=batches * len(batch),
                                 name=f"bench-collector-{uuid.uuid4().hex[:8]}")
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        collector.collect(batch, source=1)
        per_call.append(time.perf_counter_ns() - t0)
    samples_per_batch = (len(batch) + sample_every - 1) // sample_every
    c = collector.counters()
    collector.close()
    q = _quantiles(per_call)
    return {
        "records_per_batch": len(batch),
        "samples_per_batch": samples_per_batch,
        "batches": batches,
        "ns_per_batch": q,
        "ns_per_record": {k: v / len(batch) for k, v in q.items()},
        "ns_per_sample": {k: v / samples_per_batch for k, v in q.items()},
        "samples": c["samples"],
        "publishes": c["publishes"],
    }


def _time_call(fn: Callable[[], Any], repeats: int) -> dict[str, float]:
    per = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        per.append((time.perf_counter_ns() - t0) / 1e3)
    return _quantiles(per)


def time_reader(repeats: int, rng: np.random.Generator) -> dict[str, Any]:
    """us per StatsReader call on a segment with 60 populated seconds, 24 lines, 64 operators."""
    run_id = f"bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with StatsWriter.create(run_id) as w:
        now = now_ns()
        sec = now // 1_000_000_000
        for s in range(sec - 59, sec + 1):
            hists = {k: LatencyHistogram.of(rng.lognormal(8.5, 0.6, 2_000).astype(np.int64)) for k in HOP_KEYS}
            w.publish_latency_second(s, hists)
        w.publish_latency_total(hists)
        for line in range(24):
            w.publish_line(line, packets_received=1000, messages_received=5000)
        for i in range(64):
            w.register_operator(f"op{i}", "operator", ["messages", "bytes", "full_ring", "spins"]).publish([1, 2, 3, 4])
        for i in range(300):
            w.push_signal("crossed", f"SER{i}", 0.01 * i, engine=i % 8)
        with StatsReader(run_id) as r:
            calls: dict[str, Callable[[], Any]] = {
                "latency_window_10s": lambda: r.latency(10, now),
                "latency_histograms_10s": lambda: r.latency_histograms(10, now),
                "latency_cumulative": lambda: r.latency(None),
                "latency_history_60s": lambda: r.latency_history(60, now),
                "ingest_24_lines": r.ingest,
                "operators_64": r.operators,
                "signals_100": lambda: r.signals(100),
                "run_info": r.run_info,
            }
            return {name: _time_call(fn, repeats) for name, fn in calls.items()}


def run_collector_bench(batch_records: int, batches: int, record_bytes: int, repeats: int) -> dict[str, Any]:
    """Every figure of the benchmark as one dict."""
    rng = np.random.default_rng(7)
    all_sampled = make_batch(batch_records, record_bytes, 1, rng)
    paper_rate = make_batch(batch_records, record_bytes, 1600, rng)
    run_id = f"bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    with StatsWriter.create(run_id) as w:
        with_stats = time_collect(all_sampled, batches, w, 1)
    return {
        "benchmark": "collector",
        "machine": machine_info(),
        "record_bytes": record_bytes,
        "collector_all_sampled_no_stats": time_collect(all_sampled, batches, None, 1),
        "collector_all_sampled_with_stats": with_stats,
        "collector_1_in_1600": time_collect(paper_rate, batches, None, 1600),
        "collector_one_record_batch": time_collect(all_sampled[:1].copy(), batches, None, 1),
        "stats_reader_us": time_reader(repeats, rng),
    }
