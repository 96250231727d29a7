"""``omdp bench market-state``: the CPU the market statistics cost per message, shared state
(partial state, deltas at window ends) against the re-partitioning baseline (every update
routed to its leader), at several partition counts and key skews, on one synthetic stream
(ops.market.stream). The C loop (omdp_market_bench_run) feeds the operators directly:
what it times is the operators' own work, with no transport - the baseline's ring puts (one
per 64 routed updates) and the receiving partition's polls come on top, so the baseline's
figure is a floor. Window emission latency: event time from a window's end to its
emission is the lateness (windows kept open) plus the arrival of the first message past
it. Measured per window each leader emitted: the event time of the batch that closed it
past the window's end (ms), and the wall and thread CPU time from that batch's start to
the END (the window's close, its deltas and the merge: what the lateness does not explain;
on a loaded host the wall time is mostly waiting for the CPU), p50 and p99."""
from __future__ import annotations

from typing import Any

import numpy as np

from omdp.c_layout import c_dtype
from omdp.native import ffi, lib
from ops.market.core import MarketConfig, merge_op, stats_op
from ops.market.stream import zipf_stream


def measure(msgs: np.ndarray, partitions: int, mode: str, cfg: MarketConfig, batch: int = 64) -> dict[str, Any]:
    """One configuration: partitions split the stream by line; leaders = partitions."""
    cfg = MarketConfig(**{**cfg.__dict__, "leaders": min(partitions, int(lib.OMDP_MKT_MAX_LEADERS))})
    stats = [stats_op(cfg, k, mode) for k in range(partitions)]
    merges = [merge_op(cfg, partitions, l) for l in range(cfg.leaders)]
    part = msgs["line"] % partitions
    arrays = [np.ascontiguousarray(msgs[part == k]).view(np.uint8) for k in range(partitions)]
    bufs = [ffi.from_buffer(a) for a in arrays]
    res = ffi.new("omdp_market_bench_result_t *")
    cap = 4096
    emits = np.zeros(cap, dtype=c_dtype("omdp_market_emit_t"))
    n_emits = ffi.new("uint32_t *")
    try:
        rc = lib.omdp_market_bench_run(ffi.new("void *[]", [s.state for s in stats]), partitions,
                                       ffi.new("void *[]", [m.state for m in merges]), cfg.leaders,
                                       ffi.new("const uint8_t *[]", bufs),
                                       ffi.new("uint64_t[]", [len(a) for a in arrays]),
                                       batch, cfg.window_ms, ffi.from_buffer("omdp_market_emit_t[]", emits), cap,
                                       n_emits, res)
        if rc != 0:
            raise RuntimeError(f"omdp_market_bench_run: {rc}")
        sent = sum(m.counters()["deltas"] for m in merges)
    finally:
        for op in [*stats, *merges]:
            op.close()
    n = int(res.messages)
    em = emits[: int(n_emits[0])]
    return {**_latency(em), "mode": mode, "partitions": partitions, "leaders": cfg.leaders, "messages": n,
            "partition_ns_per_msg": res.partition_ns / n, "leader_ns_per_msg": res.leader_ns / n,
            "total_ns_per_msg": (res.partition_ns + res.leader_ns) / n, "deltas": sent,
            "deltas_per_msg": sent / n, "windows": int(res.ends) // cfg.leaders}


def _latency(em: np.ndarray) -> dict[str, float | None]:
    """p50 and p99 of the windows' emission after their end: event ms, wall µs."""
    keys = ("emit_event_ms", "emit_wall_us", "emit_cpu_us")
    if not len(em):
        return {f"{k}_{p}": None for k in keys for p in ("p50", "p99")}
    cols = (em["event_ms"].astype(float), em["wall_ns"].astype(float) / 1e3, em["cpu_ns"].astype(float) / 1e3)
    out: dict[str, float | None] = {"emitted": len(em)}
    for k, v in zip(keys, cols):
        out[f"{k}_p50"], out[f"{k}_p99"] = float(np.percentile(v, 50)), float(np.percentile(v, 99))
    return out


def run_market_bench(messages: int, partitions: list[int], skews: list[float], window_ms: int,
                     runs: int, seed: int = 1) -> list[dict[str, Any]]:
    """Every (skew, partitions, mode): the median of ``runs`` runs of each figure."""
    out = []
    cfg = MarketConfig(window_ms=window_ms, capacity=1 << 17, out_records=64, pending=8)
    for skew in skews:
        msgs = zipf_stream(messages, skew, seed=seed, lines=8, step_us=3.0)
        for p in partitions:
            for mode in ("shared", "route"):
                rs = [measure(msgs, p, mode, cfg) for _ in range(runs)]
                row = dict(rs[0])
                for k in ("partition_ns_per_msg", "leader_ns_per_msg", "total_ns_per_msg", "emit_wall_us_p50",
                          "emit_wall_us_p99", "emit_cpu_us_p50", "emit_cpu_us_p99"):
                    vals = [r[k] for r in rs if r[k] is not None]
                    row[k] = float(np.median(vals)) if vals else None
                row["skew"] = skew
                out.append(row)
    return out
