"""The elastic engine partition from Python: a typed face over ``omdp_elastic_*``
(native/include/omdp/elastic.h) plus its control loop.

Why: a fixed number of engines is either too small for OPRA's bursts or wastes cores the rest
of the day. Here the underlyings are split into buckets, each with its own C engine; a pool
of C worker threads runs them, and :class:`ElasticControl` picks, once per period, how many
workers are active (``omdp.runtime.elastic_control``, the elastic scaling paper). Moving a
bucket between workers hands its book state over at a point in the bucket's own stream, so
nothing is lost, duplicated or reordered. Python only calls C once per batch or period.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from decision_engines.engine import MAX_OUT_PER_MSG, DecisionEngine, EngineOutput, split_output
from decision_engines.engine_config import EngineConfig
from decision_engines.engine_records import SERIES_INFO_DTYPE
from decision_engines.signal_record import SIGNAL_DTYPE
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib
from omdp.runtime.elastic_control import Decision, ElasticController

COUNTER_NAMES: tuple[str, ...] = tuple(name for name, _ in ffi.typeof("omdp_elastic_counters_t").fields)
WORKER_FIELDS: tuple[str, ...] = tuple(name for name, _ in ffi.typeof("omdp_elastic_worker_stats_t").fields)
ENGINE_COUNTER_NAMES: tuple[str, ...] = tuple(name for name, _ in ffi.typeof("omdp_engine_counters_t").fields)


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


class ElasticConfig(BaseModel):
    """What the C partition is created with (``omdp_elastic_config_t``). ``engine`` is every
    bucket's engine: its capacities are per bucket."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: EngineConfig = Field(default_factory=lambda: EngineConfig(max_series=1 << 14, max_groups=1 << 11))
    workers: int = Field(2, ge=1, le=64, description="worker threads in the pool (suspended above the level)")
    buckets: int = Field(64, ge=1, le=1024, description="underlying buckets, a power of two")
    ring_msgs: int = Field(4096, ge=16, le=1 << 20, description="input ring per bucket in messages, a power of two")
    out_bytes: int = Field(1 << 16, ge=4 * MAX_OUT_PER_MSG, le=1 << 26, description="output ring per bucket, a power of two")
    level: int = Field(1, ge=1, description="initial active level")
    inline_worker0: bool = Field(False, description="worker 0 runs in the dispatching thread (no second core at level 1)")

    def model_post_init(self, _ctx: object) -> None:
        """Cross-field checks, each naming its field."""
        for name in ("buckets", "ring_msgs", "out_bytes"):
            if not _pow2(getattr(self, name)):
                raise ValueError(f"{name} must be a power of two (got {getattr(self, name)})")
        if self.level > self.workers:
            raise ValueError(f"level must be at most workers ({self.workers}) (got {self.level})")


class ElasticError(RuntimeError):
    """An elastic partition call failed; ``code`` is the OMDP_ELASTIC_* error."""

    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what}: {ffi.string(lib.omdp_elastic_strerror(code)).decode()} (code {code})")
        self.code = code


class ElasticEngine:
    """One elastic partition: bucket engines, their rings and the worker pool (started at
    create, stopped by ``close``). One thread dispatches and collects; any one thread may
    move buckets and set the level."""

    def __init__(self, config: ElasticConfig | None = None) -> None:
        self.config = config or ElasticConfig()
        c = self.config
        cfg = ffi.new("omdp_elastic_config_t *")
        cfg.engine.max_series = c.engine.max_series
        cfg.engine.max_groups = c.engine.max_groups
        cfg.engine.sample_every = c.engine.sample_every
        cfg.engine.engine_id = c.engine.engine_id
        cfg.workers, cfg.buckets, cfg.ring_msgs = c.workers, c.buckets, c.ring_msgs
        cfg.out_bytes, cfg.level = c.out_bytes, c.level
        cfg.inline_worker0 = int(c.inline_worker0)
        err = ffi.new("int *")
        ptr = lib.omdp_elastic_create(cfg, err)
        if ptr == ffi.NULL:
            raise ElasticError("omdp_elastic_create", err[0])
        self._ptr = ffi.gc(ptr, lib.omdp_elastic_destroy)
        self._out_len = ffi.new("uint32_t *")
        self._counters = ffi.new("omdp_elastic_counters_t *")
        self._worker = ffi.new("omdp_elastic_worker_stats_t *")
        self._wanted = ffi.new("uint32_t *")

    def close(self) -> None:
        """Stop and join the workers and free everything now."""
        if self._ptr is not None:
            ffi.release(self._ptr)
            self._ptr = None

    def dispatch(self, msgs: np.ndarray) -> int:
        """Queue ``msgs`` (OPRA message records) to their buckets; returns how many were taken
        (fewer when a bucket's ring is full: collect, then call again with the rest)."""
        if msgs.dtype != OPRA_MSG_DTYPE or msgs.ndim != 1 or not msgs.flags.c_contiguous:
            raise TypeError("msgs must be a contiguous 1-d array of OPRA_MSG_DTYPE")
        rc = lib.omdp_elastic_dispatch(
            self._ptr, ffi.cast("const omdp_opra_msg_t *", ffi.from_buffer(msgs, require_writable=False)), len(msgs))
        if rc < 0:
            raise ElasticError("omdp_elastic_dispatch", rc)
        if self.config.inline_worker0:
            lib.omdp_elastic_pass(self._ptr)
        return int(rc)

    def collect(self, out: np.ndarray, out_len: int = 0) -> int:
        """Append finished output records to ``out`` (uint8) from ``out_len``; returns the new length."""
        self._out_len[0] = out_len
        lib.omdp_elastic_collect(self._ptr, ffi.from_buffer("uint8_t[]", out), len(out), self._out_len)
        return int(self._out_len[0])

    def backlog(self) -> tuple[int, int]:
        """(messages queued but not processed, output bytes not collected)."""
        out_bytes = ffi.new("uint64_t *")
        msgs = lib.omdp_elastic_backlog(self._ptr, out_bytes)
        return int(msgs), int(out_bytes[0])

    def move(self, bucket: int, worker: int) -> None:
        """Ask that ``bucket`` be owned by ``worker``; its owner hands it over at its next pass."""
        rc = lib.omdp_elastic_move(self._ptr, bucket, worker)
        if rc < 0:
            raise ElasticError(f"move bucket {bucket} to worker {worker}", rc)

    def set_level(self, level: int) -> None:
        """Make ``level`` workers active (1..workers); the others hand their buckets over and suspend."""
        rc = lib.omdp_elastic_set_level(self._ptr, level)
        if rc < 0:
            raise ElasticError(f"set level {level}", rc)

    def owner(self, bucket: int) -> tuple[int, int]:
        """(worker owning ``bucket`` now, worker asked for)."""
        rc = lib.omdp_elastic_owner(self._ptr, bucket, self._wanted)
        if rc < 0:
            raise ElasticError(f"owner of bucket {bucket}", rc)
        return int(rc), int(self._wanted[0])

    def counters(self) -> dict[str, int]:
        """The partition's counters (elastic.h ``omdp_elastic_counters_t``)."""
        lib.omdp_elastic_read_counters(self._ptr, self._counters)
        return {name: int(getattr(self._counters, name)) for name in COUNTER_NAMES}

    def worker(self, index: int) -> dict[str, int]:
        """One worker's counters (processed, busy_ns, runs, handoffs, alive)."""
        rc = lib.omdp_elastic_read_worker(self._ptr, index, self._worker)
        if rc < 0:
            raise ElasticError(f"worker {index}", rc)
        return {name: int(getattr(self._worker, name)) for name in WORKER_FIELDS}

    def bucket_engines(self) -> list[DecisionEngine]:
        """Every bucket's engine as a :class:`DecisionEngine` (for snapshots and pricing;
        never to process batches: its owner worker does that)."""
        return [DecisionEngine.borrow(lib.omdp_elastic_bucket_engine(self._ptr, b), self.config.engine)
                for b in range(self.config.buckets)]

    def pin_workers(self, cpus: list[int], timeout_s: float = 5.0) -> None:
        """Let every worker thread run only on ``cpus`` (the partition's own CPU pinning would
        otherwise put the whole pool on one core). Raises ValueError naming a CPU this
        machine does not have. An inline worker 0 is the caller's thread: left alone."""
        bad = [c for c in cpus if not 0 <= c < (os.cpu_count() or 1)]
        if bad:
            raise ValueError(f"worker_cpus: CPU {bad[0]} does not exist on this machine ({os.cpu_count()} CPUs)")
        deadline = time.monotonic() + timeout_s
        for i in range(1 if self.config.inline_worker0 else 0, self.config.workers):
            while (tid := self.worker(i)["tid"]) == 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"worker {i} did not start within {timeout_s} s")
                time.sleep(0.001)
            os.sched_setaffinity(tid, set(cpus))

    def engine_counters(self) -> dict[str, int]:
        """The bucket engines' counters, summed."""
        c = ffi.new("omdp_engine_counters_t *")
        lib.omdp_elastic_engine_counters(self._ptr, c)
        return {name: int(getattr(c, name)) for name in ENGINE_COUNTER_NAMES}

    def snapshot(self) -> np.ndarray:
        """Every series of every bucket with its NBBO now (SERIES_INFO_DTYPE, bucket by bucket).
        Read from the control thread while workers run: each NBBO is read consistently."""
        parts = []
        for b in range(self.config.buckets):
            eng = lib.omdp_elastic_bucket_engine(self._ptr, b)
            n = int(lib.omdp_engine_series_count(eng))
            arr = np.zeros(n, dtype=SERIES_INFO_DTYPE)
            if n:
                got = lib.omdp_engine_snapshot_series(eng, 0, ffi.cast("omdp_engine_series_info_t *",
                                                                         ffi.from_buffer(arr)), n)
                arr = arr[:got]
            parts.append(arr)
        return np.concatenate(parts)

    def drain(self, out: np.ndarray, out_len: int, timeout_s: float = 30.0) -> int:
        """Collect until nothing is queued or uncollected (or ``out`` is full); returns the new
        length. Raises TimeoutError when the workers do not finish within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.config.inline_worker0:
                lib.omdp_elastic_pass(self._ptr)
            out_len = self.collect(out, out_len)
            msgs, pending = self.backlog()
            if msgs == 0 and pending == 0:
                return out_len
            if len(out) - out_len < MAX_OUT_PER_MSG:
                return out_len
            if time.monotonic() > deadline:
                raise TimeoutError(f"elastic partition not drained after {timeout_s} s ({msgs} messages queued)")
            if not self.config.inline_worker0:
                time.sleep(0.0002)

    def process(self, msgs: np.ndarray, batch: int = 1024, out_bytes: int = 1 << 22) -> EngineOutput:
        """Run every message through the partition and return all it produced (samples and
        signals; records of one underlying in order). A convenience for tools and tests."""
        out = np.zeros(out_bytes, dtype=np.uint8)
        parts: list[EngineOutput] = []
        used = 0
        for start in range(0, len(msgs), batch):
            chunk = msgs[start : start + batch]
            done = 0
            while done < len(chunk):
                done += self.dispatch(chunk[done:])
                used = self.collect(out, used)
                if len(out) - used < out_bytes // 2:
                    parts.append(split_output(out, used))
                    used = 0
        while True:
            used = self.drain(out, used)
            parts.append(split_output(out, used))
            used = 0
            if self.backlog() == (0, 0):
                break
        return EngineOutput(samples=np.concatenate([p.samples for p in parts] or [np.empty(0, OPRA_MSG_DTYPE)]),
                            signals=np.concatenate([p.signals for p in parts] or [np.empty(0, SIGNAL_DTYPE)]))


SATURATED_BUSY = 0.85
"""An active level is saturated when its workers were busy this fraction of the period ..."""
SATURATED_BUSY_RING_FULL = 0.5
"""... or the dispatcher found a full ring while they were busy at least this fraction (a
full ring with idle workers means they were descheduled, not that the level is too low)."""


@dataclass
class PeriodRecord:
    """One control period as the run records keep it."""

    t_s: float
    level: int
    rate: float
    busy: float
    saturated: bool
    decision: str
    next_level: int


@dataclass
class ElasticControl:
    """Applies an :class:`ElasticController` to an :class:`ElasticEngine` once per period:
    measures the period's throughput and busy fraction from the C counters, steps the
    controller, sets the level it chose. ``history`` keeps every period; ``decisions`` counts
    each kind of decision (the stats segment's counters)."""

    engine: ElasticEngine
    controller: ElasticController
    history: list[PeriodRecord] = field(default_factory=list)
    decisions: dict[str, int] = field(default_factory=lambda: {d.value: 0 for d in Decision})
    _t0: float = 0.0
    _last_t: float = 0.0
    _last_processed: int = 0
    _last_busy: int = 0
    _last_full: int = 0

    def start(self) -> None:
        """Take the first readings; the first period begins now."""
        self._t0 = self._last_t = time.monotonic()
        c = self.engine.counters()
        self._last_processed, self._last_full = c["processed"], c["ring_full"]
        self._last_busy = self._busy_ns()
        self.engine.set_level(self.controller.level)

    def _busy_ns(self) -> int:
        return sum(self.engine.worker(i)["busy_ns"] for i in range(self.engine.config.workers))

    def step(self) -> PeriodRecord:
        """End the current period: measure, decide, apply. Returns the period's record."""
        now = time.monotonic()
        dt = max(now - self._last_t, 1e-9)
        c = self.engine.counters()
        busy_ns = self._busy_ns()
        level = self.controller.level
        rate = (c["processed"] - self._last_processed) / dt
        busy = (busy_ns - self._last_busy) / 1e9 / dt / level
        saturated = busy >= SATURATED_BUSY or (c["ring_full"] > self._last_full and busy >= SATURATED_BUSY_RING_FULL)
        decision = self.controller.step(rate, saturated)
        self.decisions[decision.value] += 1
        if self.controller.level != level:
            self.engine.set_level(self.controller.level)
        rec = PeriodRecord(round(now - self._t0, 6), level, rate, busy, saturated, decision.value, self.controller.level)
        self.history.append(rec)
        self._last_t, self._last_processed, self._last_busy, self._last_full = now, c["processed"], busy_ns, c["ring_full"]
        return rec

    def rates_per_level(self) -> dict[int, float | None]:
        """The controller's peak rate per level (1-based), None where unexplored or invalidated."""
        return {i + 1: p for i, p in enumerate(self.controller.peak)}
