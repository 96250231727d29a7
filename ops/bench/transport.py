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
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ops.bench import transport_workers as w
from omdp.transport import mpqueue
from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec

CTX = mp.get_context("fork")
SENDER_CPU, RECEIVER_CPU = 0, 1
BASE = {"queue_size": 128, "max_message": 256, "mutex": False, "wait": "spin", "on_full": "block"}
"""Settings of every run unless a row says otherwise (issue 3: mutex off, 128 x 256 B)."""
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999))


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
            tput_n={"c": 4_000_000, "py": 400_000, "batch": 4_000_000, "slow": 100_000},
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
    "tcp": {"transport": "tcp", "lat": ("py_lat", "slow"), "tput": ("py_tput", "slow")},
    "zmq": {"transport": "zmq", "lat": ("py_lat", "slow"), "tput": ("py_tput", "slow")},
    "mpqueue": {"transport": "mpqueue", "lat": ("py_lat", "slow"), "tput": ("py_tput", "slow")},
}


class BenchError(RuntimeError):
    """A benchmark run failed: a process died, timed out, or checksums disagreed."""


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
             timeout: float = 120.0) -> tuple[dict[str, Any], dict[str, Any]]:
    """Receiver on CPU 1 (opens its end, says where), then sender on CPU 0; both results."""
    shared = mmap.mmap(-1, 4096)
    r_parent, r_child = CTX.Pipe(duplex=False)
    s_parent, s_child = CTX.Pipe(duplex=False)
    receiver = CTX.Process(target=_child, args=(RECEIVER_CPU, recv_fn, {**kwargs, "shared": shared}, r_child, True))
    receiver.start()
    r_child.close()
    sender = None
    try:
        _, endpoint = _wait(r_parent, receiver, 30, f"{recv_fn.__name__} start")
        sender = CTX.Process(target=_child, args=(SENDER_CPU, send_fn,
                                                  {**kwargs, "endpoint": endpoint, "shared": shared}, s_child, False))
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


def percentiles(samples: np.ndarray) -> dict[str, Any]:
    """p50/p99/p99.9/max in ns, after dropping the warm-up tenth; a tail percentile with
    fewer than 10/(1-p) samples is None (printed n/a)."""
    kept = samples[len(samples) // 10:]
    out: dict[str, Any] = {"n": int(len(kept))}
    for name, p in PERCENTILES:
        out[f"{name}_ns"] = float(np.percentile(kept, p * 100)) if len(kept) >= 10 / (1 - p) else None
    out["max_ns"] = float(kept.max()) if len(kept) else None
    return out


def _spec(transport: str, size: int) -> tuple[ChannelSpec, dict[str, Any]]:
    knobs = dict(BASE, max_message=max(BASE["max_message"], size))
    return ChannelSpec(transport=transport, **knobs), knobs


def _endpoint(transport: str, tag: str, tmpdir: str, spec: ChannelSpec) -> str:
    if transport == "vega-shm":
        return shm_name(new_run_id(), tag)
    if transport == "tcp":
        return "127.0.0.1:0"
    if transport == "zmq":
        return f"ipc://{tmpdir}/{tag}.sock"
    return mpqueue.create_endpoint(f"bench-{tag}-{time.monotonic_ns()}", spec)


def _settings_text(knobs: dict[str, Any]) -> str:
    return (f"queue {knobs['queue_size']} x {knobs['max_message']} B, mutex {'on' if knobs['mutex'] else 'off'}, "
            f"wait {knobs['wait']}")


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


def machine_info() -> dict[str, Any]:
    """CPU model, cores, kernel, clock source, Python: printed beside every table."""
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        clocksource = open("/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip()
    except OSError:
        clocksource = "unknown"
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "clocksource": clocksource, "sender_cpu": SENDER_CPU, "receiver_cpu": RECEIVER_CPU}


def _check(what: str, got: dict[str, Any], sent: dict[str, Any], n: int) -> None:
    if got.get("got", n) != n or sent.get("sent", n) != n:
        raise BenchError(f"{what}: sent {sent.get('sent')} received {got.get('got')} of {n}")
    if got["checksum"] != sent["checksum"]:
        raise BenchError(f"{what}: receiver checksum {got['checksum']:#x} != sender's {sent['checksum']:#x}")


def measure(plan: Plan, say: Callable[[str], None] = print) -> Report:
    """Run the whole plan; ``say`` gets one line per finished measurement."""
    report = Report(machine_info(), {"lat_sizes": plan.lat_sizes, "tput_sizes": plan.tput_sizes,
                                     "lat_n": plan.lat_n, "tput_n": plan.tput_n})
    tmpdir = tempfile.mkdtemp(prefix="omdp-bench-")
    for size in plan.tput_sizes:
        _, knobs = _spec("vega-shm", size)
        iters = max(plan.tput_n["c"] // max(size // 64, 1), 20_000)
        r = run_alone(w.memcpy_bw, {"size": size, "queue_size": knobs["queue_size"],
                                    "max_message": knobs["max_message"], "iters": iters})
        bps = r["bytes"] / r["elapsed_ns"] * 1e9
        report.memcpy.append({"size": size, "bytes_per_s": bps, "footprint": _settings_text(knobs)})
        say(f"memcpy {size:>6} B: {bps / 1e9:8.2f} GB/s")

    shared = mmap.mmap(-1, 4096)
    resp_parent, resp_child = CTX.Pipe(duplex=False)
    responder = CTX.Process(target=_child, args=(RECEIVER_CPU, w.pingpong,
                                                 {"shared": shared, "n": plan.pingpong_n, "initiator": False},
                                                 resp_child, False))
    responder.start()
    resp_child.close()
    r = run_alone(w.pingpong, {"shared": shared, "n": plan.pingpong_n, "initiator": True})
    _wait(resp_parent, responder, 30, "ping-pong responder")
    responder.join(10)
    report.pingpong = {"one_way": percentiles(r["rtt"] / 2), "rtt": percentiles(r["rtt"])}
    say(f"ping-pong one-way p50 {report.pingpong['one_way']['p50_ns']:.0f} ns")

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
            _check(f"{medium} latency {size} B", got, sent, n)
            row = {"medium": medium, "size": size, "settings": _settings_text(knobs), **percentiles(got["lat"])}
            report.latency.append(row)
            say(f"latency {medium:24} {size:>5} B: p50 {row['p50_ns']:>10.0f} ns  p99 {row['p99_ns'] or float('nan'):>10.0f} ns")

    for size in plan.tput_sizes:
        n = plan.tput_n["c"]
        r = run_alone(w.fused_tput, {"n": n, "size": size})
        rate = n / r["elapsed_ns"] * 1e9
        report.throughput.append({"medium": "fused", "size": size, "n": n, "messages_per_s": rate,
                                  "bytes_per_s": rate * size, "settings": "one process, direct call"})
        for medium, how in MEDIA.items():
            worker, cls = how["tput"]
            spec, knobs = _spec(how["transport"], size)
            n = plan.tput_n[cls] if size <= 1024 else max(plan.tput_n[cls] * 1024 // size, 2_000)
            endpoint = _endpoint(how["transport"], f"tput{size}", tmpdir, spec)
            got, sent = run_pair(getattr(w, worker + "_recv"), getattr(w, worker + "_send"),
                                 {"spec": spec, "endpoint": endpoint, "n": n, "size": size})
            _check(f"{medium} throughput {size} B", got, sent, n)
            rate = (n - 1) / max(got["t_last"] - got["t_first"], 1) * 1e9
            report.throughput.append({"medium": medium, "size": size, "n": n, "messages_per_s": rate,
                                      "bytes_per_s": rate * size, "settings": _settings_text(knobs),
                                      **({"receiver_batch": w.RECV_BATCH} if medium == "vega-shm C" else {}),
                                      **({"sender_batch": w.SEND_BATCH} if "batched" in medium else {})})
            say(f"throughput {medium:24} {size:>6} B: {rate / 1e6:9.3f} M msg/s  {rate * size / 1e9:7.2f} GB/s")
    report.targets = judge(report)
    return report


def _lat(report: Report, medium: str, size: int, key: str = "p50_ns") -> float | None:
    for row in report.latency:
        if row["medium"] == medium and row["size"] == size:
            return row[key]
    return None


def _tput(report: Report, medium: str, size: int, key: str = "messages_per_s") -> float | None:
    for row in report.throughput:
        if row["medium"] == medium and row["size"] == size:
            return row[key]
    return None


def judge(report: Report) -> list[dict[str, Any]]:
    """Issue 3's targets, each with the value this run measured (None: size not run)."""
    out: list[dict[str, Any]] = []

    def target(name: str, value: float | None, goal: str, met: bool | None, settings: str) -> None:
        out.append({"target": name, "value": value, "goal": goal, "met": met, "settings": settings})

    base = _settings_text(BASE)
    small = [s for s in report.plan["lat_sizes"] if 8 <= s <= 64]
    p50s = [_lat(report, "vega-shm C", s) for s in small]
    p99s = [_lat(report, "vega-shm C", s, "p99_ns") for s in small]
    worst50 = max((v for v in p50s if v is not None), default=None)
    worst99 = max((v for v in p99s if v is not None), default=None)
    target("vega-shm C one-way p50, 8..64 B (worst size)", worst50, "<= 250 ns",
           None if worst50 is None else worst50 <= 250, base)
    target("vega-shm C one-way p99, 8..64 B (worst size)", worst99, "<= 1000 ns",
           None if worst99 is None else worst99 <= 1000, base)
    r32 = _tput(report, "vega-shm C", 32)
    target("vega-shm C throughput at 32 B", r32, ">= 20 M msg/s", None if r32 is None else r32 >= 20e6,
           base + f", receiver credits every {w.RECV_BATCH}")
    b16 = _tput(report, "vega-shm C", 16384, "bytes_per_s")
    m16 = next((m["bytes_per_s"] for m in report.memcpy if m["size"] == 16384), None)
    ratio16 = None if b16 is None or m16 is None else b16 / m16
    target("vega-shm C bytes/s at 16 KB over memcpy bytes/s (same footprint)", ratio16, ">= 0.5",
           None if ratio16 is None else ratio16 >= 0.5, "queue 128 x 16384 B, mutex off, wait spin")
    p32 = _tput(report, "vega-shm Python batched", 32)
    target("vega-shm Python batched throughput at 32 B", p32, ">= 5 M msg/s", None if p32 is None else p32 >= 5e6,
           base + f", put_batch of {w.SEND_BATCH}, get_batch")
    for medium, factor in (("vega-shm C", 100), ("vega-shm Python", 30)):
        for other in ("zmq", "mpqueue"):
            ratios = []
            for s in report.plan["lat_sizes"]:
                mine, theirs = _lat(report, medium, s), _lat(report, other, s)
                if mine and theirs:
                    ratios.append(theirs / mine)
            worst = min(ratios) if ratios else None
            target(f"p50 of {other} over p50 of {medium} (worst size)", worst, f">= {factor}x",
                   None if worst is None else worst >= factor, base)
    return out
