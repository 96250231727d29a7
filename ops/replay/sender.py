"""A sender process: maps its share of the schedule and the capture files, opens its sink,
and hands everything to the C pacing loop (``omdp_replay_run``) in one call.

The service starts one per ``--senders`` as a program (``ops.replay.sender_program``);
Python runs here only before and after the loop.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from feedhandlers.xdp import parse_xdp_queue, xdp_built
from omdp.native import ffi, lib
from omdp.transport.vega import VegaSender
from ops.replay.ctl_segment import CtlSegment
from ops.replay.intended_table import IntendedTable
from ops.replay.ring_target import attach_ring


@dataclass(frozen=True)
class UdpTarget:
    """Multicast: the interface, TTL, and (line, copy index) -> (group, port)."""

    interface: str
    ttl: int
    dests: dict[tuple[int, int], tuple[str, int]] = field(default_factory=dict)
    sender: str = "udp"
    """'udp' (sendmmsg on a UDP socket), 'packet' (a packet socket past the qdisc) or
    'packet_ring' (that socket's mapped TX ring) or 'xdp' (an AF_XDP socket's TX ring)."""
    xdp: str = ""
    """sender 'xdp': IFACE:QUEUE."""


@dataclass(frozen=True)
class RingTarget:
    """A Vega ring made by its consumer (``ring:NAME``)."""

    name: str
    connect_timeout: float = 10.0


@dataclass(frozen=True)
class SenderPlan:
    """What one sender needs; small and picklable (the packets travel in a .npy file)."""

    index: int
    ctl_name: str
    intended_name: str | None
    schedule_path: str
    sources: list[tuple[str, int]]
    """Per source index: (path, expected size); ('', 0) for files of other senders' lines."""
    control_buf: bytes
    copies_mask: int
    lap_span: int
    loop: bool
    drop_thresholds: tuple[int, int]
    drop_seed: int
    spin_ns: int
    realtime_priority: int
    """SCHED_FIFO priority asked for (--realtime); 0: an ordinary task."""
    cpu: int | None
    target: UdpTarget | RingTarget
    parent_pid: int


def _open_udp(target: UdpTarget, keep: list) -> object:
    sink = ffi.new("omdp_replay_udp_sink_t *")
    keep.append(sink)
    err = ffi.new("char[]", 256)
    if lib.omdp_replay_udp_open(sink, target.interface.encode(), target.ttl, err, 256) != 0:
        raise OSError(ffi.string(err).decode(errors="replace"))
    for (line, copy), (group, port) in target.dests.items():
        if lib.omdp_replay_udp_set_dest(sink, line, copy, group.encode(), port) != 0:
            raise ValueError(f"line {line} copy {'AB'[copy]}: bad destination {group}:{port}")
    use = {"packet": lib.omdp_replay_udp_use_packet_socket, "packet_ring": lib.omdp_replay_udp_use_packet_ring,
           "xdp": lambda sink, iface, err, errlen: _use_xdp(sink, target, err)}
    if target.sender in use and use[target.sender](sink, target.interface.encode(), err, 256) != 0:
        lib.omdp_replay_udp_close(sink)
        raise OSError(f"multicast_sender '{target.sender}': {ffi.string(err).decode(errors='replace')}")
    return sink


def _use_xdp(sink: object, target: UdpTarget, err: object) -> int:
    """The sink onto an AF_XDP socket on ``target.xdp``; 0, or -1 with the reason in ``err``."""
    if not xdp_built():
        raise OSError("multicast_sender 'xdp': this build of omdp has no AF_XDP (libxdp and libbpf headers were "
                      "absent when it was built; docs/xdp.md)")
    name, queue = parse_xdp_queue(target.xdp)
    return lib.omdp_replay_udp_use_xdp(sink, target.interface.encode(), name.encode(), queue, err, 256)


def _ring_sink(tx: VegaSender, ctl: CtlSegment, service_pid: int, keep: list) -> object:
    sink = ffi.new("omdp_replay_ring_sink_t *")
    sink.tx = tx.c_handle
    sink.command = ffi.addressof(ctl.control, "command")
    sink.service_pid = service_pid
    keep.append(sink)
    return sink


def _map_sources(plan: SenderPlan, keep: list) -> object:
    srcs = ffi.new("omdp_replay_source_t[]", len(plan.sources) + 1)
    keep.append(srcs)
    for i, (path, size) in enumerate(plan.sources):
        if not path:
            continue
        m = np.memmap(path, dtype=np.uint8, mode="r")
        if m.shape[0] != size:
            raise ValueError(f"{path}: {m.shape[0]} bytes now, {size} when the service read it (changed under us)")
        int(m[::4096].sum())  # map every page in now, not during the paced send
        keep.append(m)
        srcs[i].base = ffi.cast("const uint8_t *", ffi.from_buffer(m))
        srcs[i].size = size
    if plan.control_buf:
        ctrl = ffi.new("uint8_t[]", plan.control_buf)
        keep.append(ctrl)
        srcs[len(plan.sources)].base = ctrl
        srcs[len(plan.sources)].size = len(plan.control_buf)
    return srcs


def run_sender(plan: SenderPlan) -> int:
    """Run one sender to the end in this process; returns the C loop's result."""
    ctl = CtlSegment.open(plan.ctl_name)
    status = ctl.sender_ptr(plan.index)
    status.pid = os.getpid()
    keep: list = []
    udp = None
    ring: VegaSender | None = None
    table = None
    try:
        if plan.cpu is not None:
            os.sched_setaffinity(0, {plan.cpu})
            status.cpu = plan.cpu
        pkts = np.ascontiguousarray(np.load(plan.schedule_path))
        keep.append(pkts)
        srcs = _map_sources(plan, keep)
        if plan.intended_name:
            table = IntendedTable.open(plan.intended_name, writable=True)
        if isinstance(plan.target, RingTarget):
            largest = int(pkts["len"].max()) if pkts.shape[0] else 0
            ring = attach_ring(plan.target.name, largest, plan.target.connect_timeout)
            sink = _ring_sink(ring, ctl, plan.parent_pid, keep)
        else:
            sink = udp = _open_udp(plan.target, keep)
        args = ffi.new("omdp_replay_run_args_t *")
        args.control = ctl.control
        args.status = status
        args.lines = ctl.lines_ptr()
        args.log = ctl.log_ptr(plan.index)
        args.intended = table.header if table else ffi.NULL
        args.pkts = ffi.cast("const omdp_replay_pkt_t *", ffi.from_buffer(pkts))
        args.n_pkts = pkts.shape[0]
        args.sources = srcs
        args.n_sources = len(plan.sources) + 1
        args.copies_mask = plan.copies_mask
        args.lap_span = plan.lap_span
        args.loop = 1 if plan.loop else 0
        args.sink_kind = lib.OMDP_REPLAY_SINK_RING if isinstance(plan.target, RingTarget) else lib.OMDP_REPLAY_SINK_UDP
        args.sink = sink
        args.drop_threshold = list(plan.drop_thresholds)
        args.drop_seed = plan.drop_seed
        args.spin_ns = plan.spin_ns
        args.service_pid = plan.parent_pid
        if plan.realtime_priority:
            # last, so the memory lock covers everything mapped above; refusals go to the status
            lib.omdp_replay_realtime_enter(status, plan.realtime_priority)
        return int(lib.omdp_replay_run(args))
    except Exception as e:  # noqa: BLE001 - any failure must reach the service as status text
        lib.omdp_replay_status_fail(status, f"sender {plan.index}: {e}".encode(errors="replace")[:255])
        return int(lib.OMDP_REPLAY_EINVAL)
    finally:
        if udp is not None:
            lib.omdp_replay_udp_close(udp)
        if ring is not None:
            ring.close()
        if table is not None:
            table.close()
        ctl.close()
