"""vega-ib over a real RDMA device (an HCA, or soft-RoCE: docs/infiniband.md): order and
bytes over many laps with selective signaling, a killed peer seen as dead on both sides,
and ``omdp run`` carrying a vega-ib edge. Skips with "No IB devices found" (or what else
is missing) where there is no device, as rdma-core's own tests do.

OMDP_IB_DEVICE=DEVICE[:PORT[:GID_INDEX]] picks the device (RoCE needs the index of a
RoCE v2 GID, e.g. ``rxe0:1:1``); by default the first device with port 1 active.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from omdp.native import ffi, lib
from omdp.transport import open_receiver, open_sender
from omdp.transport.api import PeerClosedError, PeerDeadError
from omdp.transport.ib_verbs import ib_unavailable

WHY = ib_unavailable()
pytestmark = [pytest.mark.hardware, pytest.mark.skipif(WHY is not None, reason=WHY or "")]
CTX = mp.get_context("fork")
DEVICE = os.environ.get("OMDP_IB_DEVICE", "")
SUFFIX = f"@{DEVICE}" if DEVICE else ""
SPEC = {"transport": "vega-ib", "queue_size": 16, "max_message": 1024, "mutex": False, "wait": "spin-yield",
        "signal_every": 8}
CLI = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()"]


def pattern(seq: int, size: int) -> bytes:
    buf = ffi.new("uint8_t[]", max(size, 1))
    lib.omdp_tbench_fill(buf, size, seq)
    return bytes(ffi.buffer(buf, size))


def sizes_for(n: int) -> list[int]:
    return [(i * 37) % 1025 for i in range(n)]


def send_patterns(endpoint: str, n: int) -> None:
    tx = open_sender(SPEC, endpoint + SUFFIX, connect_timeout=20)
    sizes = sizes_for(n)
    half = n // 2
    ok = all(tx.put(pattern(i, s), timeout=20) for i, s in enumerate(sizes[:half]))
    data = b"".join(pattern(half + i, s) for i, s in enumerate(sizes[half:]))
    ok = ok and tx.put_batch(data, np.array(sizes[half:], dtype=np.uint32), timeout=20) == n - half
    counters = tx.link_counters()
    tx.close()
    sys.exit(0 if ok and not counters["broken"] and counters["signaled"] >= n // SPEC["signal_every"] else 3)


def test_order_and_integrity_over_many_laps() -> None:
    n = 4000
    rx = open_receiver(SPEC, "127.0.0.1:0" + SUFFIX)
    child = CTX.Process(target=send_patterns, args=(rx.endpoint, n))
    child.start()
    for i, size in enumerate(sizes_for(n)):
        got = rx.get(timeout=20)
        assert got is not None, f"message {i} did not come"
        slot, view = got
        assert bytes(view) == pattern(i, size), f"message {i}"
        rx.release_buffer(slot)
    with pytest.raises(PeerClosedError):
        rx.get(timeout=20)
    child.join(20)
    assert child.exitcode == 0
    assert rx.link_counters()["writes"] >= n // SPEC["queue_size"]  # credits went back by RDMA WRITE
    rx.close()


def hang_after_put(endpoint: str) -> None:
    tx = open_sender(SPEC, endpoint + SUFFIX, connect_timeout=20)
    tx.put(b"hello")
    time.sleep(60)


def test_a_killed_sender_is_dead() -> None:
    rx = open_receiver(SPEC, "127.0.0.1:0" + SUFFIX)
    child = CTX.Process(target=hang_after_put, args=(rx.endpoint,))
    child.start()
    slot, view = rx.get(timeout=20)
    assert bytes(view) == b"hello"
    rx.release_buffer(slot)
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    with pytest.raises(PeerDeadError):
        rx.get(timeout=20)
    rx.close()


def test_omdp_run_carries_a_vega_ib_edge(tmp_path: Path) -> None:
    device = f'ib_device = "{DEVICE}"\n' if DEVICE else ""
    (tmp_path / "ib.toml").write_text(f'''
name = "ib-pair"
[channel]
transport = "vega-ib"
queue_size = 32
max_message = 4096
mutex = false
wait = "spin-yield"
signal_every = 16
[hosts.local]
{device}
[operators.src]
kind = "seq_source"
params = {{ count = 50000, batch = 16, record_size = 96 }}
[operators.sink]
kind = "seq_sink"
[partitions.up]
operators = ["src"]
[partitions.down]
operators = ["sink"]
[[edges]]
from = "src.out"
to = "sink.in"
''')
    r = subprocess.run([*CLI, "run", str(tmp_path / "ib.toml"), "--data", str(tmp_path), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ops = {k: v for p in json.loads(r.stdout)["partitions"].values() for k, v in p["report"]["operators"].items()}
    assert ops["sink"]["records"] == 50000 and ops["sink"]["gaps"] == 0
