"""Markdown tables of a transport benchmark report (docs/benchmarks.md takes them as is)."""
from __future__ import annotations

from typing import Any

from omdp.units import fmt_ns


SETTINGS = {
    "fused": "one process, a direct call",
    "vega-shm C": "C loop; queue 128 x max(256 B, size) slots, mutex off, wait spin",
    "vega-shm C spin-yield": "as vega-shm C, wait spin-yield",
    "vega-shm Python": "one put / get+release_buffer per message; as vega-shm C",
    "vega-shm Python batched": "put_batch of 64, get_batch + release_batch; as vega-shm C",
    "tcp": "C stream, TCP_NODELAY, 128 receiver slots; Python API per message",
    "zmq": "pyzmq PUSH/PULL ipc://, HWM 128",
    "mpqueue": "multiprocessing.Queue(maxsize=128)",
    "memcpy (one CPU)": "size-byte copies into 128 slots of the ring's stride, best of 5 passes",
    "mpi C": "C loop; Open MPI, one mpiexec job, shared memory; 128 pre-posted receives of max(256 B, size)",
    "mpi Python": "one put / get+release_buffer per message; as mpi C",
}
"""What each row is, printed beside it (the JSON rows carry the exact knobs)."""


def _rate(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1e6:.2f} M" if v >= 1e5 else f"{v / 1e3:.1f} k"


def _gbs(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e9:.2f}"


def _offsets(rep: dict[str, Any]) -> str:
    values = [o for r in rep["latency"] for o in r.get("clock_offset_ns", [])]
    if not values:
        return "none measured"
    return f"{min(values):+.0f} to {max(values):+.0f} ns"


def _grid(rows: list[dict[str, Any]], sizes: list[int], cell: Any, media: list[str]) -> list[str]:
    head = "| medium | settings | " + " | ".join(f"{s} B" for s in sizes) + " |"
    out = [head, "|" + "---|" * (len(sizes) + 2)]
    for m in media:
        mine = {r["size"]: r for r in rows if r["medium"] == m}
        if not mine:
            continue
        out.append(f"| {m} | {SETTINGS.get(m, '')} | " + " | ".join(cell(mine.get(s)) for s in sizes) + " |")
    return out


def markdown(rep: dict[str, Any], command: str) -> str:
    """The report as markdown: machine, command, latency and throughput grids, targets."""
    m = rep["machine"]
    lat_sizes = list(rep["plan"]["lat_sizes"])
    tput_sizes = list(rep["plan"]["tput_sizes"])
    media = list(dict.fromkeys(r["medium"] for r in rep["latency"] + rep["throughput"]))
    lines = [
        f"Machine: {m['cpu']}, {m['cpus']} CPUs, Linux {m['kernel']}, clock source {m['clocksource']}, "
        f"Python {m['python']}; sender on CPU {m['sender_cpu']}, receiver on CPU {m['receiver_cpu']}.",
        "",
        f"Command: `{command}`",
        "",
        f"Floor: cache-line ping-pong between the two CPUs, one-way (half the round trip): "
        f"p50 {fmt_ns(rep['pingpong']['one_way']['p50_ns'])}, p99 {fmt_ns(rep['pingpong']['one_way']['p99_ns'])} "
        f"(n = {rep['pingpong']['one_way']['n']}). The two CPUs' clocks can disagree on a VM: every "
        f"cross-process latency run measures the offset (receiver CPU clock minus sender CPU clock) by "
        f"a ping-pong in the same two processes before and after its samples and subtracts the mean; "
        f"offsets seen in this run: {_offsets(rep)}.",
        "",
    ]
    lines += ["Cache-line ping-pong one-way p50 measured by each vega-shm latency run's own two processes "
              "(the vCPUs' placement on the host changes over time; this is the floor that run had):", ""]
    lines += _grid(rep["latency"], lat_sizes, lambda r: fmt_ns(r.get("floor_p50_ns")) if r else "-",
                   ["vega-shm C", "vega-shm Python"])
    lines.append("")
    for key, title in (("p50_ns", "p50"), ("p99_ns", "p99"), ("p99.9_ns", "p99.9"), ("max_ns", "max")):
        lines += [f"One-way latency, {title} (samples per cell: C paths and fused "
                  f"{rep['plan']['lat_n']['c']}, vega Python {rep['plan']['lat_n']['py']}, tcp/zmq/mpqueue "
                  f"{rep['plan']['lat_n']['slow']}; the first tenth dropped as warm-up):", ""]
        lines += _grid(rep["latency"], lat_sizes, lambda r, k=key: fmt_ns(r[k]) if r else "-", media)
        lines.append("")
    lines += ["Throughput, messages/s (first to last arrival at the receiver):", ""]
    lines += _grid(rep["throughput"], tput_sizes, lambda r: _rate(r["messages_per_s"]) if r else "-", media)
    lines += ["", "Throughput, GB/s, with memcpy over the same footprint (the ceiling):", ""]
    memcpy_rows = [{"medium": "memcpy (one CPU)", "size": r["size"], "settings": r["footprint"],
                    "bytes_per_s": r["bytes_per_s"]} for r in rep["memcpy"]]
    lines += _grid(rep["throughput"] + memcpy_rows, tput_sizes, lambda r: _gbs(r["bytes_per_s"]) if r else "-",
                   media + ["memcpy (one CPU)"])
    lines += ["", "Targets (issue 3), judged in this run:", "", "| target | goal | measured | met | settings |",
              "|---|---|---|---|---|"]
    for t in rep["targets"]:
        v = t["value"]
        if v is None:
            shown = "n/a"
        elif "ns" in t["goal"]:
            shown = fmt_ns(v)
        elif "msg/s" in t["goal"]:
            shown = f"{v / 1e6:.2f} M msg/s"
        else:
            shown = f"{v:.2f}" + ("x" if "x" in t["goal"] else "")
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        lines.append(f"| {t['target']} | {t['goal']} | {shown} | {met} | {t['settings']} |")
    return "\n".join(lines) + "\n"
