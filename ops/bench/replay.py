"""``omdp bench replay``: how fast the replayer sends, and how well it keeps its schedule.

Measures, through the real service (sender process, C pacing loop, ``--loop`` over the
capture for a fixed time):
- the most packets/s it hands to the kernel over loopback multicast, A only and A+B, and
  into a Vega ring drained by a consumer thread (a schedule far faster than possible, so the
  loop is always behind and sends in batches);
- the pacing error (sent - intended) at 1x, 5x and 10x, A only, over multicast and into a
  ring, on a bursty recorded capture;
- a sweep of rates that finds where multicast stops keeping up (below 99.99% of the schedule,
  docs/architecture.md "sustainable");
- beside each paced run, the schedule's queueing floor (``ops.replay.pacing_floor``): the
  pacing error a sender with that target's flat-out cost per packet (its max-rate row, per
  sender CPU-second) would have on exactly the packets of that run. The target verdicts say
  whether a p99 above the target is the schedule's (within the floor and a margin) or the
  sender's own lateness.

Without ``--capture`` it synthesizes a 24-line capture (``omdp synth``, 1x, seed 0) in a
temporary directory. A capture given with ``--capture`` is sent to its own groups: run the
benchmark with no consumer listening there.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from omdp.native import ffi, lib
from omdp.runtime.machine import keep_thread_off, machine_info
from omdp.transport.shm_names import new_run_id, shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver
from ops.netns.veth import VethPair, make_veth
from ops.replay.config import ReplayConfig
from ops.replay.pacing_floor import FLOOR_MARGIN_FRACTION, FLOOR_MARGIN_NS, floor_percentiles, run_intended_ns, within_floor
from ops.replay.rates import PAPER_1X_PPS, RateSpec
from omdp.units import fmt_ns
from ops.replay.schedule import Schedule
from ops.replay.service import ReplayService
from ops.replay.status import SUSTAINED_FRACTION, ReplayStatus
from ops.synth.generator import SynthConfig, synthesize

MAX_RATE_PPS = 50_000_000
"""A schedule no sender can keep: measures the send loop flat out."""
PACING_TARGET_NS = 50_000
"""Issue target: pacing error p99 <= 50 us into a ring at 10x and over A-only multicast at 5x."""
PACING_TARGETS = (("ring", 10.0), ("multicast", 5.0))
XDP_PACING_X = 20.0
"""Issue 41's target: pacing error p99 <= 50 us through AF_XDP at 20x."""
XDP_SEND_RATIO = 5.0
"""Issue 41's target: AF_XDP sends >= 5x the kernel UDP socket's packets per sender CPU-second."""
RING_RATE_TARGET_PPS = 1_000_000
"""Issue target: >= 1 M packets/s into a ring from one core."""
RING_SPEC = ChannelSpec(transport="vega-shm", queue_size=8192, max_message=2048, mutex=False, wait="spin")
"""The ring the benchmark's consumer makes: a packet per slot, the tuned knobs (no mutex), and
8,192 slots (34 ms at 10x), so a consumer that loses its CPU for a scheduler slice does not
push back on the sender being measured (waits for room are counted: ``ring_full_waits``)."""


def synth_capture(directory: Path, seconds: float) -> Path:
    """A 24-line ``omdp synth`` capture of ``seconds`` at 1x (bursty, about 14 messages and
    290 bytes per packet); returns its capture directory. Its multicast groups are moved to
    239.255.77.n (A) and 239.255.78.n (B), so a pipeline running beside the benchmark on the
    standard groups hears none of it."""
    cap = synthesize(SynthConfig(data=directory, seconds=seconds, seed=0, progress=False)).directory
    manifest = json.loads((cap / "manifest.json").read_text())
    for entry in manifest["lines"]:
        entry["a"]["group"] = f"239.255.77.{entry['line']}"
        entry["b"]["group"] = f"239.255.78.{entry['line']}"
    (cap / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return cap


class RingConsumer:
    """Drains a ring in a C loop on its own thread (on ``cpu`` when given), 256 slots per
    batch, until the replay closes its end: a consumer that is never the bottleneck."""

    def __init__(self, cpu: int | None) -> None:
        self.name = shm_name(new_run_id(), "bench")
        self.rx = VegaReceiver.create(RING_SPEC, self.name)
        self.frames = 0
        self._cpu = cpu
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self._cpu is not None:
            os.sched_setaffinity(threading.get_native_id(), {self._cpu})
        checksum = ffi.new("uint64_t *")
        t_first = ffi.new("int64_t *")
        t_last = ffi.new("int64_t *")
        got = lib.omdp_tbench_vega_recv(self.rx.c_handle, 1 << 62, 256, checksum, t_first, t_last)
        self.frames = max(int(got), 0)

    def close(self) -> None:
        self._thread.join(30.0)
        self.rx.close()


def _other_cpu(cpus: tuple[int, ...]) -> int | None:
    """A usable CPU the sender is not pinned to, for the ring's consumer."""
    free = sorted(os.sched_getaffinity(0) - set(cpus)) if cpus else []
    return free[0] if free else None


def _over_veth(veth: VethPair | None, sender: str) -> dict[str, object]:
    """A multicast replay's settings to send from the veth pair's namespace out of its end
    (the kernel's UDP socket or AF_XDP alike); none without a pair."""
    if veth is None:
        return {}
    return {"interface": veth.tx_addr, "ttl": 1, "netns": veth.ns, **({"xdp": f"{veth.tx}:0"} if sender == "xdp" else {})}


def _run(capture: Path, run_dir: Path, rate: RateSpec, *, copies: str, seconds: float, cpus: tuple[int, ...],
         ring: bool = False, realtime: bool = False, sender: str = "udp",
         veth: VethPair | None = None) -> tuple[ReplayStatus, int | None, Schedule | None]:
    """One replay: its status, the frames its consumer received (``ring``), its schedule.
    Multicast goes out of ``veth``'s sending end when a pair is given, else over loopback."""
    consumer = RingConsumer(_other_cpu(cpus)) if ring else None
    try:
        cfg = ReplayConfig(capture_dir=capture, rate=rate, copies=copies, seconds=seconds, cpus=cpus, loop=True,
                           target=f"ring:{consumer.name}" if consumer else "multicast", run_dir=run_dir,
                           write_intended=False, realtime=realtime, multicast_sender=sender,
                           **({} if consumer else _over_veth(veth, sender)))
        with ReplayService(cfg) as svc:
            svc.start()
            svc.wait()
            st = svc.status()
            schedule = svc.schedule
    finally:
        if consumer is not None:
            consumer.close()
    return st, consumer.frames if consumer is not None else None, schedule


def _row(kind: str, target: str, copies: str, result: tuple[ReplayStatus, int | None, Schedule | None],
         sender: str = "udp", path: str = "loopback") -> dict[str, object]:
    st, frames_received, _ = result
    datagrams = sum(sum(ln.packets.values()) for ln in st.lines)
    cpu_s = sum(s.cpu_s for s in st.senders)
    return {
        "kind": kind,
        "target": target,
        "multicast_sender": sender if target == "multicast" else None,
        "path": path if target == "multicast" else "ring",
        "copies": copies,
        "rate": st.rate,
        "target_pps": st.target_pps,
        "achieved_pps": st.achieved_pps,
        "achieved_fraction": st.achieved_fraction,
        "datagrams_per_s": datagrams / st.elapsed_s if st.elapsed_s else None,
        "messages_per_packet": st.messages_per_packet,
        "messages_per_s": (st.achieved_pps or 0) * (st.messages_per_packet or 0),
        "packets": st.packets_sent,
        "seconds": st.elapsed_s,
        "sender_cpu_s": cpu_s,
        "sender_preemptions": sum(s.preemptions for s in st.senders),
        "realtime": st.realtime,
        "sender_forced_rests": sum(s.forced_rests for s in st.senders),
        "ring_full_waits": sum(s.ring_full_waits for s in st.senders),
        "ring_full_wait_s": sum(s.ring_full_wait_s for s in st.senders),
        "packets_per_cpu_s": st.packets_sent / cpu_s if cpu_s else None,
        "pacing_count": st.pacing.count,
        "pacing_p50_ns": st.pacing.p50_ns,
        "pacing_p99_ns": st.pacing.p99_ns,
        "pacing_p999_ns": st.pacing.p999_ns,
        "pacing_max_ns": st.pacing.max_ns,
        "behind_batches": sum(s.behind_batches for s in st.senders),
        "send_errors": sum(sum(ln.send_errors.values()) for ln in st.lines),
        "sent": datagrams,
        "received_by_ring_consumer": frames_received,
    }


def _add_floor(row: dict[str, object], schedule: Schedule | None, rate: RateSpec, rows: list[dict[str, object]]) -> None:
    """The queueing floor of a paced run, at the cost per packet of its target's max-rate row."""
    flat_out = next((r for r in rows if r["kind"] == "max_rate" and r["target"] == row["target"]
                     and r["copies"] == row["copies"] and r.get("multicast_sender") == row.get("multicast_sender")),
                    None)
    per_cpu_s = flat_out["packets_per_cpu_s"] if flat_out else None
    if schedule is None or not per_cpu_s:
        row.update(floor_cost_ns=None, floor_p50_ns=None, floor_p99_ns=None, within_floor=None)
        return
    cost = 1e9 / float(per_cpu_s)
    intended = run_intended_ns(schedule, schedule.scale_for(rate), int(row["pacing_count"]), loop=True)
    p50, p99 = floor_percentiles(intended, cost, (0.5, 0.99))
    row.update(floor_cost_ns=cost, floor_p50_ns=p50, floor_p99_ns=p99,
               within_floor=within_floor(row["pacing_p99_ns"], p99))  # type: ignore[arg-type]


def pacing_verdict(row: dict[str, object]) -> str:
    """Met or not, and when not: the schedule's floor or the sender's lateness."""
    p99 = row["pacing_p99_ns"]
    floor = row["floor_p99_ns"]
    cost = f"{fmt_ns(row['floor_cost_ns'])} per packet" if row["floor_cost_ns"] else "n/a"
    floor_text = f"the schedule's floor ({fmt_ns(floor)} at this sender's flat-out cost of {cost})"
    if p99 is None:
        return "not measured (too few packets)"
    if p99 <= PACING_TARGET_NS:
        return f"met: p99 {fmt_ns(p99)}; {floor_text}"
    if row["within_floor"]:
        return (f"not met: p99 {fmt_ns(p99)}, within {floor_text} (+ margin): the capture's microbursts ask more "
                "than this target takes per packet; a cheaper sink, not a better-scheduled sender, would meet it")
    return (f"not met: p99 {fmt_ns(p99)}, above {floor_text} (+ margin): the sender was late beyond its cost per "
            f"packet ({row['sender_preemptions']:,} preemptions, {row['ring_full_waits']:,} waits for ring room, "
            f"{row['sender_forced_rests']:,} real-time rests)")


def targets_of(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The issue's targets against this run's rows."""
    out: list[dict[str, object]] = []
    ring_max = next((r for r in rows if r["kind"] == "max_rate" and r["target"] == "ring"), None)
    if ring_max is not None:
        pps = float(ring_max["achieved_pps"] or 0)
        out.append({"target": f">= {RING_RATE_TARGET_PPS:,} packets/s into a ring from one core", "measured": pps,
                    "met": pps >= RING_RATE_TARGET_PPS,
                    "verdict": f"{'met' if pps >= RING_RATE_TARGET_PPS else 'not met'}: {pps:,.0f} packets/s"})
    for target, x in (*PACING_TARGETS, ("multicast", XDP_PACING_X)):
        for row in (r for r in rows if r["kind"] == "pacing" and r["target"] == target and r["copies"] == "A"
                    and abs(float(r["target_pps"]) / PAPER_1X_PPS - x) < 1e-6
                    and (x != XDP_PACING_X or r.get("multicast_sender") == "xdp")):
            out.append(_pacing_target(row, target, x))
    out.extend(_xdp_send_targets(rows))
    return out


def _xdp_send_targets(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """AF_XDP's packets per sender CPU-second flat out against the kernel UDP socket's on the
    same path, per copies sent (none unless both were measured)."""
    out: list[dict[str, object]] = []
    flat = {(r.get("multicast_sender"), r["copies"]): r for r in rows
            if r["kind"] == "max_rate" and r["target"] == "multicast"}
    for copies in ("A", "A,B"):
        xdp, udp = flat.get(("xdp", copies)), flat.get(("udp", copies))
        if not xdp or not udp or not xdp["packets_per_cpu_s"] or not udp["packets_per_cpu_s"]:
            continue
        ratio = float(xdp["packets_per_cpu_s"]) / float(udp["packets_per_cpu_s"])
        met = ratio >= XDP_SEND_RATIO
        out.append({"target": f">= {XDP_SEND_RATIO:g}x the UDP socket's packets per sender CPU-s through AF_XDP, "
                              f"copies {copies}", "measured": ratio, "met": met,
                    "verdict": f"{'met' if met else 'not met'}: {ratio:.2f}x ({float(xdp['packets_per_cpu_s']):,.0f} "
                               f"against {float(udp['packets_per_cpu_s']):,.0f} packets per CPU-s, {xdp['path']})"})
    return out


def _pacing_target(row: dict[str, object], target: str, x: float) -> dict[str, object]:
    """One pacing target's verdict from its row (the packet-socket sender's rows say so)."""
    p99 = row["pacing_p99_ns"]
    where = {"packet": f"{target} (packet socket)", "packet_ring": f"{target} (packet TX ring)",
             "xdp": f"{target} (AF_XDP, {row.get('path')})"}.get(str(row.get("multicast_sender")), target)
    if row.get("path") == "veth" and row.get("multicast_sender") == "udp":
        where = f"{target} (UDP socket, veth)"
    return {"target": f"pacing error p99 <= {fmt_ns(PACING_TARGET_NS)}, {where} A at {x:g}x", "measured": p99,
            "met": p99 is not None and p99 <= PACING_TARGET_NS, "floor_p99_ns": row["floor_p99_ns"],
            "floor_cost_ns": row["floor_cost_ns"], "within_floor": row["within_floor"], "verdict": pacing_verdict(row)}


def run_replay_bench(capture: Path | None, *, capture_seconds: float, seconds: float, cpus: tuple[int, ...],
                     sweep: tuple[float, ...], realtime: bool = False, log: bool = True,
                     senders: tuple[str, ...] = ("udp",),
                     pacing_rates: tuple[float, ...] = (1.0, 5.0, 10.0)) -> dict[str, object]:
    """Every measurement of this benchmark; returns the JSON document. ``senders``: the
    multicast senders measured ('udp', 'packet', 'packet_ring', 'xdp'), each in turn at every
    step, so that two are compared side by side in one series. With 'xdp' every multicast run
    goes out of one end of a veth pair whose other end is in another namespace (the sender in
    the pair's namespace, docs/xdp.md), the kernel's sockets as well as AF_XDP, so that the
    rows compare on one path."""
    keep_thread_off(set(cpus))
    tmp = Path(tempfile.mkdtemp(prefix="omdp-bench-replay-"))
    rows: list[dict[str, object]] = []
    veth = make_veth() if "xdp" in senders else None
    path = "veth" if veth is not None else "loopback"

    def note(msg: str) -> None:
        if log:
            print(msg, file=sys.stderr, flush=True)

    def run(rate: RateSpec, sender: str, target: str = "multicast", copies: str = "A") -> tuple:
        return _run(capture, tmp / "run", rate, copies=copies, seconds=seconds, cpus=cpus, ring=target == "ring",
                    realtime=realtime, sender=sender, veth=veth)

    try:
        if capture is None:
            note(f"synthesizing a {capture_seconds:g} s capture at 1x (omdp synth, 24 lines, seed 0)")
            capture = synth_capture(tmp / "data", capture_seconds)
        runs = [(t, c, s) for t, c in (("multicast", "A"), ("multicast", "A,B")) for s in senders] + [("ring", "A", "udp")]
        for target, copies, sender in runs:
            res = run(RateSpec(kind="pps", value=MAX_RATE_PPS), sender, target, copies)
            rows.append(_row("max_rate", target, copies, res, sender, path))
            note(f"max rate {target} {copies} ({sender}): {res[0].achieved_pps:,.0f} packets/s")
        for target, sender in [("multicast", s) for s in senders] + [("ring", "udp")]:
            for x in pacing_rates:
                rate = RateSpec(kind="rate", value=x)
                res = run(rate, sender, target)
                row = _row("pacing", target, "A", res, sender, path)
                _add_floor(row, res[2], rate, rows)
                rows.append(row)
                note(f"pacing {target} A {x:g}x ({sender}): p99 {fmt_ns(res[0].pacing.p99_ns)} "
                     f"(floor {fmt_ns(row['floor_p99_ns'])}), {res[0].achieved_fraction:.5f} of schedule")
        for sender in senders:
            for x in sweep:
                rate = RateSpec(kind="rate", value=x)
                res = run(rate, sender)
                row = _row("sweep", "multicast", "A", res, sender, path)
                _add_floor(row, res[2], rate, rows)
                rows.append(row)
                note(f"sweep multicast A {x:g}x ({sender}): {res[0].achieved_fraction:.5f} of schedule")
                if (res[0].achieved_fraction or 0) < SUSTAINED_FRACTION:
                    break
        keeps, fails = _keeps_up(rows, senders[0])
        return {
            "benchmark": "replay",
            "command": " ".join(["omdp", "bench", "replay", *sys.argv[sys.argv.index("replay") + 1:]]) if "replay" in sys.argv else "omdp bench replay",
            "machine": machine_info(),
            "seconds_per_run": seconds,
            "cpus": list(cpus),
            "realtime_requested": realtime,
            "multicast_path": path,
            "rows": rows,
            "floor_margin": {"ns": FLOOR_MARGIN_NS, "fraction": FLOOR_MARGIN_FRACTION},
            "targets": targets_of(rows),
            "multicast_keeps_up_to_x": keeps,
            "multicast_behind_at_x": fails,
            "keeps_up_by_sender": {snd: _keeps_up(rows, snd) for snd in senders},
        }
    finally:
        if veth is not None:
            veth.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _keeps_up(rows: list[dict[str, object]], sender: str | None = None) -> tuple[float | None, float | None]:
    """Over the multicast A runs at Nx (pacing and sweep) of ``sender`` (None: all), by rate:
    the highest rate kept at >= 99.99% of the schedule below the first one that was not, and
    that first one."""
    runs = sorted((r["target_pps"] / PAPER_1X_PPS, r["achieved_fraction"] or 0.0) for r in rows
                  if r["target"] == "multicast" and r["copies"] == "A" and r["kind"] in ("pacing", "sweep")
                  and sender in (None, r.get("multicast_sender")))
    keeps = None
    for x, frac in runs:
        if frac < SUSTAINED_FRACTION:
            return keeps, x
        keeps = x
    return keeps, None


def render_table(doc: dict[str, object]) -> str:
    """The markdown table of docs/benchmarks.md."""
    lines = ["| measurement | target | copies | rate | packets/s | messages/s | packets per sender CPU-s | of schedule "
             "| pacing p50 | p99 | p99.9 | max | n | sender preempted | floor p50 | floor p99 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:  # type: ignore[union-attr]
        frac = f"{r['achieved_fraction'] * 100:.3f}%" if r["achieved_fraction"] is not None else "n/a"
        per_cpu = f"{r['packets_per_cpu_s']:,.0f}" if r["packets_per_cpu_s"] else "n/a"
        target = f"{r['target']} ({r['multicast_sender']})" if r.get("multicast_sender") else r["target"]
        head = f"| {r['kind']} | {target} | {r['copies']} "
        if r["kind"] == "max_rate":
            lines.append(head + f"| max | {r['achieved_pps']:,.0f} | {r['messages_per_s']:,.0f} | {per_cpu} | - | - | - "
                         f"| - | - | {r['packets']:,} | {r['sender_preemptions']:,} | - | - |")
            continue
        lines.append(
            head + f"| {r['rate']} | {r['achieved_pps']:,.0f} | {r['messages_per_s']:,.0f} | {per_cpu} | {frac} "
            f"| {fmt_ns(r['pacing_p50_ns'])} | {fmt_ns(r['pacing_p99_ns'])} | {fmt_ns(r['pacing_p999_ns'])} "
            f"| {fmt_ns(r['pacing_max_ns'])} | {r['pacing_count']:,} | {r['sender_preemptions']:,} "
            f"| {fmt_ns(r.get('floor_p50_ns'))} | {fmt_ns(r.get('floor_p99_ns'))} |"
        )
    return "\n".join(lines)


def render_targets(doc: dict[str, object]) -> str:
    """One line per target: the verdict, with the floor that explains a miss or not."""
    return "\n".join(f"- {t['target']}: {t['verdict']}" for t in doc.get("targets", []))  # type: ignore[union-attr]
