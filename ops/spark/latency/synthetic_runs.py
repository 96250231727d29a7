"""Write run directories (``runs/<date>/<run_id>/``) with the run record contract from a
latency model, for the benchmark and the tests of the nightly latency job.

Every packet the replayer would send is planned at a steady rate across the lines; each hop
adds a log-normal delay; an overloaded run (``backlog_ns_per_s`` > 0) adds a queueing delay
that grows through the run, as a pipeline that cannot keep up does. Samples are 1 in
``sample_every`` messages, as the latency collector takes them.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from omdp.metrics.run_records import (
    RUN_INGEST_SCHEMA,
    RUN_INTENDED_SCHEMA,
    RUN_META_SCHEMA,
    RUN_SAMPLES_SCHEMA,
    RUN_SIGNALS_SCHEMA,
)

ONE_X_PPS = 24_000.0
"""The paper's unit: 1x = 24,000 packets/s summed over all lines."""

DEFAULT_HOP_MEDIANS_NS = {"wire": 4_000.0, "fh": 2_500.0, "to_de": 400.0, "de": 1_200.0, "to_mc": 350.0}
DEFAULT_HOP_SIGMA = 0.45


@dataclass(frozen=True)
class SyntheticRun:
    """What one run looks like: identity, rate, its loss, and its hop delays."""

    run_id: str
    date: str
    rate_x: float
    duration_s: float = 1.0
    sweep_id: str = ""
    topology: str = "fused.toml"
    config: str = "fused"
    lines: int = 4
    messages_per_packet: float = 6.0
    sample_every: int = 1600
    achieved_ratio: float = 1.0
    missed_ratio: float = 0.0
    backlog_ns_per_s: float = 0.0
    hop_medians_ns: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_HOP_MEDIANS_NS))
    hop_sigma: float = DEFAULT_HOP_SIGMA
    started_ns: int = 1_000_000_000_000
    seed: int = 1

    @property
    def target_pps(self) -> float:
        """Packets/s asked of the replayer over all lines."""
        return self.rate_x * ONE_X_PPS


def _lognormal(rng: np.random.Generator, median: float, sigma: float, n: int) -> np.ndarray:
    return np.rint(median * np.exp(sigma * rng.standard_normal(n))).astype(np.int64)


def write_synthetic_run(runs_dir: Path, run: SyntheticRun) -> Path:
    """Write ``runs_dir/<run_id>/`` (plan.json and the five Parquet files); return it."""
    rng = np.random.default_rng(run.seed)
    out = runs_dir / run.run_id
    out.mkdir(parents=True, exist_ok=True)

    achieved_pps = run.target_pps * run.achieved_ratio
    packets = max(1, int(round(achieved_pps * run.duration_s)))
    interval_ns = 1e9 / run.target_pps
    intended = run.started_ns + np.rint(np.arange(packets) * interval_ns).astype(np.int64)
    line = (np.arange(packets) % run.lines + 1).astype(np.uint16)
    block_seq = (np.arange(packets) // run.lines + 1).astype(np.uint64)
    msgs = np.maximum(1, rng.poisson(run.messages_per_packet - 1, packets) + 1).astype(np.uint16)
    sent = intended + _lognormal(rng, 300.0, 0.6, packets)
    # Pacing falls behind when the replayer cannot achieve the target: spread the lag.
    if run.achieved_ratio < 1.0:
        sent = sent + np.rint((np.arange(packets) * interval_ns) * (1 / run.achieved_ratio - 1)).astype(np.int64)
    sent_b = sent + _lognormal(rng, 150.0, 0.5, packets)
    pq.write_table(
        pa.table(
            {
                "line": np.concatenate([line, line]),
                "block_seq": np.concatenate([block_seq, block_seq]),
                "copy": pa.array(["A"] * packets + ["B"] * packets, pa.string()),
                "intended_ns": np.concatenate([intended, intended]),
                "sent_ns": np.concatenate([sent, sent_b]),
                "messages": np.concatenate([msgs, msgs]),
            },
            schema=RUN_INTENDED_SCHEMA,
        ),
        out / "intended.parquet",
    )

    messages_sent = int(msgs.sum(dtype=np.int64))
    messages_missed = int(round(messages_sent * run.missed_ratio))
    # Sample every sample_every-th message; a message carries its packet's stamps.
    first_msg = np.concatenate([[0], np.cumsum(msgs[:-1], dtype=np.int64)])
    sampled_msg = np.arange(rng.integers(0, run.sample_every), messages_sent, run.sample_every)
    pkt = np.searchsorted(first_msg, sampled_msg, side="right") - 1
    n = len(pkt)
    h = run.hop_medians_ns
    elapsed_s = (intended[pkt] - run.started_ns) / 1e9
    fh_in = sent[pkt] + _lognormal(rng, h["wire"], run.hop_sigma, n)
    fh_in = fh_in + np.rint(run.backlog_ns_per_s * elapsed_s).astype(np.int64)
    fh_out = fh_in + _lognormal(rng, h["fh"], run.hop_sigma, n)
    de_in = fh_out + _lognormal(rng, h["to_de"], run.hop_sigma, n)
    de_out = de_in + _lognormal(rng, h["de"], run.hop_sigma, n)
    mc_in = de_out + _lognormal(rng, h["to_mc"], run.hop_sigma, n)
    pq.write_table(
        pa.table(
            {
                "line": line[pkt],
                "block_seq": block_seq[pkt],
                "msg_seq": (sampled_msg + 1).astype(np.uint64),
                "engine": (rng.integers(0, 2, n)).astype(np.uint16),
                "underlying_id": rng.integers(0, 500, n).astype(np.uint32),
                "category": np.full(n, ord("k"), np.uint8),
                "intended": intended[pkt],
                "fh_in": fh_in,
                "fh_out": fh_out,
                "de_in": de_in,
                "de_out": de_out,
                "mc_in": mc_in,
            },
            schema=RUN_SAMPLES_SCHEMA,
        ),
        out / "samples.parquet",
    )

    seconds = max(1, int(np.ceil(run.duration_s)))
    ends = run.started_ns + np.arange(1, seconds + 1, dtype=np.int64) * 1_000_000_000
    ing_rows: dict[str, list] = {k: [] for k in RUN_INGEST_SCHEMA.names}
    for ln in range(1, run.lines + 1):
        mine = line == ln
        upto = np.searchsorted(intended[mine], ends, side="left")
        msgs_upto = np.concatenate([[0], np.cumsum(msgs[mine], dtype=np.int64)])[upto]
        ing_rows["ts_ns"] += ends.tolist()
        ing_rows["line"] += [ln] * seconds
        ing_rows["packets_received"] += upto.tolist()
        ing_rows["messages_received"] += msgs_upto.tolist()
        ing_rows["messages_missed"] += [int(round(messages_missed / run.lines * (s + 1) / seconds)) for s in range(seconds)]
        ing_rows["packets_duplicate"] += upto.tolist()
        ing_rows["decode_errors"] += [0] * seconds
    pq.write_table(pa.table(ing_rows, schema=RUN_INGEST_SCHEMA), out / "ingest.parquet")

    k = min(n, 8)
    pq.write_table(
        pa.table(
            {
                "ts_ns": de_out[:k],
                "engine": np.zeros(k, np.uint16),
                "line": line[pkt][:k],
                "msg_seq": (sampled_msg[:k] + 1).astype(np.uint64),
                "underlying_id": np.zeros(k, np.uint32),
                "root": pa.array(["IBM"] * k),
                "expiry": np.full(k, 20080315, np.uint32),
                "strike_px": np.full(k, 120 * 1_000_000_000, np.int64),
                "put_call": pa.array(["C"] * k),
                "kind": pa.array(["crossed", "off_smile"] * (k // 2) + ["locked"] * (k % 2)),
                "value": np.linspace(0.01, 0.08, k),
            },
            schema=RUN_SIGNALS_SCHEMA,
        ),
        out / "signals.parquet",
    )

    meta = {
        "run_id": run.run_id,
        "sweep_id": run.sweep_id,
        "date": run.date,
        "capture_date": "2008-02-04",
        "topology": run.topology,
        "config": run.config,
        "knobs_json": json.dumps({"queue_size": 32, "mutex": False, "wait": "spin"}),
        "target_pps": run.target_pps,
        "achieved_pps": achieved_pps,
        "rate_x": run.rate_x,
        "messages_per_packet": messages_sent / packets,
        "packets_sent": packets,
        "messages_sent": messages_sent,
        "messages_processed": messages_sent - messages_missed,
        "messages_missed": messages_missed,
        "sample_every": run.sample_every,
        "started_ns": run.started_ns,
        "ended_ns": int(mc_in.max()) if n else run.started_ns,
        "host": "synthetic",
        "cpu_model": "synthetic",
        "clock_offset_error_ns": 0,
    }
    pq.write_table(pa.table({k: [v] for k, v in meta.items()}, schema=RUN_META_SCHEMA), out / "meta.parquet")
    plan = {"run_id": run.run_id, "synthetic": asdict(run)}
    (out / "plan.json").write_text(json.dumps(plan, indent=2) + "\n")
    return out
