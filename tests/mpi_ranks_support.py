"""What the two ranks of the ``mpi`` transport tests do, one scenario per function pair.

Run as ``python tests/mpi_ranks_support.py SCENARIO`` by each rank of an ``mpiexec -n 2``
job (``run_job`` below). Rank 0 sends, rank 1 receives; each prints one line
``RESULT <rank> <json>`` with what it saw, which the test asserts on. Coordination between
the ranks is only the channels themselves (their messages, credits and counters).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HANG_GUARD_S = 60.0


def _spec(**knobs: Any) -> Any:
    from omdp.transport.spec import ChannelSpec

    return ChannelSpec(**{"transport": "mpi", "queue_size": 4, "max_message": 256, "mutex": False, **knobs})


def _payload(i: int, size: int) -> bytes:
    return bytes((i * 7 + k) & 0xFF for k in range(size))


def _wait_until(cond: Any) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("hang guard")
        time.sleep(0.001)


def _drain(rx: Any) -> tuple[list[bytes], str]:
    """Every message until the channel ends; how it ended (the error's class name)."""
    got = []
    while True:
        try:
            item = rx.get(HANG_GUARD_S)
        except Exception as e:  # the end of the channel is what the test asserts
            return got, type(e).__name__
        if item is None:
            return got, "timeout"
        got.append(bytes(item[1]))
        rx.release_buffer(item[0])


# ---- round trip: every size 1..max_message, in order, byte for byte ----

def roundtrip(rank: int) -> dict[str, Any]:
    from omdp.transport import open_receiver, open_sender

    spec = _spec(queue_size=8)
    sizes = [1 + (i * 37) % spec.max_message for i in range(2000)]
    if rank == 1:
        rx = open_receiver(spec, "0:5")
        got, end = _drain(rx)
        bad = [i for i, m in enumerate(got) if m != _payload(i, sizes[i])]
        out = {"n": len(got), "bad": bad[:5], "end": end, "counters": rx.counters()}
        rx.close()
        return out
    tx = open_sender(spec, "1:5")
    ok = sum(tx.put(_payload(i, s)) for i, s in enumerate(sizes))
    big = None
    try:
        tx.put(b"x" * (spec.max_message + 1))
    except ValueError as e:
        big = type(e).__name__
    out = {"ok": ok, "too_big": big, "counters": tx.counters()}
    tx.close()
    return out


# ---- back-pressure: a receiver that holds its slots stops the sender ----

def backpressure(rank: int) -> dict[str, Any]:
    from omdp.transport.mpi import MpiReceiver, MpiSender

    block, drop = _spec(), _spec(on_full="drop")
    if rank == 1:
        rx_block, rx_drop, note = MpiReceiver(block, "0:1"), MpiReceiver(drop, "0:2"), MpiReceiver(block, "0:7")
        held = [rx_block.get(HANG_GUARD_S) for _ in range(block.queue_size)]  # all slots, none released
        note.get(HANG_GUARD_S)  # the sender tried a fifth put while we held them all
        for slot, _ in held:
            rx_block.release_buffer(slot)
        rest, end_block = _drain(rx_block)
        got_drop, end_drop = _drain(rx_drop)
        out = {"held": len(held), "after_release": len(rest), "end_block": end_block,
               "drop_got": len(got_drop), "end_drop": end_drop}
        for end in (rx_block, rx_drop, note):
            end.close()
        return out
    tx_block, tx_drop, note = MpiSender(block, "1:1"), MpiSender(drop, "1:2"), MpiSender(block, "1:7")
    _wait_until(tx_drop.ready_to_send)
    drop_results = [tx_drop.put(b"d" * 8) for _ in range(10)]  # the receiver reads this channel last
    _wait_until(tx_block.ready_to_send)
    first = [tx_block.put(b"b" * 8, timeout=0) for _ in range(block.queue_size)]
    ready_when_full = tx_block.ready_to_send()
    fifth_now = tx_block.put(b"b" * 8, timeout=0)
    full_counters = tx_block.counters()
    note.put(b"tried")
    fifth_blocking = tx_block.put(b"b" * 8)  # waits for the receiver's credits
    out = {"drop_results": drop_results, "drop_counters": tx_drop.counters(), "first": first,
           "ready_when_full": ready_when_full, "fifth_now": fifth_now, "full_counters": full_counters,
           "fifth_blocking": fifth_blocking}
    for end in (tx_block, tx_drop, note):
        end.close()
    return out


# ---- stop while blocked: a get with nothing coming, a put with no credit ----

def _stop_when_waiting(end: Any) -> threading.Thread:
    def stopper() -> None:
        _wait_until(lambda: int(end.counters()["spins"]) > 0)  # the call is waiting now
        end.stop()

    t = threading.Thread(target=stopper, daemon=True)
    t.start()
    return t


def stop_blocked(rank: int) -> dict[str, Any]:
    from omdp.transport.mpi import MpiReceiver, MpiSender

    spec = _spec(queue_size=2, mutex=True)
    if rank == 1:
        idle = MpiReceiver(spec, "0:3")   # nothing is ever sent here
        full = MpiReceiver(spec, "0:4")   # read only after the sender's put was stopped
        note = MpiReceiver(spec, "0:8")
        back = MpiSender(spec, "0:9")     # tells the sender when it may close
        t = _stop_when_waiting(idle)
        t0 = time.monotonic()
        got = idle.get()  # no timeout: only the stop ends it
        t.join()
        note.get(HANG_GUARD_S)  # the sender's blocked put has returned
        back.put(b"done")
        taken, end = _drain(full)
        out = {"idle_get": got, "idle_wait_s": time.monotonic() - t0, "full_got": len(taken), "full_end": end}
        for e in (idle, full, note, back):
            e.close()
        return out
    idle, full, note = MpiSender(spec, "1:3"), MpiSender(spec, "1:4"), MpiSender(spec, "1:8")
    back = MpiReceiver(spec, "1:9")
    _wait_until(full.ready_to_send)
    sent = [full.put(b"p" * 8) for _ in range(spec.queue_size)]
    t = _stop_when_waiting(full)
    blocked = full.put(b"p" * 8)  # no credit and no timeout: only the stop ends it
    t.join()
    note.put(b"stopped")
    back.get(HANG_GUARD_S)  # the receiver's idle get has returned: closing idle ends nothing early
    out = {"sent": sent, "blocked_put": blocked}
    for e in (idle, full, note, back):
        e.close()
    return out


# ---- peer death: the sender is SIGKILLed; the receiver gets a named error ----

def peer_death(rank: int) -> dict[str, Any]:
    from omdp.transport.mpi import MpiReceiver, MpiSender

    spec = _spec()
    if rank == 1:
        rx = MpiReceiver(spec, "0:6")
        slot, view = rx.get(HANG_GUARD_S)
        killed_at = float(bytes(view).decode())
        rx.release_buffer(slot)
        try:
            rx.get(HANG_GUARD_S)
            error, message = None, ""
        except Exception as e:
            error, message = type(e).__name__, str(e)
        seen = time.time()
        rx.close()
        with open("/proc/self/maps") as f:  # this job's MPI files: the ones this rank maps
            files = sorted({line.split()[-1] for line in f if "/dev/shm/" in line and "_segment." in line})
        return {"error": error, "message": message, "after_kill_s": seen - killed_at, "files": files}
    tx = MpiSender(spec, "1:6")
    t = time.time()
    tx.put(repr(t).encode())
    tx.flush(HANG_GUARD_S)  # the receiver has it: now die without closing
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


SCENARIOS = {"roundtrip": roundtrip, "backpressure": backpressure, "stop_blocked": stop_blocked,
             "peer_death": peer_death}


def run_job(scenario: str, timeout: float = 120.0, ranks: tuple[int, ...] = (0, 1),
            grace: float = 20.0) -> tuple[subprocess.CompletedProcess, dict[int, dict[str, Any]]]:
    """Both ranks of ``scenario`` as one ``mpiexec`` job; the job and the RESULT of each of
    ``ranks``. Once those are in, the job has ``grace`` seconds to end; then it is ended
    (SIGTERM, then SIGKILL): a job whose rank was killed on purpose may not end by itself.
    ``timeout`` is a hang guard for the results."""
    from omdp.transport.mpi_job import job_env, mpiexec_argv

    cmd = [sys.executable, str(Path(__file__).resolve()), scenario]
    argv = mpiexec_argv([cmd, cmd])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=job_env(),
                            stdin=subprocess.DEVNULL)
    results: dict[int, dict[str, Any]] = {}
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("RESULT "):
                _, rank, body = line.split(" ", 2)
                results[int(rank)] = json.loads(body)
                if all(r in results for r in ranks):
                    done.set()
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not done.wait(timeout):
        proc.kill()
        raise subprocess.TimeoutExpired(argv, timeout)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    reader.join(10)
    err = proc.stderr.read() if proc.stderr else ""  # type: ignore[union-attr]
    return subprocess.CompletedProcess(argv, proc.returncode, "".join(lines), err), results


def main() -> None:
    from omdp.transport.mpi import mpi_finalize, mpi_init

    rank, _ = mpi_init()
    out = SCENARIOS[sys.argv[1]](rank)
    print(f"RESULT {rank} {json.dumps(out)}", flush=True)
    mpi_finalize()


if __name__ == "__main__":
    main()
