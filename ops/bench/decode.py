"""``omdp bench decode``: OPRA decode throughput per core, FAST V2 and the binary OBI feed.

Over a capture held in memory: per packet driven from C (``opra_bench.h``: one
``omdp_opra_decode_packet`` per packet, the next packet prefetched meanwhile as the feed
handler prefetches its ring's next slot, into a small reused record buffer starting on a cache
line, four packets' records back to back, as the feed handler's partition decodes and batches
them - no Python between packets), the same loop over the capture's first packets only, in
cache, many short passes (on a shared VM whose speed drifts by a third within minutes, the
best of those passes is the figure that moves least between runs, so two builds can be
compared by it), the C batch path (many packets per call from Python, into a reused record
buffer) and the per-packet Python API (``decode_packet``). Throughput is messages per second
of the decoding thread's CPU time (per core, unaffected by other processes taking the CPU),
with wall-clock figures beside it; each is the median of several repetitions.

An OBI capture is measured per block from C, beside the same messages as FAST V2 packets
decoded per packet from C in the same run (``run_obi_decode_bench``).

The command line is ``ops/cli/bench/decode.py``; this module only measures.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from feedhandlers.captures import read_capture
from feedhandlers.opra_fast import BatchDecoder, decode_packet
from feedhandlers.opra_record import OPRA_MSG_DTYPE
from omdp.native import ffi, lib


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


FH_GROUP = 4
"""Packets whose records the C-driven loop writes back to back before reusing its buffer:
the feed handler's default ``coalesce_packets``."""

LINE = 64


def line_aligned_records(n: int) -> np.ndarray:
    """``n`` zeroed records starting on a cache line, as the feed handler's decode buffer is
    (``aligned_alloc(64, ...)``): numpy's own arrays start 16 bytes into a line, so every
    64-byte store of a record would straddle two lines."""
    size = n * OPRA_MSG_DTYPE.itemsize
    raw = np.zeros(size + LINE, dtype=np.uint8)
    skip = -raw.ctypes.data % LINE
    return raw[skip : skip + size].view(OPRA_MSG_DTYPE)


def _measure_c_loop(bench, per_packet: int, buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
                    repeats: int, group: int) -> dict:
    """One of opra_bench.h's loops (``bench``: FAST V2's per packet or OBI's per block) over
    every packet, ``repeats`` times after a warming pass; records of ``group`` packets back
    to back in a buffer of ``group * per_packet`` records."""
    n = int(offsets.shape[0])
    offs = np.ascontiguousarray(offsets, dtype=np.uint64)
    lens = np.ascontiguousarray(lengths, dtype=np.uint32)
    out = line_aligned_records(group * per_packet)
    side = np.zeros(1 << 16, dtype=np.uint8)
    msgs, bad, wall = ffi.new("uint64_t *"), ffi.new("uint64_t *"), ffi.new("int64_t *")
    cpu_rates: list[float] = []
    wall_rates: list[float] = []
    for _ in range(repeats + 1):  # the first pass warms caches and page tables
        cpu = bench(ffi.from_buffer("uint8_t[]", buf), buf.shape[0], ffi.from_buffer("uint64_t[]", offs),
                    ffi.from_buffer("uint32_t[]", lens), n, group, ffi.cast("omdp_opra_msg_t *", ffi.from_buffer(out)),
                    out.shape[0], ffi.from_buffer("uint8_t[]", side), side.shape[0], msgs, bad, wall)
        if cpu < 0:
            raise RuntimeError("opra_bench.h loop: bad arguments")
        cpu_rates.append(msgs[0] / (cpu / 1e9))
        wall_rates.append(msgs[0] / (wall[0] / 1e9))
    return {"messages": int(msgs[0]), "malformed_packets": int(bad[0]), "group_packets": group,
            "msgs_per_s_cpu": _stats(cpu_rates[1:]), "msgs_per_s_wall": _stats(wall_rates[1:])}


def measure_c_packets(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, repeats: int,
                      group: int = FH_GROUP) -> dict:
    """Per packet, the loop in C (opra_bench.h): what the feed handler's decode costs."""
    return _measure_c_loop(lib.omdp_opra_bench_decode_packets, int(lib.OMDP_OPRA_MAX_MESSAGES), buf, offsets, lengths,
                           repeats, group)


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


def measure_c_packets_in_cache(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, packets: int,
                                passes: int) -> dict:
    """The per-packet loop over the first ``packets`` packets only (a few MB: they stay in
    cache), ``passes`` times; ``best_msgs_per_s_cpu`` is the fastest pass."""
    k = min(packets, int(offsets.shape[0]))
    r = measure_c_packets(buf, offsets[:k], lengths[:k], passes)
    r["packets"] = k
    r["passes"] = passes
    r["best_msgs_per_s_cpu"] = r["msgs_per_s_cpu"]["max"]
    return r


def run_decode_bench(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, *, repeats: int, chunk: int,
                     python_packets: int, in_cache_packets: int = 20000, in_cache_passes: int = 60) -> dict:
    """All measurements over one in-memory capture (``in_cache_packets`` 0: no in-cache loop)."""
    n = int(offsets.shape[0])
    batch = measure_batch(buf, offsets, lengths, chunk, repeats)
    in_cache = (measure_c_packets_in_cache(buf, offsets, lengths, in_cache_packets, in_cache_passes)
                if in_cache_packets > 0 and n else None)
    return {
        "capture": {
            "packets": n,
            "messages": batch["messages"],
            "bytes": int(lengths.astype(np.int64).sum()),
            "msgs_per_packet": batch["messages"] / n if n else 0.0,
            "bytes_per_packet": float(lengths.mean()) if n else 0.0,
        },
        "c_per_packet": measure_c_packets(buf, offsets, lengths, repeats),
        "c_per_packet_in_cache": in_cache,
        "c_batch": batch,
        "c_batch_field_by_field": measure_batch(buf, offsets, lengths, chunk, max(1, repeats // 2), fast=False),
        "python_per_packet": measure_python(buf, offsets, lengths, min(python_packets, n), max(1, repeats // 2)),
    }


def measure_obi_c_blocks(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, repeats: int,
                         group: int = FH_GROUP) -> dict:
    """Per block, the loop in C (``omdp_obi_bench_decode_blocks``): what a feed handler on
    OPRA's binary feed pays to decode, checksum included."""
    return _measure_c_loop(lib.omdp_obi_bench_decode_blocks, int(lib.OMDP_OBI_MAX_MESSAGES), buf, offsets, lengths,
                           repeats, group)


def fast_twin_of_obi(buf: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same messages as FAST V2 packets, one packet per block where FAST can carry them:
    the OBI capture decoded, its 'a' 'k' 'd' 'f' messages re-encoded as FAST V2 (the others,
    'C' 'H' 'R' 'Y', differ in kind between the formats and are left out of both sides'
    comparison by counting messages per second of what each decodes)."""
    from feedhandlers.opra_fast import encode_stream as fast_stream
    from feedhandlers.opra_obi import decode_blocks

    d = decode_blocks(buf, offsets, lengths)
    keep = np.isin(d.records["category"], np.frombuffer(b"akdf", np.uint8))
    recs = d.records[keep].copy()
    recs["wire"] = 0
    recs["session"] = np.where(recs["session"] == 0, ord(" "), recs["session"])
    per_block = np.add.reduceat(keep.astype(np.int64), d.blocks["first"].astype(np.int64)) if len(d.blocks) else np.zeros(0)
    wanted = np.clip(per_block[per_block > 0], 1, 999)
    fbuf, foff, flen, _ = fast_stream(recs, b"", wanted if wanted.size else [1])
    return np.frombuffer(fbuf, dtype=np.uint8), foff.astype(np.int64), flen.astype(np.uint32)


def run_obi_decode_bench(obi: tuple[np.ndarray, np.ndarray, np.ndarray], fast: tuple[np.ndarray, np.ndarray, np.ndarray],
                         *, repeats: int, in_cache_packets: int = 20000, in_cache_passes: int = 60) -> dict:
    """OBI per block from C beside FAST V2 per packet from C over the same messages, the two
    loops alternated repetition by repetition so both see the same machine."""
    buf, offsets, lengths = obi
    fbuf, foff, flen = fast
    obi_runs, fast_runs = [], []
    for _ in range(repeats):
        obi_runs.append(measure_obi_c_blocks(buf, offsets, lengths, 1))
        fast_runs.append(measure_c_packets(fbuf, foff, flen, 1))

    def merged(runs: list[dict]) -> dict:
        cpu = [r["msgs_per_s_cpu"]["median"] for r in runs]
        wall = [r["msgs_per_s_wall"]["median"] for r in runs]
        return {**runs[0], "msgs_per_s_cpu": _stats(cpu), "msgs_per_s_wall": _stats(wall)}

    o, f = merged(obi_runs), merged(fast_runs)
    n = int(offsets.shape[0])
    k = min(in_cache_packets, n)
    hot = None
    if k:
        hot = measure_obi_c_blocks(buf, offsets[:k], lengths[:k], in_cache_passes)
        hot.update(packets=k, passes=in_cache_passes, best_msgs_per_s_cpu=hot["msgs_per_s_cpu"]["max"])
    return {
        "capture": {"packets": n, "messages": o["messages"], "bytes": int(lengths.astype(np.int64).sum()),
                    "msgs_per_packet": o["messages"] / n if n else 0.0,
                    "bytes_per_packet": float(lengths.mean()) if n else 0.0},
        "fast_twin": {"packets": int(foff.shape[0]), "messages": f["messages"],
                      "bytes_per_packet": float(flen.mean()) if flen.size else 0.0},
        "obi_c_per_packet": o,
        "obi_c_per_packet_in_cache": hot,
        "fast_c_per_packet": f,
        "obi_over_fast": o["msgs_per_s_cpu"]["median"] / f["msgs_per_s_cpu"]["median"] if f["messages"] else None,
    }
