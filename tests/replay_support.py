"""Helpers of the replay tests: small captures written with the real pcap writer, and a
real UDP multicast receiver joined on 127.0.0.1."""
from __future__ import annotations

import json
import random
import select
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from feedhandlers.captures import PcapWriter

T0 = 1_202_135_400_000_000_000
"""2008-02-04 14:30 UTC (09:30 New York), in ns."""


def opra_like_packet(block_seq: int, messages: int, body: int = 40) -> bytes:
    """A packet with a real OPRA header (SOH, version, block sequence, count) and filler:
    the replayer reads only the header."""
    return b"\x01\x02" + f"{block_seq:010d}{messages:03d}".encode() + bytes([0x80 | (block_seq & 0x7F)]) * body + b"\x03"


@dataclass
class LineData:
    """One line's packets and recorded times."""

    line: int
    packets: list[bytes]
    ts_ns: list[int]
    block_seqs: list[int] = field(default_factory=list)
    messages: list[int] = field(default_factory=list)


def make_line(line: int, n: int, *, seed: int = 0, mean_gap_ns: int = 80_000, t0: int = T0, first_seq: int = 1) -> LineData:
    """``n`` packets with 1..19 messages each and random recorded gaps."""
    rng = np.random.default_rng([seed, line])
    counts = rng.integers(1, 20, n)
    gaps = rng.integers(mean_gap_ns // 8, 2 * mean_gap_ns - mean_gap_ns // 8, n)
    ts = (t0 + line * 977 + np.concatenate([[0], np.cumsum(gaps[:-1])])).tolist()
    seqs = (first_seq + np.concatenate([[0], np.cumsum(counts[:-1])])).tolist()
    packets = [opra_like_packet(s, int(c)) for s, c in zip(seqs, counts)]
    return LineData(line, packets, [int(t) for t in ts], [int(s) for s in seqs], [int(c) for c in counts])


def random_endpoints(lines: list[int]) -> dict[int, dict[str, tuple[str, int]]]:
    """Distinct multicast groups and ports per line and copy, random so tests running side
    by side do not hear each other."""
    base = random.randint(1, 200)
    port = random.randint(20000, 50000)
    out = {}
    for k, ln in enumerate(lines):
        out[ln] = {"A": (f"239.77.{base}.{2 * k + 1}", port + 2 * k), "B": (f"239.78.{base}.{2 * k + 2}", port + 2 * k + 1)}
    return out


def write_capture(capture_dir: Path, lines: list[LineData], *, rotate_bytes: int | None = None,
                  endpoints: dict[int, dict[str, tuple[str, int]]] | None = None) -> dict[int, dict[str, tuple[str, int]]]:
    """line<NN>.pcap (rotated when ``rotate_bytes``) and manifest.json; returns the endpoints."""
    capture_dir.mkdir(parents=True, exist_ok=True)
    endpoints = endpoints or random_endpoints([d.line for d in lines])
    entries = []
    for d in lines:
        group, port = endpoints[d.line]["A"]
        lengths = np.array([len(p) for p in d.packets], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths[:-1])]).astype(np.int64)
        with PcapWriter(capture_dir / f"line{d.line:02d}.pcap", dst_ip=group, dst_port=port, max_bytes=rotate_bytes) as w:
            w.write(b"".join(d.packets), offsets, lengths, np.asarray(d.ts_ns, dtype=np.int64))
        entries.append({
            "line": d.line,
            "a": {"group": endpoints[d.line]["A"][0], "port": endpoints[d.line]["A"][1]},
            "b": {"group": endpoints[d.line]["B"][0], "port": endpoints[d.line]["B"][1]},
        })
    (capture_dir / "manifest.json").write_text(json.dumps({"date": "2008-02-04", "lines": entries}))
    return endpoints


def _mix64(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def drop_hash(seed: int, line: int, copy: int, lap: int, index: np.ndarray) -> np.ndarray:
    """The drop hash of replay.h, written again in numpy from its definition (splitmix64
    finalizer chained over seed, line, copy, lap, index)."""
    with np.errstate(over="ignore"):
        h = _mix64(np.uint64(seed))
        for v in (line, copy, lap):
            h = _mix64(h ^ np.uint64(v))
        return _mix64(h ^ np.asarray(index).astype(np.uint64))


def multicast_works() -> str | None:
    """None when a datagram sent to a group on 127.0.0.1 comes back to a member; else why."""
    group, port = "239.77.254.1", random.randint(50001, 60000)
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        r.bind((group, port))
        r.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
        r.settimeout(1.0)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        s.sendto(b"probe", (group, port))
        r.recv(16)
        return None
    except OSError as e:
        return f"multicast on 127.0.0.1 does not work here ({e}); try: ip link set lo multicast on"
    finally:
        r.close()
        s.close()



def packet_socket_refused() -> str | None:
    """None when this process may open a packet socket (CAP_NET_RAW: the packet sender and
    the packet-ring receive need one); else why."""
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    except (OSError, AttributeError) as e:
        return f"no packet socket here: {e}"
    return None

@dataclass
class Received:
    """One datagram: which (line, copy) endpoint it reached, its bytes, its arrival (ns)."""

    line: int
    copy: str
    data: bytes
    t_ns: int


class MulticastReceiver:
    """Real UDP sockets joined to each (line, copy) group on 127.0.0.1, read by a thread."""

    def __init__(self, endpoints: dict[int, dict[str, tuple[str, int]]], copies: tuple[str, ...] = ("A", "B")) -> None:
        self.received: list[Received] = []
        self._socks: dict[socket.socket, tuple[int, str]] = {}
        for line, eps in endpoints.items():
            for copy in copies:
                group, port = eps[copy]
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
                s.bind((group, port))
                s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
                s.setblocking(False)
                self._socks[s] = (line, copy)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        socks = list(self._socks)
        while not self._stop.is_set():
            ready, _, _ = select.select(socks, [], [], 0.05)
            for s in ready:
                while True:
                    try:
                        data = s.recv(65536)
                    except BlockingIOError:
                        break
                    line, copy = self._socks[s]
                    self.received.append(Received(line, copy, data, time.time_ns()))

    def __enter__(self) -> "MulticastReceiver":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.drain()
        self._stop.set()
        self._thread.join(2.0)
        for s in self._socks:
            s.close()

    def drain(self, quiet_s: float = 0.2) -> None:
        """Wait until nothing has arrived for ``quiet_s``."""
        n = -1
        while n != len(self.received):
            n = len(self.received)
            time.sleep(quiet_s)

    def of(self, line: int, copy: str) -> list[bytes]:
        return [r.data for r in self.received if r.line == line and r.copy == copy]


class RingDrain:
    """Reads every frame of a Vega ring in a thread (batch get/release), until its sender
    closes: the consumer side of a ``ring:NAME`` replay."""

    def __init__(self, receiver: object, hold_until_full: bool = False) -> None:
        self.rx = receiver
        # release nothing until every slot is taken: the sender must then wait for room, on
        # any host, however fast this thread reads
        self.hold_until_full = hold_until_full
        self.frames: list[tuple[np.ndarray, bytes]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from omdp.transport.api import PeerGoneError
        from ops.replay.native_layout import FRAME_DTYPE

        held: list[object] = []
        while not self._stop.is_set():
            try:
                batch = self.rx.get_batch(timeout=0.05)
            except PeerGoneError:
                return
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.error = e
                return
            if batch is None:
                if self.rx.peer_state() in ("closed", "dead"):
                    return
                continue
            for i in range(len(batch)):
                raw = bytes(batch.payload(i))
                head = np.frombuffer(raw[: FRAME_DTYPE.itemsize], dtype=FRAME_DTYPE)[0]
                self.frames.append((head, raw[FRAME_DTYPE.itemsize : FRAME_DTYPE.itemsize + int(head["length"])]))
            if self.hold_until_full:
                held.append(batch)
                if self.rx.held() < self.rx.spec.queue_size:
                    continue
                self.hold_until_full = False
                for b in held:
                    self.rx.release_batch(b)
                continue
            self.rx.release_batch(batch)

    def __enter__(self) -> "RingDrain":
        self._thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            self._stop.set()  # the test failed: do not wait for a sender that may never come
        self._thread.join(10.0)
        self._stop.set()
        self._thread.join()


def replay_into_ring(cap: Path, run_dir: Path, *, queue_size: int = 256, timeout: float = 20.0,
                     hold_until_full: bool = False, **config: object) -> tuple[object, RingDrain]:
    """Replay ``cap`` into a fresh Vega ring drained by a ``RingDrain`` until the replay ends;
    returns the final status and the drain (its frames and error). ``config``: the other
    ``ReplayConfig`` fields (``rate`` as a RateSpec, copies, realtime, ...); ``hold_until_full``:
    see ``RingDrain``."""
    from omdp.transport.shm_names import new_run_id, shm_name
    from omdp.transport.spec import ChannelSpec
    from omdp.transport.vega import VegaReceiver
    from ops.replay.config import ReplayConfig
    from ops.replay.service import ReplayService

    name = shm_name(new_run_id(), "replay")
    rx = VegaReceiver.create(ChannelSpec(queue_size=queue_size, max_message=2048, mutex=False), name)
    try:
        with RingDrain(rx, hold_until_full) as drain:
            svc = ReplayService(ReplayConfig(capture_dir=cap, target=f"ring:{name}", run_dir=run_dir, **config))
            svc.start()
            svc.wait(timeout)
        return svc.status(), drain
    finally:
        rx.close()


def realtime_refusal() -> str | None:
    """None when a child of this process may take SCHED_FIFO (as replay senders do); else why not."""
    probe = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    return None if r.returncode == 0 else f"SCHED_FIFO is not allowed here: {r.stderr.strip().splitlines()[-1:]}"
