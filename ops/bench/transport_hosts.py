"""``omdp bench transport --hosts netns``: the network media between two hosts.

The network transports measured where they are meant to run: the sender in one namespace
host and the receiver in another (``ops.netns.lab``: veth pairs on a bridge, so every byte
crosses the kernel's network stack on both sides, as between two machines, minus the wire
and the NICs), and, for reference, both on this machine's loopback. Media:

- ``vega-tcp C``: the Vega ring mirrored over TCP, driven by the same C loops as
  ``vega-shm C`` (transport_bench.h) on the link's sender and receiver;
- ``vega-tcp Python`` and ``tcp Python``: one put, one get + release per message through
  the transport API (tcp's only path, so this pair is the like-for-like comparison);
- ``vega-ib C`` / ``vega-ib Python`` where an RDMA device exists (else listed as not
  measured, with the reason).

One-way latency percentiles (sizes 8..512 B; the sender waits for the receiver's
acknowledgement, outside the channel, before the next message; the two processes' clock
offset is measured and subtracted as in ``omdp bench transport``) and throughput (messages
and bytes per second, first to last arrival). Sender on CPU 0, receiver on CPU 1.

Waits: spin-block for every row (the receiver sleeps until data comes; tcp's receiver
polls its socket the same way). A vega-tcp side's applier thread shares its process's
CPU; with spin or spin-yield the two threads take turns on one CPU, which on a machine
whose CPUs other work shares costs a scheduler slice per turn: the ``spin-yield`` row
shows what that gives (lower latency when idle, far less throughput here).
"""
from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.transport import open_receiver, open_sender
from omdp.transport.ib_verbs import ib_unavailable
from omdp.transport.spec import ChannelSpec
from omdp.units import fmt_ns
from ops.bench import transport_workers as w
from ops.bench.transport import _child, report_machine, run_pair
from ops.bench.transport_common import BenchError, check_payloads, clock_offset, percentiles
from ops.netns.lab import NamespaceLab, lab_unavailable

KNOBS = {"queue_size": 128, "max_message": 256, "mutex": False, "wait": "spin-block", "on_full": "block"}
"""Every run's channel; max_message grows to the message size where larger."""
CLONE_NEWNET = 0x40000000
MEDIA: dict[str, dict[str, Any]] = {
    "vega-tcp C": {"transport": "vega-tcp", "path": "c"},
    "vega-tcp C spin-yield": {"transport": "vega-tcp", "path": "c", "knobs": {"wait": "spin-yield"}},
    "vega-tcp Python": {"transport": "vega-tcp", "path": "py"},
    "tcp Python": {"transport": "tcp", "path": "py"},
    "vega-ib C": {"transport": "vega-ib", "path": "c"},
    "vega-ib Python": {"transport": "vega-ib", "path": "py"},
}


@dataclass(frozen=True)
class HostPlan:
    """Sizes and sample counts of a hosts run (per path: C loops, Python API)."""

    lat_sizes: tuple[int, ...]
    tput_sizes: tuple[int, ...]
    lat_n: dict[str, int]
    tput_n: dict[str, int]

    @staticmethod
    def full() -> HostPlan:
        return HostPlan(lat_sizes=(8, 64, 512), tput_sizes=(32, 256, 4096, 16384),
                        lat_n={"c": 20_000, "py": 5_000}, tput_n={"c": 400_000, "py": 50_000})

    @staticmethod
    def quick() -> HostPlan:
        return HostPlan(lat_sizes=(8,), tput_sizes=(32,), lat_n={"c": 2_000, "py": 500},
                        tput_n={"c": 20_000, "py": 3_000})


def enter_netns(name: str) -> None:
    """Move this (single-threaded, freshly forked) process into network namespace ``name``."""
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _placed(netns: str | None, cpu: int, fn: Callable[..., dict[str, Any]], kwargs: dict[str, Any], conn: Any,
            with_ready: bool) -> None:
    if netns:
        try:
            enter_netns(netns)
        except OSError as e:
            conn.send(("error", str(e)))
            conn.close()
            return
    _child(cpu, fn, kwargs, conn, with_ready)


def run_placed(recv_fn: Callable[..., dict[str, Any]], send_fn: Callable[..., dict[str, Any]],
               kwargs: dict[str, Any], recv_ns: str | None, send_ns: str | None, send_suffix: str = "",
               timeout: float = 120.0) -> tuple[dict[str, Any], dict[str, Any]]:
    """Receiver on CPU 1 in ``recv_ns``, then sender on CPU 0 in ``send_ns`` (its endpoint:
    the receiver's plus ``send_suffix``); both results."""
    return run_pair(recv_fn, send_fn, kwargs, timeout, target=_placed, recv_args=(recv_ns,), send_args=(send_ns,),
                    send_suffix=send_suffix)


# ---- the C loops on any Vega medium's ends ----

def c_lat_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
               ready: Callable[[str], None]) -> dict[str, Any]:
    rx = open_receiver(spec, endpoint)
    ready(rx.endpoint)  # type: ignore[attr-defined]
    before = w.calibrate(shared, False, 0)
    lat = np.zeros(n, dtype=np.int64)
    cs = ffi.new("uint64_t *")
    got = lib.omdp_tbench_vega_lat_recv(rx.c_handle, n, ffi.from_buffer("int64_t[]", lat), w._word(shared), cs)
    after = w.calibrate(shared, False, 1)
    rx.close()
    return {"got": int(got), "lat": lat[: max(int(got), 0)], "checksum": int(cs[0]), "cal": (before, after)}


def c_lat_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = open_sender(spec, endpoint)
    before = w.calibrate(shared, True, 0)
    cs = ffi.new("uint64_t *")
    sent = lib.omdp_tbench_vega_lat_send(tx.c_handle, n, size, w._word(shared), w.LAT_GAP_NS, cs)
    after = w.calibrate(shared, True, 1)
    tx.close()
    return {"sent": int(sent), "checksum": int(cs[0]), "cal": (before, after)}


def c_tput_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                ready: Callable[[str], None]) -> dict[str, Any]:
    rx = open_receiver(spec, endpoint)
    ready(rx.endpoint)  # type: ignore[attr-defined]
    cs, t0, t1 = ffi.new("uint64_t *"), ffi.new("int64_t *"), ffi.new("int64_t *")
    got = lib.omdp_tbench_vega_recv(rx.c_handle, n, w.RECV_BATCH, cs, t0, t1)
    np.frombuffer(shared, dtype=np.uint64, count=1)[0] = n
    rx.close()
    return {"got": int(got), "checksum": int(cs[0]), "t_first": int(t0[0]), "t_last": int(t1[0])}


def c_tput_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = open_sender(spec, endpoint)
    cs = ffi.new("uint64_t *")
    sent = lib.omdp_tbench_vega_send(tx.c_handle, n, size, cs)
    w._await_receiver(shared, n)  # a closing sender must not cut the receiver's last credits short
    tx.close()
    return {"sent": int(sent), "checksum": int(cs[0])}


WORKERS = {
    ("c", "lat"): (c_lat_recv, c_lat_send),
    ("c", "tput"): (c_tput_recv, c_tput_send),
    ("py", "lat"): (w.py_lat_recv, w.py_lat_send),
    ("py", "tput"): (w.py_tput_recv, w.py_tput_send),
}


def _settings(knobs: dict[str, Any]) -> str:
    return (f"queue {knobs['queue_size']} x {knobs['max_message']} B, mutex {'on' if knobs['mutex'] else 'off'}, "
            f"wait {knobs['wait']}")


def measure_hosts(plan: HostPlan, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Every available network medium, on loopback and across two namespace hosts."""
    why_ib = ib_unavailable()
    why_ns = lab_unavailable()
    media = {m: how for m, how in MEDIA.items() if how["transport"] != "vega-ib" or why_ib is None}
    report: dict[str, Any] = {
        "machine": report_machine(), "plan": {"lat_sizes": plan.lat_sizes, "tput_sizes": plan.tput_sizes,
                                            "lat_n": plan.lat_n, "tput_n": plan.tput_n},
        "knobs": KNOBS, "latency": [], "throughput": [],
        "not_measured": ({} if why_ib is None else {"vega-ib": why_ib})
                        | ({} if why_ns is None else {"netns placement": why_ns}),
    }
    lab = NamespaceLab(2).up() if why_ns is None else None
    try:
        placements = [("loopback", None, None, "127.0.0.1")]
        if lab is not None:
            placements.append(("netns", lab.hosts[1], lab.hosts[0], lab.addresses[1]))
            report["netns"] = {"sender": f"{lab.hosts[0]} {lab.addresses[0]}",
                               "receiver": f"{lab.hosts[1]} {lab.addresses[1]}", "link": "veth pairs on a bridge"}
        for placement, recv_ns, send_ns, address in placements:
            for medium, how in media.items():
                for size in plan.lat_sizes:
                    row = _latency(medium, how, size, plan, placement, recv_ns, send_ns, address)
                    report["latency"].append(row)
                    say(f"latency {medium:16} {placement:8} {size:>5} B: p50 {fmt_ns(row['p50_ns']):>10}  "
                        f"p99 {fmt_ns(row['p99_ns']):>10}")
                for size in plan.tput_sizes:
                    row = _throughput(medium, how, size, plan, placement, recv_ns, send_ns, address)
                    report["throughput"].append(row)
                    say(f"throughput {medium:16} {placement:8} {size:>6} B: {row['messages_per_s'] / 1e6:8.3f} M msg/s"
                        f"  {row['bytes_per_s'] / 1e9:6.3f} GB/s")
    finally:
        if lab is not None:
            lab.down()
    return report


def _device_suffix(how: dict[str, Any]) -> str:
    """vega-ib: ``@DEVICE[:PORT[:GID]]`` from OMDP_IB_DEVICE (docs/infiniband.md), else ""."""
    device = os.environ.get("OMDP_IB_DEVICE", "")
    return f"@{device}" if how["transport"] == "vega-ib" and device else ""


def _spec(how: dict[str, Any], size: int) -> tuple[ChannelSpec, dict[str, Any]]:
    knobs = dict(KNOBS, max_message=max(KNOBS["max_message"], size), **how.get("knobs", {}))
    return ChannelSpec(transport=how["transport"], **knobs), knobs


def _latency(medium: str, how: dict[str, Any], size: int, plan: HostPlan, placement: str, recv_ns: str | None,
             send_ns: str | None, address: str) -> dict[str, Any]:
    spec, knobs = _spec(how, max(size, 8))
    n = plan.lat_n[how["path"]]
    recv_fn, send_fn = WORKERS[(how["path"], "lat")]
    suffix = _device_suffix(how)
    got, sent = run_placed(recv_fn, send_fn, {"spec": spec, "endpoint": f"{address}:0{suffix}", "n": n,
                                              "size": size}, recv_ns, send_ns, suffix)
    check_payloads(f"{medium} {placement} latency {size} B", got, sent, n)
    offset = sum(clock_offset(s, r) for s, r in zip(sent["cal"], got["cal"])) / 2
    return {"medium": medium, "placement": placement, "size": size, "settings": _settings(knobs),
            **percentiles(got["lat"] - offset), "clock_offset_ns": offset}


def _throughput(medium: str, how: dict[str, Any], size: int, plan: HostPlan, placement: str, recv_ns: str | None,
                send_ns: str | None, address: str) -> dict[str, Any]:
    spec, knobs = _spec(how, size)
    n = plan.tput_n[how["path"]] if size <= 1024 else max(plan.tput_n[how["path"]] * 1024 // size, 2_000)
    recv_fn, send_fn = WORKERS[(how["path"], "tput")]
    suffix = _device_suffix(how)
    got, sent = run_placed(recv_fn, send_fn, {"spec": spec, "endpoint": f"{address}:0{suffix}", "n": n,
                                              "size": size}, recv_ns, send_ns, suffix)
    check_payloads(f"{medium} {placement} throughput {size} B", got, sent, n)
    rate = (n - 1) / max(got["t_last"] - got["t_first"], 1) * 1e9
    if rate <= 0:
        raise BenchError(f"{medium} {placement} throughput {size} B: no time passed")
    return {"medium": medium, "placement": placement, "size": size, "n": n, "messages_per_s": rate,
            "bytes_per_s": rate * size, "settings": _settings(knobs)}


def markdown_hosts(rep: dict[str, Any], command: str) -> str:
    """The report as markdown tables (docs/benchmarks.md takes them as is)."""
    m = rep["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}, clock source {m['clocksource']}, "
             f"Python {m['python']}; sender on CPU {m['sender_cpu']}, receiver on CPU {m['receiver_cpu']}.", "",
             f"Command: `{command}`", "",
             f"Channel: {_settings(rep['knobs'])} (max_message grows to the message size).", ""]
    if "netns" in rep:
        lines += [f"netns: sender in {rep['netns']['sender']}, receiver in {rep['netns']['receiver']} "
                  f"({rep['netns']['link']}).", ""]
    for what, why in rep["not_measured"].items():
        lines += [f"Not measured here: {what} ({why}).", ""]
    rows = sorted({(r["medium"], r["placement"]) for r in rep["latency"] + rep["throughput"]},
                  key=lambda k: (k[1], list(MEDIA).index(k[0])))
    lat_sizes, tput_sizes = list(rep["plan"]["lat_sizes"]), list(rep["plan"]["tput_sizes"])
    for key, title in (("p50_ns", "p50"), ("p99_ns", "p99"), ("p99.9_ns", "p99.9")):
        lines += [f"One-way latency, {title}:", "", "| medium | placement | " +
                  " | ".join(f"{s} B" for s in lat_sizes) + " |", "|" + "---|" * (len(lat_sizes) + 2)]
        for medium, placement in rows:
            cells = {r["size"]: r for r in rep["latency"] if r["medium"] == medium and r["placement"] == placement}
            lines.append(f"| {medium} | {placement} | " +
                         " | ".join(fmt_ns(cells[s][key]) if s in cells else "-" for s in lat_sizes) + " |")
        lines.append("")
    lines += ["Throughput, messages/s (GB/s):", "", "| medium | placement | " +
              " | ".join(f"{s} B" for s in tput_sizes) + " |", "|" + "---|" * (len(tput_sizes) + 2)]
    for medium, placement in rows:
        cells = {r["size"]: r for r in rep["throughput"] if r["medium"] == medium and r["placement"] == placement}
        lines.append(f"| {medium} | {placement} | " + " | ".join(
            f"{cells[s]['messages_per_s'] / 1e3:,.0f} k ({cells[s]['bytes_per_s'] / 1e9:.2f})" if s in cells else "-"
            for s in tput_sizes) + " |")
    return "\n".join(lines) + "\n"
