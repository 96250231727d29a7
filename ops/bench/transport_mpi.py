"""``omdp bench transport``'s MPI rows: the ``mpi`` transport from a C loop and through the
Python API, at the sizes and sample counts of the other rows (ops.bench.transport).

MPI ranks must be one job, so these rows are not forked pairs like the others: one
``mpiexec -n 2`` job runs them all, rank 0 the sender pinned to the sender's CPU, rank 1
the receiver on the receiver's CPU. Each measurement gets its own channel number and its
own small shared file (the latency acknowledgement word and the clock calibration
ping-pong, as the forked pairs share an anonymous mapping), so the very worker functions
of the other rows run here (ops.bench.transport_workers); rank 1 writes what both saw to
a pickle the parent reads back.
"""
from __future__ import annotations

import mmap
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from omdp.native import ffi, lib
from omdp.native_mpi import mpi_native
from omdp.transport.spec import ChannelSpec
from ops.bench import transport_workers as w

MEDIA = ("mpi C", "mpi Python")
SHARED_BYTES = 4096


def _c_lat_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                ready: Any = None) -> dict[str, Any]:
    from omdp.transport.mpi import MpiReceiver

    rx = MpiReceiver(spec, endpoint)
    before = w.calibrate(shared, False, 0)
    lat = np.zeros(n, dtype=np.int64)
    cs = ffi.new("uint64_t *")
    got = lib.omdp_tbench_lat_recv(mpi_native()[1].omdp_tbench_mpi_rx_ops(), rx.c_handle, n,
                                   ffi.from_buffer("int64_t[]", lat), w._word(shared), cs)
    after = w.calibrate(shared, False, 1)
    rx.close()
    return {"got": int(got), "lat": lat[: max(int(got), 0)], "checksum": int(cs[0]), "cal": (before, after)}


def _c_lat_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    from omdp.transport.mpi import MpiSender

    tx = MpiSender(spec, endpoint)
    before = w.calibrate(shared, True, 0)
    cs = ffi.new("uint64_t *")
    sent = lib.omdp_tbench_lat_send(mpi_native()[1].omdp_tbench_mpi_tx_ops(), tx.c_handle, n, size, w._word(shared),
                                    w.LAT_GAP_NS, cs)
    after = w.calibrate(shared, True, 1)
    tx.close()
    return {"sent": int(sent), "checksum": int(cs[0]), "cal": (before, after)}


def _c_tput_recv(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap,
                 ready: Any = None) -> dict[str, Any]:
    from omdp.transport.mpi import MpiReceiver

    rx = MpiReceiver(spec, endpoint)
    cs, t0, t1 = ffi.new("uint64_t *"), ffi.new("int64_t *"), ffi.new("int64_t *")
    got = lib.omdp_tbench_recv(mpi_native()[1].omdp_tbench_mpi_rx_ops(), rx.c_handle, n, cs, t0, t1)
    np.frombuffer(shared, dtype=np.uint64, count=1)[0] = n  # the sender may close now
    rx.close()
    return {"got": int(got), "checksum": int(cs[0]), "t_first": int(t0[0]), "t_last": int(t1[0])}


def _c_tput_send(spec: ChannelSpec, endpoint: str, n: int, size: int, shared: mmap.mmap) -> dict[str, Any]:
    from omdp.transport.mpi import MpiSender

    tx = MpiSender(spec, endpoint)
    cs = ffi.new("uint64_t *")
    sent = lib.omdp_tbench_send(mpi_native()[1].omdp_tbench_mpi_tx_ops(), tx.c_handle, n, size, cs)
    w._await_receiver(shared, n)
    tx.close()
    return {"sent": int(sent), "checksum": int(cs[0])}


WORKERS = {
    ("mpi C", "lat"): (_c_lat_recv, _c_lat_send, "c"),
    ("mpi C", "tput"): (_c_tput_recv, _c_tput_send, "c"),
    ("mpi Python", "lat"): (w.py_lat_recv, w.py_lat_send, "py"),
    ("mpi Python", "tput"): (w.py_tput_recv, w.py_tput_send, "py"),
}


def jobs(lat_sizes: tuple[int, ...], tput_sizes: tuple[int, ...], lat_n: dict[str, int],
         tput_n: dict[str, int], base: dict[str, Any]) -> list[dict[str, Any]]:
    """Every MPI measurement of a plan, in the order the other rows run: medium, kind, size,
    n, knobs."""
    out = []
    for kind, sizes in (("lat", lat_sizes), ("tput", tput_sizes)):
        for size in sizes:
            for medium in MEDIA:
                cls = WORKERS[(medium, kind)][2]
                n = lat_n[cls] if kind == "lat" else \
                    (tput_n[cls] if size <= 1024 else max(tput_n[cls] * 1024 // size, 2_000))
                knobs = dict(base, max_message=max(base["max_message"], size))
                out.append({"medium": medium, "kind": kind, "size": size, "n": n, "knobs": knobs})
    return out


def run_job(todo: list[dict[str, Any]], workdir: Path, cpus: tuple[int, int], timeout: float = 900.0) -> list[dict[str, Any]]:
    """Run ``todo`` in one ``mpiexec -n 2`` job; each item gets ``got`` and ``sent``."""
    from omdp.transport.mpi_job import job_env, mpiexec_argv

    (workdir / "todo.pkl").write_bytes(pickle.dumps(todo))
    for i in range(len(todo)):
        (workdir / f"shared-{i}").write_bytes(b"\0" * SHARED_BYTES)
    cmd = [sys.executable, "-P", "-m", "ops.bench.transport_mpi", str(workdir), str(cpus[0]), str(cpus[1])]
    proc = subprocess.run(mpiexec_argv([cmd, cmd]), capture_output=True, text=True, timeout=timeout, env=job_env(),
                          stdin=subprocess.DEVNULL)
    out = workdir / "results.pkl"
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(f"mpi rows: mpiexec exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return pickle.loads(out.read_bytes())


def add_mpi_rows(report: Any, plan: Any, tmpdir: str, say: Any) -> None:
    """Measure the MPI rows of ``plan`` and add them to ``report`` as the other rows are
    made (ops.bench.transport); where no MPI job can start, say why and add none."""
    from omdp.transport.mpi_job import mpi_job_unavailable
    from ops.bench import transport_common as t

    why = mpi_job_unavailable()
    if why:
        say(f"mpi rows left out: {why}")
        return
    workdir = Path(tmpdir) / "mpi"
    workdir.mkdir()
    done = run_job(jobs(plan.lat_sizes, plan.tput_sizes, plan.lat_n, plan.tput_n, t.BASE), workdir,
                   (t.SENDER_CPU, t.RECEIVER_CPU))
    for job in done:
        medium, size, n, got, sent = job["medium"], job["size"], job["n"], job["got"], job["sent"]
        t.check_payloads(f"{medium} {job['kind']} {size} B", got, sent, n)
        settings = t.settings_text(job["knobs"])
        if job["kind"] == "lat":
            offsets = [t.clock_offset(s_cal, r_cal) for s_cal, r_cal in zip(sent["cal"], got["cal"])]
            offset = sum(offsets) / 2
            floor = float(np.median(np.concatenate([(c["t_b"] - c["t_a"]) / 2 for c in sent["cal"]])))
            row = {"medium": medium, "size": size, "settings": settings, **t.percentiles(got["lat"] - offset),
                   "raw_p50_ns": t.percentiles(got["lat"])["p50_ns"], "clock_offset_ns": offsets,
                   "floor_p50_ns": floor}
            report.latency.append(row)
            say(f"latency {medium:24} {size:>5} B: p50 {row['p50_ns']:>10.0f} ns  "
                f"p99 {row['p99_ns'] or float('nan'):>10.0f} ns  (ping-pong floor in this run {floor:.0f} ns)")
        else:
            rate = (n - 1) / max(got["t_last"] - got["t_first"], 1) * 1e9
            report.throughput.append({"medium": medium, "size": size, "n": n, "messages_per_s": rate,
                                      "bytes_per_s": rate * size, "settings": settings})
            say(f"throughput {medium:24} {size:>6} B: {rate / 1e6:9.3f} M msg/s  {rate * size / 1e9:7.2f} GB/s")


def _rank_main(workdir: Path, cpus: tuple[int, int]) -> None:
    from omdp.transport.mpi import MpiReceiver, MpiSender, mpi_finalize, mpi_init

    rank, _ = mpi_init()
    import os

    if cpus[rank] < (os.cpu_count() or 1):
        os.sched_setaffinity(0, {cpus[rank]})
    todo = pickle.loads((workdir / "todo.pkl").read_bytes())
    # the two ranks report to each other over an mpi channel of their own (channel 0)
    spec = ChannelSpec(transport="mpi", queue_size=2, max_message=1 << 24)
    results = []
    for i, job in enumerate(todo):
        recv_fn, send_fn, _ = WORKERS[(job["medium"], job["kind"])]
        spec_i = ChannelSpec(transport="mpi", **job["knobs"])
        with open(workdir / f"shared-{i}", "r+b") as f:
            shared = mmap.mmap(f.fileno(), SHARED_BYTES)
        args = {"spec": spec_i, "n": job["n"], "size": job["size"], "shared": shared}
        if rank == 1:
            results.append(recv_fn(endpoint=f"0:{i + 1}", ready=lambda ep: None, **args))
        else:
            results.append(send_fn(endpoint=f"1:{i + 1}", **args))
    if rank == 0:
        with MpiSender(spec, "1:0", connect_timeout=600) as tx:
            tx.put(pickle.dumps(results))
            tx.flush(60)
    else:
        with MpiReceiver(spec, "0:0") as rx:
            got = rx.get(60)
            if got is None:
                raise TimeoutError("rank 0 sent no results")
            sent = pickle.loads(bytes(got[1]))
        for job, g, s in zip(todo, results, sent):
            job["got"], job["sent"] = g, s
        (workdir / "results.pkl").write_bytes(pickle.dumps(todo))
    mpi_finalize()


if __name__ == "__main__":
    _rank_main(Path(sys.argv[1]), (int(sys.argv[2]), int(sys.argv[3])))
