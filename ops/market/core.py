"""The market statistics' C core driven without a partition: partitions' partial state (or
the baseline's routing) and the leaders' merge, connected by in-process queues that keep
each source's order as a Vega channel does, interleaved across sources as a receiver sees
them. Tests compare its windows with the oracle's; the benchmark times the C per message.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from omdp.native import ffi, lib
from ops.market.records import MARKET_DTYPE

MODES = {"shared": int(lib.OMDP_MKT_MODE_SHARED), "route": int(lib.OMDP_MKT_MODE_ROUTE)}


@dataclass(frozen=True)
class MarketConfig:
    """The knobs both operators share (market_stats.h documents each)."""

    window_ms: int = 1000
    capacity: int = 1 << 14
    leaders: int = 1
    lateness: int = 1
    multiplier: int = 100
    out_records: int = 128
    pending: int = 8


class _Op:
    """One C operator's state, made through its vtable's init and closed with it."""

    def __init__(self, vtable: object, ctype: str, values: dict[str, int], name: str) -> None:
        self.vt = vtable
        self._params = ffi.new(ctype + " *", values)
        self._err = ffi.new("char[]", 256)
        self._name = ffi.new("char[]", name.encode())
        init = ffi.new("omdp_op_init_t *", {"params": self._params, "params_size": ffi.sizeof(ctype),
                                            "replica": 0, "replicas": 1, "name": self._name,
                                            "err": self._err, "err_size": 256})
        box = ffi.new("void **")
        rc = vtable.init(box, init)
        if rc != 0:
            raise ValueError(f"{name}: {ffi.string(self._err).decode()}")
        self.state = box[0]

    def counters(self) -> dict[str, int]:
        out = ffi.new("omdp_counter_t[32]")
        n = self.vt.counters(self.state, out, 32)
        return {ffi.string(out[i].name).decode(): int(out[i].value) for i in range(min(n, 32))}

    def close(self) -> None:
        if self.state is not None:
            self.vt.close(self.state)
            self.state = None


def stats_op(cfg: MarketConfig, source: int, mode: str = "shared") -> _Op:
    """A market_stats state for partition ``source``."""
    return _Op(lib.omdp_market_stats_vtable(), "omdp_market_stats_params_t", {
        "window_ms": cfg.window_ms, "capacity": cfg.capacity, "leaders": cfg.leaders, "lateness": cfg.lateness,
        "mode": MODES[mode], "source": source, "multiplier": cfg.multiplier, "out_records": cfg.out_records,
    }, f"market_stats[{source}]")


def merge_op(cfg: MarketConfig, sources: int, leader: int) -> _Op:
    """A market_merge state for leader ``leader`` of ``sources`` partitions."""
    return _Op(lib.omdp_market_merge_vtable(), "omdp_market_merge_params_t", {
        "sources": sources, "capacity": cfg.capacity, "pending": cfg.pending, "leader": leader,
        "out_records": cfg.out_records,
    }, f"market_merge[{leader}]")


@dataclass
class Network:
    """P partitions' market_stats and L leaders' market_merge joined by per-(source, leader)
    FIFO queues. ``feed`` one partition's batch, ``deliver`` queued batches (a seeded
    interleaving across sources), ``finish`` the partitions still alive, then the leaders."""

    cfg: MarketConfig
    partitions: int
    mode: str = "shared"
    seed: int = 0
    stats: list[_Op] = field(init=False)
    merges: list[_Op] = field(init=False)
    queues: dict[tuple[int, int], deque] = field(init=False)
    windows: list[np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self.stats = [stats_op(self.cfg, k, self.mode) for k in range(self.partitions)]
        self.merges = [merge_op(self.cfg, self.partitions, l) for l in range(self.cfg.leaders)]
        self.queues = {(k, l): deque() for k in range(self.partitions) for l in range(self.cfg.leaders)}
        self.windows = []
        self._rng = np.random.default_rng(self.seed)
        self._source = 0
        self._cb_stats = ffi.callback("int(void *, uint32_t, const uint8_t *, uint32_t)", self._to_leader)
        self._cb_merge = ffi.callback("int(void *, uint32_t, const uint8_t *, uint32_t)", self._to_sink)

    def _to_leader(self, ctx: object, port: int, records: object, nbytes: int) -> int:
        self.queues[(self._source, port)].append(bytes(ffi.buffer(records, nbytes)))
        return 0

    def _to_sink(self, ctx: object, port: int, records: object, nbytes: int) -> int:
        self.windows.append(np.frombuffer(bytes(ffi.buffer(records, nbytes)), dtype=MARKET_DTYPE))
        return 0

    def feed(self, partition: int, batch: np.ndarray) -> None:
        """One batch of OPRA records into partition ``partition``'s market_stats."""
        self._source = partition
        data = ffi.from_buffer(np.ascontiguousarray(batch).view(np.uint8))
        rc = lib.omdp_market_stats_feed(self.stats[partition].state, data, len(data), self._cb_stats, ffi.NULL)
        if rc != 0:
            raise RuntimeError(f"market_stats[{partition}]: {rc}")

    def deliver(self, upto: int | None = None) -> None:
        """Hand queued batches to the leaders, sources picked at random (each source's order
        kept), at most ``upto`` batches (all when None)."""
        done = 0
        while upto is None or done < upto:
            ready = [k for k, q in self.queues.items() if q]
            if not ready:
                return
            source, leader = ready[int(self._rng.integers(len(ready)))]
            data = self.queues[(source, leader)].popleft()
            buf = ffi.from_buffer(data)
            rc = lib.omdp_market_merge_feed(self.merges[leader].state, buf, len(data), self._cb_merge, ffi.NULL)
            if rc != 0:
                raise RuntimeError(f"market_merge[{leader}]: {rc}")
            done += 1

    def kill(self, partition: int) -> None:
        """Partition ``partition`` dies: what it had not yet sent is lost, it never finishes."""
        for (k, _), q in self.queues.items():
            if k == partition:
                q.clear()
        self.stats[partition].close()

    def gone(self, partition: int) -> None:
        """The leaders learn that ``partition`` died (after all it had queued was delivered,
        as a partition loop drains a dead sender's ring first)."""
        for leader, op in enumerate(self.merges):
            rc = lib.omdp_market_merge_gone(op.state, 1 << partition, self._cb_merge, ffi.NULL)
            if rc != 0:
                raise RuntimeError(f"market_merge[{leader}] gone: {rc}")

    def finish(self) -> np.ndarray:
        """End every live partition's stream (its open windows, its DONE), deliver
        everything, end the leaders; every window record the leaders emitted."""
        for k, op in enumerate(self.stats):
            if op.state is not None:
                self._source = k
                rc = lib.omdp_market_stats_finish(op.state, self._cb_stats, ffi.NULL)
                if rc != 0:
                    raise RuntimeError(f"market_stats[{k}] finish: {rc}")
        self.deliver()
        for leader, op in enumerate(self.merges):
            rc = lib.omdp_market_merge_finish(op.state, self._cb_merge, ffi.NULL)
            if rc != 0:
                raise RuntimeError(f"market_merge[{leader}] finish: {rc}")
        return np.concatenate(self.windows) if self.windows else np.zeros(0, MARKET_DTYPE)

    def close(self) -> None:
        for op in [*self.stats, *self.merges]:
            op.close()
