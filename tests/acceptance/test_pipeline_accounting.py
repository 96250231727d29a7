"""The OPRA pipeline end to end on a short capture, fused and split over vega-shm: one lap
replayed into the feed handler's ring, every message accounted for.

decoded = routed = processed (each message once, to the engine of its underlying); sampled
= processed / N per engine and every sample reached the latency collector; sampled records
carry monotonic stamps; the engines' NBBO agrees with the feed's BBO appendages (one lap:
the books start empty as the capture does); the run directory holds its records; nothing
is left behind.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from pipeline_support import CAPTURE_DATE, alive, leftovers, line_packets
from replay_support import realtime_refusal

from omdp.metrics.run_files import read_run_file
from omdp.record import HOPS
from ops.pipeline.assemble import RunOptions
from ops.pipeline.run_pipeline import plan_pipeline, run_pipeline
from ops.topologies import topology_path

SAMPLE_EVERY = 64


def one_lap(topology: str, data: Path, rate: str = "4x", overrides: tuple[str, ...] = (), **kw: object) -> object:
    pp = plan_pipeline(topology_path(topology), data, CAPTURE_DATE,
                       RunOptions(rate=rate, seconds=None, loop=False, sample_every=SAMPLE_EVERY, **kw), overrides)
    return run_pipeline(pp, data)


@pytest.mark.parametrize("topology", ["opra_fused", "opra_split_vega"])
def test_every_message_is_accounted_for(topology: str, data_dir: Path) -> None:
    # Small chunks: the collector's rows leave the C loop and reach samples.parquet as the run goes.
    run = one_lap(topology, data_dir, overrides=("operators.lc.params.chunk_rows=256",))
    assert run.result.ok, run.result.failure
    a = run.accounting
    lines = line_packets(data_dir / "captures" / CAPTURE_DATE)
    in_capture = sum(int(lp.counts.sum()) for lp in lines.values())
    assert a.messages_received == a.routed == a.processed == in_capture
    assert a.messages_missed == 0 and a.decode_errors == 0 and a.unknown_root == 0
    for name, e in a.engines.items():
        assert e["sampled"] == e["processed"] // SAMPLE_EVERY, name
    assert a.collected == a.sampled > 0
    assert a.bbo_checked > 0 and a.bbo_mismatches == 0

    samples = read_run_file(run.run_dir, "samples.parquet")
    assert samples.num_rows == a.collected
    assert pq.ParquetFile(run.run_dir / "samples.parquet").num_row_groups > 1, "the rows did not leave the loop in chunks"
    st = np.stack([samples.column(h).to_numpy() for h in HOPS])
    assert (st > 0).all(), "a sample lacks a stamp"
    assert (np.diff(st, axis=0) >= 0).all(), "stamps out of order (intended <= fh_in <= ... <= mc_in)"

    assert run.breakdown is not None and run.breakdown.hops["e2e"]["count"] == a.collected
    for f in ("meta.parquet", "intended.parquet", "ingest.parquet", "signals.parquet", "plan.json", "run.json"):
        assert (run.run_dir / f).is_file(), f
    assert pq.read_table(run.run_dir / "intended.parquet").num_rows == sum(len(lp.payloads) for lp in lines.values())
    ingest = read_run_file(run.run_dir, "ingest.parquet").to_pandas()
    final = ingest.sort_values("ts_ns").groupby("line").last()
    assert sorted(final.index) == sorted(lines)
    assert int(final["messages_received"].sum()) == in_capture and int(final["messages_missed"].sum()) == 0
    meta = read_run_file(run.run_dir, "meta.parquet").to_pylist()[0]
    assert meta["messages_processed"] == in_capture and meta["sample_every"] == SAMPLE_EVERY

    # The sender stands in for the exchange: real-time where this user may, and the summary says so.
    assert run.replay.senders == 1
    if realtime_refusal() is None:
        assert run.replay.senders_realtime == 1 and "sender(s) SCHED_FIFO (1)" in run.text()
    else:
        assert run.replay.senders_realtime == 0 and "ordinary tasks" in run.text()

    assert not leftovers(run.result.run_id)
    for p in json.loads((run.run_dir / "processes.json").read_text()).values():
        assert not alive(p["pid"])


def test_the_report_says_how_pricing_went(data_dir: Path) -> None:
    """The engines' pricing refreshes are counted into the report: published, their time,
    the series priced again; none failed. A refresh publishes whatever its engine's snapshot
    holds, empty too (on a loaded machine every published refresh may come before the lap's
    first quote); once a snapshot holds series, the first refresh to see them prices them, so
    series were priced again exactly when the snapshots held any."""
    run = one_lap("opra_fused", data_dir, rate="1x", overrides=("operators.de.params.pricing_period_s=0.05",))
    assert run.result.ok, run.result.failure
    a = run.accounting
    assert a.pricing_published >= 2 and a.pricing_failures == 0 and a.pricing_last_error == ""
    assert a.pricing_us > 0 and 0 < a.pricing_cpu_us <= a.pricing_us + a.pricing_published  # (rounding)
    assert 0 <= a.pricing_repriced <= a.pricing_series
    assert (a.pricing_repriced > 0) == (a.pricing_series > 0), (a.pricing_repriced, a.pricing_series)
    assert run.to_dict()["accounting"]["pricing_published"] == a.pricing_published
    line = next(ln for ln in run.text().splitlines() if ln.startswith("pricing: "))
    assert f"{a.pricing_published:,} refreshes published (mean " in line and " ms of CPU; " in line and ", 0 failed" in line


def test_batching_across_packets_changes_no_result(data_dir: Path) -> None:
    """The same capture with the feed handler's batching across packets off (cap 1 packet)
    and on (the default): the same signals and the same NBBO agreement, every message
    accounted for, and the batch sizes reported. No pricing refresh within the lap: when one
    lands differs between runs, and an off-smile quote is not reported crossed or locked."""
    runs = {}
    for cap in (1, 16):  # off, and a cap above the default (4)
        pp = plan_pipeline(topology_path("opra_fused"), data_dir, CAPTURE_DATE,
                           RunOptions(rate="4x", seconds=None, loop=False, sample_every=SAMPLE_EVERY),
                           (f"operators.fh.params.coalesce_packets={cap}", "operators.de.params.pricing_period_s=600"))
        run = run_pipeline(pp, data_dir)
        assert run.result.ok, run.result.failure
        assert run.accounting.balanced and run.accounting.bbo_mismatches == 0
        b = run.batching
        assert b is not None and b.cap_packets == cap and b.packets == run.accounting.packets_received
        assert b.messages == run.accounting.messages_received and 1 <= b.packets_max <= cap
        d = run.to_dict()
        assert d["batching"]["packets_mean"] == b.packets_mean
        assert all(c["cpu_ns"] > 0 and c["cpu_ns_per_packet"] > 0 for c in d["cpu"].values())
        # the work of a packet is part of its CPU: a spinning partition's idle polls left out
        assert all(c["work_ns_per_packet"] <= c["cpu_ns_per_packet"] for c in d["cpu"].values())
        assert 0 < d["cpu"]["app"]["work_ns_per_packet"] < d["cpu"]["app"]["cpu_ns_per_packet"]  # 4x: mostly idle
        assert "cpu: partition" in run.text() and "batches to the engines" in run.text()
        # how often each loop lost its core to another thread: counted for every partition
        assert all(isinstance(c["preempted"], int) and c["preempted"] >= 0 for c in d["cpu"].values())
        assert ", preempted " in run.text()
        # the replayer's own lag, part of the latency from intended, is said beside the feed rate
        assert run.replay.pacing_p99_ns is not None and "after their intended time" in run.text()
        runs[cap] = run
    off, on = runs[1], runs[16]
    assert off.accounting.bbo_checked == on.accounting.bbo_checked > 0
    assert off.accounting.signals == on.accounting.signals
    cols = ["engine", "line", "msg_seq", "underlying_id", "root", "expiry", "strike_px", "put_call", "kind", "value"]
    sig = [read_run_file(r.run_dir, "signals.parquet").select(cols).to_pandas()
           .sort_values(["engine", "line", "msg_seq", "kind"]).reset_index(drop=True) for r in (off, on)]
    assert sig[0].equals(sig[1])
