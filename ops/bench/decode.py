"""``omdp bench decode``: OPRA FAST V2 decode throughput per core.

Two paths over a capture held in memory: the C batch path (many packets per call, into a
reused record buffer, as a feed handler decodes) and the per-packet Python API
(``decode_packet``). Throughput is messages per second of the decoding thread's CPU time
(per core, unaffected by other processes taking the CPU), with wall-clock figures beside
it; each is the median of several repetitions.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import click
import numpy as np

from feedhandlers.captures import read_capture
from feedhandlers.opra_fast import BatchDecoder, decode_packet
from omdp.native import ffi, lib
from omdp.runtime.machine import machine_info
from ops.bench.random_capture import random_packets
from ops.cli.bench import bench


def held_in_memory(path: str, fmt: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A capture's packets copied into one contiguous in-memory buffer."""
    cap = read_capture(path, fmt)
    buf, offsets, lengths = cap.contiguous()
    return np.array(buf, dtype=np.uint8), offsets.astype(np.int64), lengths.astype(np.uint32)


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure_batch(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, chunk: int, repeats: int, fast: bool = True) -> dict:
    """The C batch path: every packet once per repetition, ``chunk`` packets per C call."""
    n = int(offsets.shape[0])
    dec = BatchDecoder(max_messages=chunk * 64, side_bytes=1 << 22, max_packets=chunk)
    prev = lib.omdp_opra_set_fast_path(1 if fast else 0)
    cpu: list[float] = []
    wall: list[float] = []
    messages = 0
    try:
        for _ in range(repeats + 1):  # the first pass warms caches and page tables
            m = 0
            t0, c0 = time.perf_counter(), time.thread_time()
            for s in range(0, n, chunk):
                m += int(dec.decode(buf, offsets[s : s + chunk], lengths[s : s + chunk], s).records.shape[0])
            c1, t1 = time.thread_time(), time.perf_counter()
            cpu.append(m / (c1 - c0))
            wall.append(m / (t1 - t0))
            messages = m
    finally:
        lib.omdp_opra_set_fast_path(prev)
    bad = dec.counters["packets_bad"]
    return {"messages": messages, "malformed_packets": bad // (repeats + 1), "chunk_packets": chunk,
            "msgs_per_s_cpu": _stats(cpu[1:]), "msgs_per_s_wall": _stats(wall[1:])}


def measure_python(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, packets: int, repeats: int) -> dict:
    """The per-packet Python API over the first ``packets`` packets."""
    data = [bytes(buf[o : o + n]) for o, n in zip(offsets[:packets].tolist(), lengths[:packets].tolist())]
    cpu: list[float] = []
    wall: list[float] = []
    m = 0
    for _ in range(repeats):
        m = 0
        t0, c0 = time.perf_counter(), time.thread_time()
        for i, p in enumerate(data):
            try:
                m += len(decode_packet(p, i))
            except ValueError:
                pass
        c1, t1 = time.thread_time(), time.perf_counter()
        cpu.append(m / (c1 - c0))
        wall.append(m / (t1 - t0))
    return {"packets": len(data), "messages": m, "msgs_per_s_cpu": _stats(cpu), "msgs_per_s_wall": _stats(wall)}


def run_decode_bench(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, *, repeats: int, chunk: int, python_packets: int) -> dict:
    """All measurements over one in-memory capture."""
    n = int(offsets.shape[0])
    batch = measure_batch(buf, offsets, lengths, chunk, repeats)
    return {
        "capture": {
            "packets": n,
            "messages": batch["messages"],
            "bytes": int(lengths.astype(np.int64).sum()),
            "msgs_per_packet": batch["messages"] / n if n else 0.0,
            "bytes_per_packet": float(lengths.mean()) if n else 0.0,
        },
        "c_batch": batch,
        "c_batch_field_by_field": measure_batch(buf, offsets, lengths, chunk, max(1, repeats // 2), fast=False),
        "python_per_packet": measure_python(buf, offsets, lengths, min(python_packets, n), max(1, repeats // 2)),
    }


def _row(name: str, r: dict) -> str:
    c, w = r["msgs_per_s_cpu"], r["msgs_per_s_wall"]
    return f"{name:34s} {c['median'] / 1e6:10.2f} {c['min'] / 1e6:8.2f} {c['max'] / 1e6:8.2f} {w['median'] / 1e6:10.2f}"


@bench.command("decode")
@click.argument("capture", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["pcap", "siac"]), default=None, help="Capture format (default: by magic).")
@click.option("--random-messages", type=int, default=None,
              help="No capture: decode this many random valid messages built in memory (ops.bench.random_capture).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of --random-messages.")
@click.option("--repeats", type=int, default=7, show_default=True, help="Repetitions of the C batch path (median reported).")
@click.option("--chunk-packets", type=int, default=1024, show_default=True, help="Packets per C batch call.")
@click.option("--python-packets", type=int, default=20000, show_default=True, help="Packets for the per-packet Python API.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="Write the results as JSON here.")
def decode_bench(capture: str | None, fmt: str | None, random_messages: int | None, seed: int, repeats: int,
                 chunk_packets: int, python_packets: int, json_out: str | None) -> None:
    """Decode throughput (messages/s per core): C batch path and per-packet Python API."""
    if capture is None and random_messages is None:
        raise click.UsageError("give a CAPTURE or --random-messages N")
    if capture is not None:
        buf, offsets, lengths = held_in_memory(capture, fmt)
        source = capture
    else:
        buf, offsets, lengths = random_packets(int(random_messages), seed)
        source = f"random:{random_messages}:seed={seed}"
    res = run_decode_bench(buf, offsets, lengths, repeats=repeats, chunk=chunk_packets, python_packets=python_packets)
    res["source"] = source
    res["machine"] = machine_info()
    res["command"] = "omdp " + " ".join(sys.argv[1:])
    cap = res["capture"]
    click.echo(f"capture {source}: {cap['packets']} packets, {cap['messages']} messages, "
               f"{cap['msgs_per_packet']:.2f} messages/packet, {cap['bytes_per_packet']:.0f} bytes/packet")
    click.echo(f"machine: {res['machine']['cpu_model']}, {res['machine']['logical_cpus']} CPUs, "
               f"load {res['machine']['load_average'][0]:.2f}")
    click.echo(f"{'path':34s} {'M msg/s cpu':>10s} {'min':>8s} {'max':>8s} {'M msg/s wall':>10s}")
    click.echo(_row(f"C batch ({chunk_packets} packets/call)", res["c_batch"]))
    click.echo(_row("C batch, field-by-field path only", res["c_batch_field_by_field"]))
    click.echo(_row(f"Python decode_packet ({res['python_per_packet']['packets']} pkts)", res["python_per_packet"]))
    if json_out:
        Path(json_out).write_text(json.dumps(res, indent=2))
        click.echo(f"wrote {json_out}")
