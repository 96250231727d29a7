"""What runs inside the benchmark's sender and receiver processes, one function per role.

C paths call one loop of native/include/omdp/transport_bench.h per run; Python paths use
the transport API exactly as a user would, one call per message (or per batch). Every
receiver checksums every payload; latency senders stamp the omdp clock (C) into the first
8 bytes and wait for the receiver's acknowledgement word (outside the channel) before
the next message, so no message queues behind another. Receivers call ``ready(endpoint)``
once their end is open; each function returns a small dict of results.
"""
from __future__ import annotations

import mmap
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.transport import open_receiver, open_sender
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver, VegaSender

MASK64 = (1 << 64) - 1
LAT_GAP_NS = 2000
"""C latency runs: pause after each acknowledged message so lines settle between samples."""
RECV_BATCH = 32
"""C throughput receiver: messages taken (and credited back) per batch."""
SEND_BATCH = 64
"""Python batched sender: messages per put_batch call."""
POOL = 64


def patterns(size: int) -> tuple[list[bytes], list[int]]:
    """The 64 payloads a sender cycles through, and their checksums."""
    buf = ffi.new("uint8_t[]", max(size, 1))
    out, sums = [], []
    for k in range(POOL):
        lib.omdp_tbench_fill(buf, size, k)
        out.append(bytes(ffi.buffer(buf, size)))
        sums.append(int(lib.omdp_tbench_checksum(buf, size)))
    return out, sums


RECV_TIMEOUT_S = 60.0
"""A Python receiver that waits this long for one message gives up (the run fails)."""


def _next(rx: Any) -> tuple[int, memoryview]:
    got = rx.get(RECV_TIMEOUT_S)
    if got is None:
        raise TimeoutError(f"{rx.name}: no message within {RECV_TIMEOUT_S} s")
    return got


def _word(shared: mmap.mmap, offset: int = 0) -> Any:
    return ffi.cast("uint64_t *", ffi.from_buffer(shared)) + offset // 8


def _await_receiver(shared: mmap.mmap, n: int) -> None:
    """Close only once the receiver has everything: zmq discards what a closed peer's
    connection still held, and every medium is treated alike."""
    ack = np.frombuffer(shared, dtype=np.uint64, count=1)
    deadline = time.monotonic() + RECV_TIMEOUT_S
    while ack[0] < n and time.monotonic() < deadline:
        time.sleep(0.001)


# ---- vega-shm, C loops ----

def vega_c_lat_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                    ready: Callable[[str], None]) -> dict[str, Any]:
    rx = VegaReceiver.create(spec, endpoint)
    ready(endpoint)
    before = calibrate(shared, False, 0)
    lat = np.zeros(n, dtype=np.int64)
    cs = ffi.new("uint64_t *")
    got = lib.omdp_tbench_vega_lat_recv(rx.c_handle, n, ffi.from_buffer("int64_t[]", lat), _word(shared), cs)
    after = calibrate(shared, False, 1)
    rx.close()
    return {"got": int(got), "lat": lat[: max(int(got), 0)], "checksum": int(cs[0]), "cal": (before, after)}


def vega_c_lat_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = VegaSender.attach(spec, endpoint)
    before = calibrate(shared, True, 0)
    cs = ffi.new("uint64_t *")
    sent = lib.omdp_tbench_vega_lat_send(tx.c_handle, n, size, _word(shared), LAT_GAP_NS, cs)
    after = calibrate(shared, True, 1)
    tx.close()
    return {"sent": int(sent), "checksum": int(cs[0]), "cal": (before, after)}


def vega_c_tput_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                     ready: Callable[[str], None]) -> dict[str, Any]:
    rx = VegaReceiver.create(spec, endpoint)
    ready(endpoint)
    cs = ffi.new("uint64_t *")
    t0 = ffi.new("int64_t *")
    t1 = ffi.new("int64_t *")
    got = lib.omdp_tbench_vega_recv(rx.c_handle, n, RECV_BATCH, cs, t0, t1)
    rx.close()
    return {"got": int(got), "checksum": int(cs[0]), "t_first": int(t0[0]), "t_last": int(t1[0])}


def vega_c_tput_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = VegaSender.attach(spec, endpoint)
    cs = ffi.new("uint64_t *")
    sent = lib.omdp_tbench_vega_send(tx.c_handle, n, size, cs)
    tx.close()
    return {"sent": int(sent), "checksum": int(cs[0])}


# ---- any medium through the Python API ----

def py_lat_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                ready: Callable[[str], None]) -> dict[str, Any]:
    rx = open_receiver(spec, endpoint)
    ready(getattr(rx, "endpoint", endpoint))
    before = calibrate(shared, False, 0)
    ack = np.frombuffer(shared, dtype=np.uint64, count=1)
    lat = np.zeros(n, dtype=np.int64)
    now, checksum, from_buffer, get = lib.omdp_now_ns, lib.omdp_tbench_checksum, ffi.from_buffer, rx.get
    total = 0
    for i in range(n):
        # unbounded get: a dead sender ends it with an error (vega, tcp) or the parent's timeout
        slot, view = get()
        t = now()
        lat[i] = t - int.from_bytes(view[:8], "little")
        total += checksum(from_buffer(view), len(view))
        rx.release_buffer(slot)
        ack[0] = i + 1
    after = calibrate(shared, False, 1)
    rx.close()
    return {"got": n, "lat": lat, "checksum": total & MASK64, "cal": (before, after)}


def py_lat_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = open_sender(spec, endpoint)
    before = calibrate(shared, True, 0)
    ack = np.frombuffer(shared, dtype=np.uint64, count=1)
    payloads, _ = patterns(size)
    tails = [p[8:] for p in payloads]  # the message minus its stamp, made before the clock runs
    now, checksum, put = lib.omdp_now_ns, lib.omdp_tbench_checksum, tx.put
    total = 0
    for i in range(n):
        buf = now().to_bytes(8, "little") + tails[i % POOL]
        put(buf)
        total += checksum(buf, size)
        while ack[0] <= i:
            pass
    after = calibrate(shared, True, 1)
    tx.close()
    return {"sent": n, "checksum": total & MASK64, "cal": (before, after)}


def py_tput_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                 ready: Callable[[str], None]) -> dict[str, Any]:
    rx = open_receiver(spec, endpoint)
    ready(getattr(rx, "endpoint", endpoint))
    now, checksum, from_buffer = lib.omdp_now_ns, lib.omdp_tbench_checksum, ffi.from_buffer
    total = 0
    slot, view = _next(rx)
    t_first = now()
    total += checksum(from_buffer(view), len(view))
    rx.release_buffer(slot)
    for _ in range(n - 1):
        slot, view = _next(rx)
        total += checksum(from_buffer(view), len(view))
        rx.release_buffer(slot)
    t_last = now()
    np.frombuffer(shared, dtype=np.uint64, count=1)[0] = n  # the sender may close now
    rx.close()
    return {"got": n, "checksum": total & MASK64, "t_first": t_first, "t_last": t_last}


def py_tput_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = open_sender(spec, endpoint)
    payloads, sums = patterns(size)
    put = tx.put
    for i in range(n):
        put(payloads[i % POOL])
    _await_receiver(shared, n)
    tx.close()
    return {"sent": n, "checksum": (n // POOL * sum(sums) + sum(sums[: n % POOL])) & MASK64}


# ---- vega-shm, Python API, batched ----

def py_batch_tput_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                       ready: Callable[[str], None]) -> dict[str, Any]:
    rx = VegaReceiver.create(spec, endpoint)
    ready(endpoint)
    got, total, t_first = 0, 0, 0
    while got < n:
        batch = rx.get_batch(n - got, timeout=RECV_TIMEOUT_S)
        if batch is None:
            raise TimeoutError(f"{rx.name}: no message within {RECV_TIMEOUT_S} s")
        if got == 0:
            t_first = int(lib.omdp_now_ns())
        # sizes here are multiples of 8: the checksum is the wrapping sum of 64-bit words
        total += int(batch.payloads[:, :size].view("<u8").sum(dtype=np.uint64))
        got += len(batch)
        rx.release_batch(batch)
    t_last = int(lib.omdp_now_ns())
    rx.close()
    return {"got": got, "checksum": total & MASK64, "t_first": t_first, "t_last": t_last}


def py_batch_tput_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    tx = VegaSender.attach(spec, endpoint)
    payloads, sums = patterns(size)
    data = b"".join(payloads[:SEND_BATCH])
    sizes = np.full(SEND_BATCH, size, dtype=np.uint32)
    sent = 0
    while sent < n:
        k = min(SEND_BATCH, n - sent)
        sent += tx.put_batch(data, sizes[:k])
    tx.close()
    per_batch = sum(sums[:SEND_BATCH])
    full, rest = divmod(n, SEND_BATCH)
    return {"sent": sent, "checksum": (full * per_batch + sum(sums[:rest])) & MASK64}


# ---- one process: fused, memcpy; two processes: ping-pong ----

def fused_lat(n: int, size: int) -> dict[str, Any]:
    lat = np.zeros(n, dtype=np.int64)
    cs = ffi.new("uint64_t *")
    lib.omdp_tbench_fused_lat(n, size, ffi.from_buffer("int64_t[]", lat), cs)
    return {"lat": lat, "checksum": int(cs[0])}


def fused_tput(n: int, size: int) -> dict[str, Any]:
    cs = ffi.new("uint64_t *")
    dt = int(lib.omdp_tbench_fused_tput(n, size, cs))
    return {"elapsed_ns": dt, "checksum": int(cs[0])}


def memcpy_bw(size: int, queue_size: int, max_message: int, iters: int, repeats: int = 5) -> dict[str, Any]:
    """Copy bandwidth into a ring-sized footprint: the fastest of ``repeats`` passes (a
    ceiling, so the pass least disturbed by other work on the machine counts)."""
    stride = int(lib.omdp_vega_slot_stride(max_message))
    dst = mmap.mmap(-1, queue_size * stride)
    view = ffi.from_buffer(dst)
    lib.omdp_tbench_memcpy(view, stride, queue_size, size, min(iters, 1000))  # touch the pages
    dt = min(int(lib.omdp_tbench_memcpy(view, stride, queue_size, size, iters)) for _ in range(repeats))
    return {"elapsed_ns": dt, "bytes": size * iters, "repeats": repeats}


def pingpong(shared: mmap.mmap, n: int, initiator: bool, at: int = 0) -> dict[str, Any]:
    """Ping-pong on two lines of ``shared`` from byte ``at``: the initiator's send and
    answer times, the responder's receive times."""
    t_a = np.zeros(n, dtype=np.int64)
    t_b = np.zeros(n, dtype=np.int64)
    done = int(lib.omdp_tbench_pingpong(_word(shared, at), _word(shared, at + 128), n, int(initiator),
                                        ffi.from_buffer("int64_t[]", t_a), ffi.from_buffer("int64_t[]", t_b)))
    return {"done": done, "t_a": t_a[:done], "t_b": t_b[:done]}


CALIBRATION_N = 3000
"""Ping-pong exchanges a latency pair makes before and after its run, so the offset
between the two CPUs' clocks is measured by the very processes that stamp."""


def calibrate(shared: mmap.mmap, initiator: bool, phase: int) -> dict[str, Any]:
    """One calibration ping-pong (phase 0 before the run, 1 after) on its own lines."""
    return pingpong(shared, CALIBRATION_N, initiator, at=512 + 512 * phase)
