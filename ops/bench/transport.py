"""``omdp bench transport``: the paper's Figure 7 on this machine, every medium side by side.

One run measures, in this order: memcpy bandwidth (the ceiling of a copying transport, over
the same footprint as the ring), a cache-line ping-pong between the two CPUs (the floor of
any hop), then for each medium one-way latency (sizes 8..512 B, samples stamped in C, p50 /
p99 / p99.9 / max) and throughput (32 B..16 KB, messages/s and bytes/s, from the first to
the last arrival). Media: vega-shm driven by a C loop, vega-shm through the Python API
(one message per call, and batched), fused (a direct call in one process), tcp, zmq and
mpqueue. The sender runs on CPU 0, the receiver on CPU 1; every receiver checksums every
payload and a run whose checksums disagree is an error. Results go to JSON; the targets of
issue 3 are judged in the same run and printed with their settings.
"""
from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from omdp.runtime import machine
from omdp.transport import mpqueue
from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.units import fmt_ns
from ops.bench import transport_workers as w
from ops.bench.transport_common import (BASE, PERCENTILES, RECEIVER_CPU, SENDER_CPU, BenchError, check_payloads,
                                        clock_offset, percentiles, settings_text)

CTX = mp.get_context("fork")


@dataclass(frozen=True)
class Plan:
    """How much to measure: sizes and sample counts per kind of path."""

    lat_sizes: tuple[int, ...]
    tput_sizes: tuple[int, ...]
    lat_n: dict[str, int]
    tput_n: dict[str, int]
    pingpong_n: int

    @staticmethod
    def full() -> Plan:
        return Plan(
            lat_sizes=(8, 16, 32, 64, 128, 256, 512),
            tput_sizes=(32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384),
            lat_n={"c": 100_000, "py": 20_000, "slow": 12_000},
            tput_n={"c": 4_000_000, "py": 200_000, "batch": 4_000_000, "slow": 50_000},
            pingpong_n=200_000,
        )

    @staticmethod
    def quick() -> Plan:
        return Plan(
            lat_sizes=(8, 64),
            tput_sizes=(32, 16384),
            lat_n={"c": 5_000, "py": 2_000, "slow": 500},
            tput_n={"c": 200_000, "py": 20_000, "batch": 200_000, "slow": 5_000},
            pingpong_n=5_000,
        )


MEDIA: dict[str, dict[str, Any]] = {
    # name: transport, latency worker pair, throughput worker pair, sample-count class
    "vega-shm C": {"transport": "vega-shm", "lat": ("vega_c_lat", "c"), "tput": ("vega_c_tput", "c")},
    "vega-shm Python": {"transport": "vega-shm", "lat": ("py_lat", "py"), "tput": ("py_tput", "py")},
    "vega-shm Python batched": {"transport": "vega-shm", "lat": None, "tput": ("py_batch_tput", "batch")},
    # beside the spinning row: what a box whose CPUs are shared with other work gives
    "vega-shm C spin-yield": {"transport": "vega-shm", "lat": None, "tput": ("vega_c_tput", "c"),
                              "knobs": {"wait": "spin-yield"}},
    "tcp": {"transport": "tcp", "lat": ("py_lat", "slow"), "tput": ("py_tput", "slow")},
    "zmq": {"transport": "zmq", "lat": ("py_lat", "slow"), "tput": ("py_tput", "slow")},
    "mpqueue": {"transport": "mpqueue", "lat": ("py_lat", "slow"), "tput": ("py_tput", "slow")},
}


def _pin(cpu: int) -> None:
    """Pin this process to ``cpu`` where the machine has it (a 1-CPU box runs unpinned)."""
    if cpu < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpu})


def _child(cpu: int, fn: Callable[..., dict[str, Any]], kwargs: dict[str, Any], conn: Any, with_ready: bool) -> None:
    _pin(cpu)
    try:
        if with_ready:
            kwargs = {**kwargs, "ready": lambda ep: conn.send(("ready", ep))}
        conn.send(("done", fn(**kwargs)))
    except BaseException as e:  # reported to the parent, which raises BenchError
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _wait(conn: Any, proc: Any, timeout: float, what: str) -> tuple[str, Any]:
    if not conn.poll(timeout):
        proc.kill()
        raise BenchError(f"{what}: no answer within {timeout:.0f} s")
    kind, value = conn.recv()
    if kind == "error":
        raise BenchError(f"{what}: {value}")
    return kind, value


def run_pair(recv_fn: Callable[..., dict[str, Any]], send_fn: Callable[..., dict[str, Any]], kwargs: dict[str, Any],
             timeout: float = 120.0, *, target: Callable[..., None] = _child, recv_args: tuple[Any, ...] = (),
             send_args: tuple[Any, ...] = (), send_suffix: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """Receiver on CPU 1 (opens its end, says where), then sender on CPU 0 (its endpoint: the
    receiver's plus ``send_suffix``); both results. Each process runs ``target`` with its
    ``*_args`` first, then the arguments of ``_child`` (which ``target`` ends by calling)."""
    shared = mmap.mmap(-1, 4096)
    r_parent, r_child = CTX.Pipe(duplex=False)
    s_parent, s_child = CTX.Pipe(duplex=False)
    receiver = CTX.Process(target=target, args=(*recv_args, RECEIVER_CPU, recv_fn, {**kwargs, "shared": shared},
                                                r_child, True))
    receiver.start()
    r_child.close()
    sender = None
    try:
        _, endpoint = _wait(r_parent, receiver, 30, f"{recv_fn.__name__} start")
        sender = CTX.Process(target=target, args=(*send_args, SENDER_CPU, send_fn,
                                                  {**kwargs, "endpoint": endpoint + send_suffix, "shared": shared},
                                                  s_child, False))
        sender.start()
        s_child.close()
        _, sent = _wait(s_parent, sender, timeout, send_fn.__name__)
        _, got = _wait(r_parent, receiver, timeout, recv_fn.__name__)
    finally:
        for proc in (receiver, sender):
            if proc is not None:
                proc.join(5)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
    return got, sent


def run_alone(fn: Callable[..., dict[str, Any]], kwargs: dict[str, Any], cpu: int = SENDER_CPU) -> dict[str, Any]:
    """One process pinned to ``cpu``."""
    parent, child = CTX.Pipe(duplex=False)
    proc = CTX.Process(target=_child, args=(cpu, fn, kwargs, child, False))
    proc.start()
    child.close()
    try:
        return _wait(parent, proc, 300, fn.__name__)[1]
    finally:
        proc.join(5)


def pingpong(n: int) -> dict[str, Any]:
    """Cache-line ping-pong between the sender's and the receiver's CPU: one-way time (half
    the round trip, one clock: the floor of any hop) and the two CPUs' clock offset. (Each
    latency run measures its own offset the same way, in its own two processes.)"""
    shared = mmap.mmap(-1, 4096)
    resp_parent, resp_child = CTX.Pipe(duplex=False)
    responder = CTX.Process(target=_child, args=(RECEIVER_CPU, w.pingpong,
                                                 {"shared": shared, "n": n, "initiator": False}, resp_child, False))
    responder.start()
    resp_child.close()
    mine = run_alone(w.pingpong, {"shared": shared, "n": n, "initiator": True})
    theirs = _wait(resp_parent, responder, 30, "ping-pong responder")[1]
    responder.join(10)
    k = min(mine["done"], theirs["done"])
    rtt = mine["t_b"][:k] - mine["t_a"][:k]
    return {"one_way": percentiles(rtt / 2), "rtt": percentiles(rtt), "clock_offset_ns": clock_offset(mine, theirs)}


def _spec(transport: str, size: int, **override: Any) -> tuple[ChannelSpec, dict[str, Any]]:
    knobs = dict(BASE, max_message=max(BASE["max_message"], size), **override)
    return ChannelSpec(transport=transport, **knobs), knobs


def _endpoint(transport: str, tag: str, tmpdir: str, spec: ChannelSpec) -> str:
    if transport == "vega-shm":
        return shm_name(new_run_id(), tag)
    if transport == "tcp":
        return "127.0.0.1:0"
    if transport == "zmq":
        return f"ipc://{tmpdir}/{tag}.sock"
    return mpqueue.create_endpoint(f"bench-{tag}-{time.monotonic_ns()}", spec)


@dataclass
class Report:
    """Everything one run measured, JSON-ready."""

    machine: dict[str, Any]
    plan: dict[str, Any]
    memcpy: list[dict[str, Any]] = field(default_factory=list)
    pingpong: dict[str, Any] = field(default_factory=dict)
    latency: list[dict[str, Any]] = field(default_factory=list)
    throughput: list[dict[str, Any]] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"machine": self.machine, "plan": self.plan, "base_settings": BASE, "memcpy": self.memcpy,
                "pingpong": self.pingpong, "latency": self.latency, "throughput": self.throughput,
                "targets": self.targets}


def report_machine() -> dict[str, Any]:
    """CPU model, cores, memory, kernel, clock source, Python: printed beside every table (the
    report's keys; the figures are ``omdp.runtime.machine``'s)."""
    m = machine.machine_info()
    return {"cpu": m["cpu_model"], "cpus": m["logical_cpus"], "memory_bytes": m["memory_bytes"],
            "kernel": m["kernel"], "python": m["python"],
            "clocksource": machine.clocksource(), "sender_cpu": SENDER_CPU, "receiver_cpu": RECEIVER_CPU}


def measure(plan: Plan, say: Callable[[str], None] = print) -> Report:
    """Run the whole plan; ``say`` gets one line per finished measurement."""
    report = Report(report_machine(), {"lat_sizes": plan.lat_sizes, "tput_sizes": plan.tput_sizes,
                                     "lat_n": plan.lat_n, "tput_n": plan.tput_n})
    tmpdir = tempfile.mkdtemp(prefix="omdp-bench-")  # zmq ipc sockets
    try:
        _measure_into(report, plan, tmpdir, say)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    report.targets = judge(report.as_dict())
    return report


def _measure_into(report: Report, plan: Plan, tmpdir: str, say: Callable[[str], None]) -> None:
    for size in plan.tput_sizes:
        _, knobs = _spec("vega-shm", size)
        iters = max(plan.tput_n["c"] // max(size // 64, 1), 20_000)
        r = run_alone(w.memcpy_bw, {"size": size, "queue_size": knobs["queue_size"],
                                    "max_message": knobs["max_message"], "iters": iters})
        bps = r["bytes"] / r["elapsed_ns"] * 1e9
        report.memcpy.append({"size": size, "bytes_per_s": bps, "footprint": settings_text(knobs)})
        say(f"memcpy {size:>6} B: {bps / 1e9:8.2f} GB/s")

    report.pingpong = pingpong(plan.pingpong_n)
    say(f"ping-pong one-way p50 {report.pingpong['one_way']['p50_ns']:.0f} ns; receiver CPU clock - sender CPU "
        f"clock {report.pingpong['clock_offset_ns']:+.0f} ns")

    for size in plan.lat_sizes:
        r = run_alone(w.fused_lat, {"n": plan.lat_n["c"], "size": size})
        report.latency.append({"medium": "fused", "size": size, "settings": "one process, direct call",
                               **percentiles(r["lat"])})
        for medium, how in MEDIA.items():
            if how["lat"] is None:
                continue
            worker, cls = how["lat"]
            spec, knobs = _spec(how["transport"], size)
            n = plan.lat_n[cls]
            endpoint = _endpoint(how["transport"], f"lat{size}", tmpdir, spec)
            got, sent = run_pair(getattr(w, worker + "_recv"), getattr(w, worker + "_send"),
                                 {"spec": spec, "endpoint": endpoint, "n": n, "size": size})
            check_payloads(f"{medium} latency {size} B", got, sent, n)
            offsets = [clock_offset(s_cal, r_cal) for s_cal, r_cal in zip(sent["cal"], got["cal"])]
            offset = sum(offsets) / 2
            floor = float(np.median(np.concatenate([(c["t_b"] - c["t_a"]) / 2 for c in sent["cal"]])))
            row = {"medium": medium, "size": size, "settings": settings_text(knobs),
                   **percentiles(got["lat"] - offset), "raw_p50_ns": percentiles(got["lat"])["p50_ns"],
                   "clock_offset_ns": offsets, "floor_p50_ns": floor}
            report.latency.append(row)
            say(f"latency {medium:24} {size:>5} B: p50 {fmt_ns(row['p50_ns']):>10}  p99 {fmt_ns(row['p99_ns']):>10}"
                f"  (ping-pong floor in this run {fmt_ns(floor)})")

    for size in plan.tput_sizes:
        n = plan.tput_n["c"]
        r = run_alone(w.fused_tput, {"n": n, "size": size})
        rate = n / r["elapsed_ns"] * 1e9
        report.throughput.append({"medium": "fused", "size": size, "n": n, "messages_per_s": rate,
                                  "bytes_per_s": rate * size, "settings": "one process, direct call"})
        for medium, how in MEDIA.items():
            worker, cls = how["tput"]
            spec, knobs = _spec(how["transport"], size, **how.get("knobs", {}))
            n = plan.tput_n[cls] if size <= 1024 else max(plan.tput_n[cls] * 1024 // size, 2_000)
            endpoint = _endpoint(how["transport"], f"tput{size}", tmpdir, spec)
            got, sent = run_pair(getattr(w, worker + "_recv"), getattr(w, worker + "_send"),
                                 {"spec": spec, "endpoint": endpoint, "n": n, "size": size})
            check_payloads(f"{medium} throughput {size} B", got, sent, n)
            rate = (n - 1) / max(got["t_last"] - got["t_first"], 1) * 1e9
            report.throughput.append({"medium": medium, "size": size, "n": n, "messages_per_s": rate,
                                      "bytes_per_s": rate * size, "settings": settings_text(knobs),
                                      **({"receiver_batch": w.RECV_BATCH} if worker == "vega_c_tput" else {}),
                                      **({"sender_batch": w.SEND_BATCH} if "batched" in medium else {})})
            say(f"throughput {medium:24} {size:>6} B: {rate / 1e6:9.3f} M msg/s  {rate * size / 1e9:7.2f} GB/s")

    from ops.bench.transport_mpi import add_mpi_rows  # one mpiexec job for every MPI row

    add_mpi_rows(report, plan, tmpdir, say)


def _row(rows: list[dict[str, Any]], medium: str, size: int) -> dict[str, Any] | None:
    return next((r for r in rows if r["medium"] == medium and r["size"] == size), None)


def judge(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 3's targets from a report dict, each with the value this run measured (None:
    size not run) and the settings, latency ones with the ping-pong floor the run had."""
    out: list[dict[str, Any]] = []

    def target(name: str, value: float | None, goal: str, ok: Callable[[float], bool], settings: str) -> None:
        out.append({"target": name, "value": value, "goal": goal, "met": None if value is None else ok(value),
                    "settings": settings})

    base = settings_text(BASE)
    lat, tput = rep["latency"], rep["throughput"]
    small = [r for s in rep["plan"]["lat_sizes"] if 8 <= s <= 64 if (r := _row(lat, "vega-shm C", s))]
    for key, goal, limit in (("p50_ns", "<= 250 ns", 250), ("p99_ns", "<= 1000 ns", 1000)):
        worst = max((r for r in small if r[key] is not None), key=lambda r: r[key], default=None)
        floor = f"; worst at {worst['size']} B, ping-pong floor of that run {worst.get('floor_p50_ns', 0):.0f} ns" \
            if worst else ""
        target(f"vega-shm C one-way {key[:-3]}, 8..64 B (worst size)", worst[key] if worst else None, goal,
               lambda v, limit=limit: v <= limit, base + floor)
    r32 = _row(tput, "vega-shm C", 32)
    target("vega-shm C throughput at 32 B", r32["messages_per_s"] if r32 else None, ">= 20 M msg/s",
           lambda v: v >= 20e6, base + f", receiver credits every {w.RECV_BATCH}")
    b16 = _row(tput, "vega-shm C", 16384)
    m16 = next((m["bytes_per_s"] for m in rep["memcpy"] if m["size"] == 16384), None)
    target("vega-shm C bytes/s at 16 KB over memcpy bytes/s (same footprint)",
           b16["bytes_per_s"] / m16 if b16 and m16 else None, ">= 0.5", lambda v: v >= 0.5,
           "queue 128 x 16384 B, mutex off, wait spin")
    p32 = _row(tput, "vega-shm Python batched", 32)
    target("vega-shm Python batched throughput at 32 B", p32["messages_per_s"] if p32 else None, ">= 5 M msg/s",
           lambda v: v >= 5e6, base + f", put_batch of {w.SEND_BATCH}, get_batch")
    for medium, factor in (("vega-shm C", 100), ("vega-shm Python", 30)):
        for other in ("zmq", "mpqueue"):
            ratios = [(t["p50_ns"] / m["p50_ns"], s) for s in rep["plan"]["lat_sizes"]
                      if (m := _row(lat, medium, s)) and (t := _row(lat, other, s)) and m["p50_ns"] and t["p50_ns"]]
            worst = min(ratios, default=None)
            where = ""
            if worst:
                floor = (_row(lat, medium, worst[1]) or {}).get("floor_p50_ns")
                where = f"; worst at {worst[1]} B" + (f", ping-pong floor of that run {floor:.0f} ns" if floor else "")
            target(f"p50 of {other} over p50 of {medium} (worst size)", worst[0] if worst else None, f">= {factor}x",
                   lambda v, f=factor: v >= f, base + where)
    return out
