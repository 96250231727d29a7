"""``omdp bench elastic``: the elastic engine partition (decision_engines.elastic) measured two
ways, each against the static engine on the same messages.

- **Overhead**: CPU per message of the elastic partition at level 1 (dispatch: with worker 0
  inline its buckets' records run in place, with a worker thread they are copied into bucket
  rings; the engines; collect), with worker 0 inline and as a thread, beside the static engine
  (``omdp bench engine``'s market, warm books, batches of 1,024), the three in turn per run.
  The static side is the calling thread's CPU time; the elastic side is the calling thread's
  (dispatch, collect, and worker 0 when inline) plus the CPU time of the partition's worker
  threads (idle polling included), less the untimed copy that brings each block into cache
  (the same copy the static side does untimed).
- **Rate step**: messages offered at a rate schedule (``2x:20s,10x:20s,2x:20s``; Nx in
  messages is N x 24,000 packets/s x the messages per packet of our captures), the control
  loop stepping every period; per period the offered and processed rate, the level and the
  decision, and how many periods after the step up the level rose and after the step down it
  was back at 1 (``run_rate_step``: worker 0 inline, offered messages not taken within
  ``max_lag_s`` skipped). At the end the partition is drained and checked against a static engine fed the
  same messages: every message processed exactly once (counters), signals equal (as a
  multiset: buckets are collected in any order) and every series' final NBBO equal.
"""
from __future__ import annotations

import datetime as dt
import os
import statistics
import time
from typing import Any

import numpy as np

from decision_engines.elastic import ElasticConfig, ElasticControl, ElasticEngine
from decision_engines.engine import DecisionEngine, split_output
from decision_engines.engine_config import EngineConfig
from omdp.runtime.elastic_control import ElasticController
from omdp.runtime.machine import machine_info
from ops.bench.model_market import model_market, quote_stream
from ops.replay.rate_schedule import RateSchedule
from ops.replay.rates import PAPER_1X_PPS

AS_OF = dt.date(2008, 2, 4)
EXPIRIES = [20080216, 20080322, 20080419, 20080719]
MESSAGES_PER_PACKET = 13.96
"""Messages per packet of a capture from ``omdp synth`` (docs/benchmarks.md): turns Nx into messages/s."""
BLOCK = 1024
RING_FULL_WAIT_S = 0.0002
"""The rate-step feeder's wait when a bucket ring is full (about half a 4,096-message ring at 10 M/s)."""
SIGNAL_KEYS = ["underlying_id", "msg_seq", "kind", "put_call", "strike_px", "expiry", "bid_px", "offer_px", "root"]


def market_stream(n_underlyings: int, n_messages: int, seed: int = 1, crossed: float = 0.001) -> tuple[np.ndarray, np.ndarray]:
    """(warm-up quotes, re-quotes) of ``omdp bench engine``'s market; a fraction ``crossed`` of
    the re-quotes is made crossed so the signal paths run and can be compared."""
    market = model_market(n_underlyings, EXPIRIES, 8, AS_OF, seed=seed)
    stream = quote_stream(market, n_messages, seed=seed + 1)
    n_warm = len(stream) - n_messages
    warm, requotes = stream[:n_warm], stream[n_warm:].copy()
    rng = np.random.default_rng(seed + 2)
    idx = rng.choice(n_messages, int(n_messages * crossed), replace=False)
    requotes["bid_px"][idx] = requotes["offer_px"][idx] + 10_000_000
    return warm, requotes


def _static_ns(engine: DecisionEngine, msgs: np.ndarray, out: np.ndarray) -> float:
    hot = np.empty(BLOCK, dtype=msgs.dtype)
    cpu = 0
    for start in range(0, len(msgs), BLOCK):
        buf = hot[: len(msgs[start : start + BLOCK])]
        np.copyto(buf, msgs[start : start + BLOCK])
        c0 = time.thread_time_ns()
        done = 0
        while done < len(buf):
            consumed, _ = engine.process_batch(buf[done:], out, 0)
            done += consumed
        cpu += time.thread_time_ns() - c0
    return cpu / len(msgs)


def _threads_cpu_ns(el: ElasticEngine) -> int:
    """CPU time the partition's worker threads have run (the kernel's per-thread schedstat)."""
    total = 0
    for i in range(el.config.workers):
        tid = el.worker(i)["tid"]
        if tid:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
    return total


def _elastic_ns(el: ElasticEngine, msgs: np.ndarray, out: np.ndarray) -> tuple[float, float]:
    """(CPU ns per message of the calling thread, less the untimed copies, plus the partition's
    worker threads, their idle polling included; worker busy ns per message)."""
    hot = np.empty(BLOCK, dtype=msgs.dtype)
    busy0 = sum(el.worker(i)["busy_ns"] for i in range(el.config.workers))
    w0 = _threads_cpu_ns(el)
    p0 = time.thread_time_ns()
    copy_ns = 0
    for start in range(0, len(msgs), BLOCK):
        buf = hot[: len(msgs[start : start + BLOCK])]
        c0 = time.thread_time_ns()
        np.copyto(buf, msgs[start : start + BLOCK])
        copy_ns += time.thread_time_ns() - c0
        done = 0
        while done < len(buf):
            done += el.dispatch(buf[done:])
            el.collect(out, 0)
    el.drain(out, 0)
    cpu = time.thread_time_ns() - p0 - copy_ns + _threads_cpu_ns(el) - w0
    busy = sum(el.worker(i)["busy_ns"] for i in range(el.config.workers)) - busy0
    return cpu / len(msgs), busy / len(msgs)


def run_overhead(n_underlyings: int = 400, n_messages: int = 1_000_000, runs: int = 5, buckets: int = 64,
                 seed: int = 1) -> dict[str, Any]:
    """Static engine vs the elastic partition at level 1, alternated, ``runs`` pairs."""
    warm, requotes = market_stream(n_underlyings, n_messages, seed)
    capacity = 1 << int(np.ceil(np.log2(len(warm) / 6 * 1.25)))
    static = DecisionEngine(EngineConfig(max_series=capacity, max_groups=1 << 12))
    static.process(warm, batch=BLOCK)
    per_bucket = 1 << int(np.ceil(np.log2(capacity / buckets * 4)))
    kinds = {"inline": True, "thread": False}
    els = {k: ElasticEngine(ElasticConfig(engine=EngineConfig(max_series=per_bucket, max_groups=1 << 8), workers=1,
                                          buckets=buckets, level=1, inline_worker0=v)) for k, v in kinds.items()}
    for el in els.values():
        el.process(warm, batch=BLOCK)
    out = np.zeros(1 << 20, dtype=np.uint8)
    s_ns: list[float] = []
    e_ns: dict[str, list[float]] = {k: [] for k in kinds}
    busy_ns: dict[str, list[float]] = {k: [] for k in kinds}
    load = []
    for _ in range(runs):  # A, B, C in turn, so load changes hit all three alike
        load.append(os.getloadavg()[0])
        s_ns.append(_static_ns(static, requotes, out))
        for k, el in els.items():
            e, b = _elastic_ns(el, requotes, out)
            e_ns[k].append(e)
            busy_ns[k].append(b)
    sc = static.counters()
    equal = {k: int(el.engine_counters()["signals"]) == int(sc["signals"]) for k, el in els.items()}
    for el in els.values():
        el.close()
    static.close()
    res: dict[str, Any] = {"messages_per_run": n_messages, "runs": runs, "buckets": buckets, "series": int(sc["series"]),
                           "static_ns_per_message": s_ns, "static_median": statistics.median(s_ns), "load_1min": load,
                           "signals_equal": all(equal.values())}
    for k in kinds:
        ratio = [e / s for e, s in zip(e_ns[k], s_ns)]
        res[k] = {"ns_per_message": e_ns[k], "median": statistics.median(e_ns[k]),
                  "worker_busy_ns_per_message": busy_ns[k], "worker_busy_median": statistics.median(busy_ns[k]),
                  "ratio_per_run": ratio, "ratio_median": statistics.median(ratio),
                  "ratio_of_medians": statistics.median(e_ns[k]) / statistics.median(s_ns)}
    return res


def _rows(signals: np.ndarray) -> list[tuple]:
    return sorted(tuple(r) for r in signals[SIGNAL_KEYS].tolist())


def _books(snapshot: np.ndarray) -> dict[tuple, tuple]:
    return {(r["root"], r["expiry"], r["strike_px"], r["put_call"]): (r["bid_px"], r["offer_px"], r["bid_size"], r["offer_size"])
            for r in snapshot}


def _followed(periods: list[dict[str, Any]], steps_at_s: list[float], period_s: float) -> dict[str, Any]:
    """How the level followed a low -> high -> low schedule: the control periods from the step
    up to the first one that raised the level, and from the step down to the first period
    back at level 1 (None where it did not happen)."""
    res: dict[str, Any] = {"rose_after_periods": None, "fell_after_periods": None, "max_level": 0}
    if len(steps_at_s) < 2 or not periods:
        return res
    up_at, down_at = steps_at_s[0], steps_at_s[1]
    for n, p in enumerate(q for q in periods if q["t_s"] > up_at + period_s / 2):
        if p["t_s"] > down_at + period_s:
            break
        if p["next_level"] > 1:
            res["rose_after_periods"] = n + 1
            break
    res["max_level"] = max((p["next_level"] for p in periods if up_at < p["t_s"] <= down_at + period_s), default=0)
    for n, p in enumerate(q for q in periods if q["t_s"] > down_at + period_s / 2):
        if p["next_level"] == 1:
            res["fell_after_periods"] = n + 1
            break
    return res


def run_rate_step(schedule: RateSchedule, period_s: float = 1.0, workers: int = 4, buckets: int = 64,
                  n_underlyings: int = 400, n_messages: int = 2_000_000, tick_s: float = 0.001,
                  seed: int = 1, inline_worker0: bool = True, max_lag_s: float = 0.1) -> dict[str, Any]:
    """Offer the stream (cycled) at ``schedule``; the control loop steps every ``period_s``.

    Worker 0 runs in the feeding thread (``inline_worker0``, the operator's default), so level
    1 is one thread doing what the pipeline's partition does, and a higher level adds worker
    threads. Offered messages the partition has not taken within ``max_lag_s`` are skipped
    (counted as not fed), as a market does not wait: without it a backlog built at the high
    rate would be fed on through the low stage and hide the step down."""
    warm, requotes = market_stream(n_underlyings, n_messages, seed)
    per_bucket = 1 << int(np.ceil(np.log2(len(warm) / 6 / buckets * 4)))
    el = ElasticEngine(ElasticConfig(engine=EngineConfig(max_series=per_bucket, max_groups=1 << 8),
                                     workers=workers, buckets=buckets, level=1, inline_worker0=inline_worker0))
    el.process(warm, batch=BLOCK)
    ctl = ElasticControl(el, ElasticController(max_level=workers))
    out = np.zeros(1 << 22, dtype=np.uint8)
    signals: list[np.ndarray] = []
    used = 0
    fed = 0  # messages dispatched (position in the cycled stream)
    periods: list[dict[str, Any]] = []
    fed_at_period = 0
    ctl.start()
    t0 = time.monotonic()
    next_control = t0 + period_s
    owed = skipped = 0.0
    last = t0
    while True:
        now = time.monotonic()
        t = now - t0
        if t >= schedule.seconds:
            break
        rate = schedule.rate_x_at(t) * PAPER_1X_PPS * MESSAGES_PER_PACKET
        owed += rate * (now - last)
        if owed > rate * max_lag_s:
            skipped += owed - rate * max_lag_s
            owed = rate * max_lag_s
        last = now
        full = False
        while owed >= 1:
            at = fed % n_messages
            chunk = requotes[at : at + min(int(owed), n_messages - at, 4 * BLOCK)]
            got = el.dispatch(chunk)
            fed += got
            owed -= got
            if got < len(chunk):
                full = True
                break  # a ring is full: the offered load waits (counted as saturation)
        used = el.collect(out, used)
        if len(out) - used < len(out) // 2:
            signals.append(split_output(out, used).signals)
            used = 0
        if now >= next_control:
            rec = ctl.step()
            periods.append({"t_s": round(t, 3), "offered_x": schedule.rate_x_at(t - period_s / 2),
                            "fed_per_s": (fed - fed_at_period) / period_s, "level": rec.level, "rate": rec.rate,
                            "busy": rec.busy, "saturated": rec.saturated, "decision": rec.decision,
                            "next_level": rec.next_level, "load_1min": os.getloadavg()[0]})
            fed_at_period = fed
            next_control += period_s
        sleep = tick_s - (time.monotonic() - now)
        if full:  # a worker thread's ring is full: give it the CPU a moment (a 2-CPU machine)
            time.sleep(RING_FULL_WAIT_S)
        elif sleep > 0 and owed < 1:  # caught up: wait for the next tick; behind: feed on at once
            time.sleep(sleep)
    wall = time.monotonic() - t0
    used = el.drain(out, used, timeout_s=60)
    signals.append(split_output(out, used).signals)
    counters, ecount = el.counters(), el.engine_counters()
    got_signals = np.concatenate(signals)
    books = _books(el.snapshot())
    decisions = dict(ctl.decisions)
    el.close()

    static = DecisionEngine(EngineConfig(max_series=1 << int(np.ceil(np.log2(len(warm) / 6 * 2))), max_groups=1 << 12))
    static.process(warm, batch=BLOCK)
    want_signals = []
    for start in range(0, fed, n_messages):
        n = min(n_messages, fed - start)
        want_signals.append(static.process(requotes[:n], batch=BLOCK).signals)
    want = np.concatenate(want_signals)
    want_books = _books(static.snapshot())
    static.close()
    offered = sum(s.rate_x * PAPER_1X_PPS * MESSAGES_PER_PACKET * s.seconds for s in schedule.stages)
    return {
        "schedule": schedule.describe(), "period_s": period_s, "workers": workers, "buckets": buckets,
        "inline_worker0": inline_worker0, "max_lag_s": max_lag_s, "messages_skipped": int(skipped),
        "wall_s": wall, "messages_offered": int(offered), "messages_fed": fed, "inplace": int(counters["inplace"]),
        "fed_fraction_of_schedule": fed / offered if offered else 0.0,
        "processed": int(counters["processed"]) - len(warm), "engine_processed": int(ecount["processed"]) - len(warm),
        "lost": fed - (int(counters["processed"]) - len(warm)),
        "moves": int(counters["moves"]), "level_changes": int(counters["level_changes"]),
        "signals": len(got_signals), "signals_static": len(want), "signals_equal": _rows(got_signals) == _rows(want),
        "books_equal": books == want_books, "series": len(books),
        "decisions": decisions, "periods": periods, "steps_at_s": schedule.boundaries(),
        "followed": _followed(periods, schedule.boundaries(), period_s),
    }


def run_elastic_bench(schedule: RateSchedule | None, period_s: float, workers: int, overhead_runs: int,
                      messages: int, stream_messages: int = 2_000_000, buckets: int = 16) -> dict[str, Any]:
    """What ``omdp bench elastic --json`` writes."""
    res: dict[str, Any] = {"benchmark": "elastic", "machine": machine_info()}
    if overhead_runs:
        res["overhead"] = run_overhead(n_messages=messages, runs=overhead_runs, buckets=buckets)
    if schedule is not None:
        res["rate_step"] = run_rate_step(schedule, period_s=period_s, workers=workers, n_messages=stream_messages,
                                          buckets=buckets)
    res["machine_after"] = machine_info()
    return res
