"""``omdp bench engine``: nanoseconds per message of the C decision engine, the pricing
refresh time, and the per-batch cost of a Python custom engine.

The market is an engine's share of a February-2008-like feed (``model_market``): every series
quoted on six exchanges, then re-quoted with a skew toward busy underlyings. The engine is
warmed (every series seen), priced once (bands and parity limits live, as in a run), then
timed over the re-quotes, several runs, median reported. As in the pipeline, where the
decoder has just written them, the records are in cache when the engine reads them: each
block of 1,024 is copied into a reused buffer before it is timed (series state is not: the
re-quotes hit series at random, as the feed does).

With ``capture`` (``omdp bench engine --capture DIR``) the messages are a capture's own
instead (``capture_records``): every line decoded and routed, and the share of them that
engine 0 of ``engines`` gets in a run (2: the fused topology's). Its BBO indicators and
appendages are the feed's, so the BBO check runs on every quote as in the pipeline (the
model market leaves the indicator empty). The engine is warmed on the whole share and
priced once, then the first ``n_messages`` of the share are timed again and again.
``max_series`` sizes the timed engine: a today capture's share is about half a million
series, far beyond the default 131,072 slots (the rest would be refused as ``table_full``,
cheap, and the state that fits in cache far smaller than a run's), so time it with the
slots its run needs (``omdp bench engine --capture D --max-series 524288``).

The C engine is driven from C (``omdp_engine_bench_batches``, engine_bench.h), one call per
batch as the feed handler's partition makes it, at the batch sizes the pipeline hands it:
1,024 (the engine's own cost per message), 56 (one flush of 4 packets to one engine: the
feed handler's default ``coalesce_packets`` of 4 at ~14 messages per packet), 28 (the same
flush split over the fused topology's two engines, which is what each engine sees; a run
reports it as ``routed / batches_out``) and 14 (one packet, no coalescing). Batches of 14 are
also timed from Python (one cffi call per batch, as a Python driver would pay it), the
figure earlier reports called "batches of 14". Times are CPU time of the benchmark's thread
(the engine runs in it), so other processes on a shared machine do not inflate them; wall
time is reported beside. The engine stamps de_in / de_out once per batch with the process's
stamp clock; the benchmark chooses it as a run does (``--clock``, default ``auto``: the TSC
where it is invariant), so a batch costs what it costs in the pipeline.
"""
from __future__ import annotations

import datetime as dt
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from decision_engines.custom import CustomEngine
from decision_engines.engine import MAX_OUT_PER_MSG, DecisionEngine
from decision_engines.engine_config import EngineConfig, PricingConfig
from decision_engines.pricing.refresher import PricingRefresher, compute_pricing
from feedhandlers.routing import MAX_ENGINES
from omdp.clock import use_stamp_clock
from omdp.native import ffi, lib
from omdp.runtime.machine import machine_info
from ops.bench.capture_records import engine_share, read_capture_records
from ops.bench.model_market import model_market, quote_stream

AS_OF = dt.date(2008, 2, 4)
EXPIRIES = [20080216, 20080322, 20080419, 20080719]


class WideSpreadEngine(CustomEngine):
    """A custom engine of the kind docs/engines.md shows: flags quotes whose spread is wider
    than ``max_spread`` dollars (and 20% of the offer)."""

    def __init__(self, max_spread: float = 1.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.max_spread_px = int(max_spread * 1e9)

    def process_batch(self, records: np.ndarray) -> None:
        """One vectorized test over the batch."""
        spread = records["offer_px"] - records["bid_px"]
        wide = (records["bid_px"] > 0) & (spread > self.max_spread_px) & (spread * 5 > records["offer_px"])
        self.signal(wide, value=spread / 1e9)


BLOCK = 1024
"""Messages brought into cache (copied, untimed) before each timed stretch: the pipeline's
engine reads records the decoder has just written, not a stream from DRAM."""


def _time_engine(engine: DecisionEngine, msgs: np.ndarray, batch: int, out: np.ndarray) -> tuple[float, float]:
    """(CPU seconds of this thread, wall seconds) to push msgs through the engine in batches
    of ``batch``, output discarded. Each block of BLOCK messages is first copied into a
    reused buffer (untimed), then timed through the engine. CPU time is what the engine
    costs; wall time adds what other processes on a shared machine took from it."""
    hot = np.empty(BLOCK, dtype=msgs.dtype)
    step = max(batch, BLOCK // batch * batch)
    cpu = wall = 0
    for start in range(0, len(msgs), step):
        block = msgs[start : start + step]
        if len(block) > len(hot):
            hot = np.empty(len(block), dtype=msgs.dtype)
        buf = hot[: len(block)]
        np.copyto(buf, block)
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        for b0 in range(0, len(buf), batch):
            chunk = buf[b0 : b0 + batch]
            done = 0
            while done < len(chunk):
                consumed, _ = engine.process_batch(chunk[done:], out, 0)
                done += consumed
        cpu += time.thread_time_ns() - c0
        wall += time.perf_counter_ns() - w0
    return cpu / 1e9, wall / 1e9


def _time_engine_c(engine: DecisionEngine, msgs: np.ndarray, batch: int, out: np.ndarray) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of msgs through the engine in batches of ``batch``, the
    loop in C (engine_bench.h): no Python between batches, as in the pipeline."""
    hot = np.empty(max(BLOCK, batch), dtype=msgs.dtype)
    wall = ffi.new("int64_t *")
    cpu = lib.omdp_engine_bench_batches(
        engine.handle, ffi.cast("const omdp_opra_msg_t *", ffi.from_buffer(msgs, require_writable=False)), len(msgs),
        batch, ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(hot)), len(hot), ffi.from_buffer("uint8_t[]", out),
        len(out), wall)
    if cpu < 0:
        raise RuntimeError(f"omdp_engine_bench_batches: error {cpu}")
    return cpu / 1e9, wall[0] / 1e9


def _stats(timed: list[tuple[float, float]], batch: int, runs: int, n_messages: int, driver: str) -> dict[str, Any]:
    cpu = [c / n_messages * 1e9 for c, _ in timed]
    wall = [w / n_messages * 1e9 for _, w in timed]
    return {"batch": batch, "driver": driver, "runs": runs, "messages_per_run": n_messages,
            "ns_per_message_median": statistics.median(cpu), "ns_per_message_min": min(cpu),
            "ns_per_message_max": max(cpu), "ns_per_message_runs": cpu,
            "wall_ns_per_message_median": statistics.median(wall)}


def _model_market_messages(n_underlyings: int, n_messages: int, seed: int,
                           max_series: int | None = None) -> dict[str, Any]:
    """The model market's warm-up (every series on every exchange) and re-quotes."""
    market = model_market(n_underlyings, EXPIRIES, 8, AS_OF, seed=seed)
    stream = quote_stream(market, n_messages, seed=seed + 1)
    n_warm = len(stream) - n_messages
    # Capacity as a deployment would size it: the market's series with room to grow.
    capacity = max_series or 1 << int(np.ceil(np.log2(len(market.value) * 1.25)))
    return {"warm": stream[:n_warm], "timed": stream[n_warm:], "as_of": AS_OF,
            "config": EngineConfig(max_series=capacity, max_groups=1 << 12),
            "market": {"underlyings": n_underlyings, "expiries": len(EXPIRIES)}}


class CaptureShareError(ValueError):
    """Engine 0 of the engines asked for has nothing of the capture to time."""


def _capture_messages(capture: Path, engines: int, n_messages: int, max_series: int | None = None) -> dict[str, Any]:
    """Engine 0's share of a capture: all of it to warm, its first ``n_messages`` timed."""
    if not 1 <= engines <= MAX_ENGINES:
        raise CaptureShareError(f"engines must be 1..{MAX_ENGINES}, got {engines}")
    cap = read_capture_records(capture)
    share = engine_share(cap.records, engines)
    if not len(share) or n_messages < 1:
        raise CaptureShareError(f"{capture}: engine 0 of {engines} gets {len(share)} of the capture's "
                              f"{len(cap.records)} messages; nothing to time")
    config = EngineConfig() if max_series is None else EngineConfig(max_series=max_series)
    return {"warm": share, "timed": share[:n_messages], "as_of": cap.manifest["date"], "config": config,
            "market": {"capture": str(capture), "engines": engines, "capture_messages": len(cap.records),
                       "engine_messages": len(share)}}


def _incremental_refreshes(engine: DecisionEngine, requotes: np.ndarray, refresher: PricingRefresher,
                           refreshes: int = 9) -> dict[str, Any]:
    """The refresher's refresh building on its last one after a series' worth of re-quotes
    for one in 20 series, about what moves between two 100 ms refreshes of a 1x capture
    (docs/engines.md "Pricing"): its wall and CPU time, all of it (the mirror's update,
    pricing what changed, the back buffer's rows, the publish), and the share of series it
    priced again. ``refresher``: has refreshed the engine as it is now."""
    step = max(1, engine.series_count // 20)
    refreshes = min(refreshes, max(1, len(requotes) // step))  # (a short capture share: fewer)
    seconds, cpu, shares, processed = [], [], [], 0
    for k in range(refreshes):
        chunk = requotes[k * step:(k + 1) * step]
        engine.process(chunk, batch=1024)  # (the batch also takes the last publish)
        processed += len(chunk)
        wall0, cpu0 = refresher.seconds, refresher.cpu_s   # (the refresher times each publish)
        state = refresher.refresh()
        seconds.append(refresher.seconds - wall0)
        cpu.append(refresher.cpu_s - cpu0)
        shares.append(1.0 if state.repriced < 0 else state.repriced / max(len(state.series), 1))
    return {"messages_between": step, "refreshes": refreshes, "messages": processed,
            "s_median": statistics.median(seconds), "cpu_s_median": statistics.median(cpu),
            "repriced_share_median": statistics.median(shares)}


def run_engine_bench(n_underlyings: int = 400, n_messages: int = 1_000_000, runs: int = 5,
                     batches: tuple[int, ...] = (1024, 56, 28, 14), python_batches: tuple[int, ...] = (14,),
                     custom_batches: tuple[int, ...] = (14, 256),
                     seed: int = 1, clock: str = "auto", capture: Path | None = None,
                     engines: int = 2, max_series: int | None = None) -> dict[str, Any]:
    """Run the benchmark; returns what ``omdp bench engine --json`` writes. ``clock`` is the
    stamp clock (``auto``, ``tsc``, ``realtime``), chosen as ``omdp run --clock`` does;
    ``capture`` a capture directory whose messages replace the model market's;
    ``max_series`` the engine's series slots (None: sized to the model market, or the
    engine's default with a capture)."""
    stamp_clock = use_stamp_clock(clock)
    if capture is None:
        msgs = _model_market_messages(n_underlyings, n_messages, seed, max_series)
    else:
        msgs = _capture_messages(capture, engines, n_messages, max_series)
    warm, requotes = msgs["warm"], msgs["timed"]
    n_messages = len(requotes)

    engine = DecisionEngine(msgs["config"])
    engine.process(warm, batch=1024)
    pricing = PricingConfig(as_of=msgs["as_of"])
    refresher = PricingRefresher(engine, pricing)
    refresher.refresh()
    refresh_s, full = [], None
    for _ in range(3):
        full = compute_pricing(engine.snapshot(), engine.groups(), engine.config.max_series, pricing)
        refresh_s.append(full.seconds)
    incremental = _incremental_refreshes(engine, requotes, refresher)

    out = np.zeros(1 << 20, dtype=np.uint8)
    assert len(out) >= MAX_OUT_PER_MSG
    results: dict[str, Any] = {}
    for b in batches:
        results[f"batch_{b}"] = _stats([_time_engine_c(engine, requotes, b, out) for _ in range(runs)], b, runs,
                                       n_messages, "C")
    for b in python_batches:
        results[f"python_batch_{b}"] = _stats([_time_engine(engine, requotes, b, out) for _ in range(runs)], b, runs,
                                              n_messages, "Python")
    counters = engine.counters()

    custom: dict[str, Any] = {}
    for b in custom_batches:
        ce = WideSpreadEngine()
        chunks = [requotes[i : i + b] for i in range(0, min(len(requotes), 2000 * b), b)]
        per_run = []
        for _ in range(runs):
            t0 = time.thread_time_ns()
            for c in chunks:
                ce.run(c)
            per_run.append((time.thread_time_ns() - t0) / len(chunks) / 1e3)
        custom[f"batch_{b}"] = {"batch": b, "batches_per_run": len(chunks), "us_per_batch_median": statistics.median(per_run),
                                "ns_per_message_median": statistics.median(per_run) * 1e3 / b}

    return {
        "benchmark": "engine",
        "machine": machine_info(),
        "stamp_clock": stamp_clock,
        "market": {**msgs["market"], "series": int(counters["series"]), "groups": int(counters["groups"]),
                   "max_series": msgs["config"].max_series, "state_bytes": engine.state_bytes(),
                   "warm_messages": len(warm), "timed_messages": n_messages},
        "engine": results,
        "pricing_refresh_s_median": statistics.median(refresh_s),
        "pricing_refresh_incremental": incremental,
        "custom_python_engine": custom,
        "counters": counters,
    }
