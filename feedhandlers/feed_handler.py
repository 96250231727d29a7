"""The feed handler operator (``feed_handler``), its parameters and its factory.

The per-packet work is C (``native/include/omdp/feed_handler.h``); this module is the
control plane around it: it validates the parameters, opens what the C side reads - the
multicast sockets of the lines (bound to each group, joined on the interface, non-blocking)
or the Vega ring the replayer writes into - attaches the run's stats segment for live
per-line counters, packs the lines and the routing table into C arrays, and releases all
of it when the partition closes.

Which instance serves which line is data: every ``FeedLine`` names its handler (the
replica index of the ``feed_handler`` instance) and its sender (the feed sender replaying
it). The pipeline assembly (``ops.pipeline``) fills both from the capture's manifest.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from feedhandlers.routing import RoutingTable
from feedhandlers.xdp import parse_xdp_queue
from omdp.metrics.stats_segment import StatsSegmentError, StatsWriter
from omdp.native import ffi, lib
from omdp.native_operator import NativeOperator
from omdp.operator import OperatorContext
from omdp.runtime.reshard import ReshardSegment
from omdp.transport.shm_names import shm_name
from omdp.transport.spec import ChannelSpec
from omdp.transport.vega import VegaReceiver

MAX_ENGINES = int(lib.OMDP_FH_MAX_ENGINES)
ENGINE_PORTS: tuple[str, ...] = tuple(f"de{k}" for k in range(MAX_ENGINES))
"""Output ports: ``de<k>`` carries the messages of engine k's underlyings."""
RING_FRAME_HEADER = 24
"""sizeof(omdp_replay_frame_t): what precedes a packet in a ring slot."""
_INPUT_CODES = {"ring": lib.OMDP_FH_INPUT_RING, "multicast": lib.OMDP_FH_INPUT_MULTICAST}
FEED_FORMATS: dict[str, int] = {"opra-fast-v2": lib.OMDP_FH_FORMAT_FAST, "obi-v6": lib.OMDP_FH_FORMAT_OBI}
"""A capture manifest's ``feed_format`` -> the C handler's decoder and arbitration."""
_RECEIVE_CODES = {"sockets": lib.OMDP_FH_RECEIVE_SOCKETS, "packet_ring": lib.OMDP_FH_RECEIVE_PACKET_RING,
                  "xdp": lib.OMDP_FH_RECEIVE_XDP}
RX_RING_BLOCK = 4 << 20
"""The packet ring is allocated in blocks of this many bytes (feed_handler_rxring.c)."""


def feed_ring_name(run_id: str, handler: int) -> str:
    """Shared-memory name of the ring feed handler ``handler`` of run ``run_id`` reads."""
    return shm_name(run_id, f"feed{handler}")


class Endpoint(BaseModel):
    """A multicast group and UDP port."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str
    port: int = Field(ge=1, le=65535)


class FeedLine(BaseModel):
    """One OPRA line: who handles it, who sends it, where its copies are multicast."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line: int = Field(ge=1, le=int(lib.OMDP_FH_MAX_LINE))
    handler: int = Field(0, ge=0, description="replica index of the feed handler serving this line")
    sender: int = Field(0, ge=0, description="replica index of the feed sender replaying this line")
    a: Endpoint | None = None
    b: Endpoint | None = None


class FeedHandlerParams(BaseModel):
    """``feed_handler`` parameters; the defaults live here. ``lines`` and ``routing`` come
    from the capture (the pipeline assembly fills them)."""

    model_config = ConfigDict(extra="forbid")

    input: Literal["ring", "multicast"] = Field("ring", description="packets from the replayer's ring, or multicast")
    format: Literal["opra-fast-v2", "obi-v6"] = Field(
        "opra-fast-v2", description="the feed's wire format (the capture manifest's feed_format; the pipeline assembly "
                                    "fills it): FAST V2 arbitrated per message, or OBI v6 arbitrated per spec 9.2")
    lines: list[FeedLine] = Field(default_factory=list, description="the lines of the feed, with handler and sender")
    routing: RoutingTable = Field(default_factory=RoutingTable, description="root -> underlying, engine")
    default_engine: int = Field(0, ge=0, lt=MAX_ENGINES, description="engine of messages without a root")
    copies: Literal["A", "B", "A,B"] = Field("A,B", description="multicast copies to join")
    gap_timeout_us: float = Field(
        lib.OMDP_FH_OBI_GAP_TIMEOUT_NS / 1000, ge=0, le=60e6,
        description="OBI: a gap on one stream waits this long (on the packets' arrival stamps) for the other "
                    "stream to fill it before it is declared lost (spec 9.2's short timeout); 0: no timeout, "
                    "it waits until the other stream passes it")
    interface: str = Field("127.0.0.1", description="multicast interface address")
    rcvbuf_bytes: int = Field(8 << 20, ge=1 << 16, le=1 << 30, description="socket receive buffer")
    receive: Literal["sockets", "packet_ring", "xdp"] = Field(
        "sockets", description="multicast: epoll + recvmmsg on a UDP socket per line and copy, or 'packet_ring': "
                               "one packet socket's mapped RX ring for all lines, polled without a syscall per "
                               "datagram (needs CAP_NET_RAW; the UDP sockets then only hold the joins), or 'xdp': "
                               "one AF_XDP socket on the queue named by 'xdp' (docs/xdp.md; root)")
    xdp: str = Field("", description="receive = 'xdp': the interface and its receive queue, IFACE:QUEUE")
    rx_ring_bytes: int = Field(256 << 20, ge=RX_RING_BLOCK, le=1 << 30,
                               description="packet_ring: bytes of the RX ring (xdp: of the UMEM), a multiple of 4 MiB (2 KiB per datagram: "
                                           "131,072 datagrams by default, about what 24 sockets' buffers hold)")
    batch_packets: int = Field(32, ge=1, le=int(lib.OMDP_FH_MAX_BATCH), description="packets per receive call")
    coalesce_packets: int = Field(4, ge=1, le=int(lib.OMDP_FH_MAX_BATCH),
                                  description="packets already waiting in the input that leave as one batch per "
                                              "engine (never waited for; bounds the added latency); 1: off")
    ring: str = Field("", description="ring shm name; empty: omdp-<run_id>-feed<replica>")
    ring_queue_size: int = Field(2048, ge=2, le=1 << 16,
                                 description="ring slots, a power of two; 2,048 (4 MiB) hold about 4 ms of a fused "
                                             "partition's work at 20x, so the replayer's process losing its CPU for a "
                                             "few ms to the processes it shares it with does not leave the handler idle")
    ring_max_message: int = Field(2048, ge=RING_FRAME_HEADER + 1456, le=1 << 16, description="ring slot payload")
    intended_table: str = Field("", description="intended-time table name; {run_id} and {sender} are filled in")
    stats_interval_ms: float = Field(100.0, gt=0, description="live per-line counters this often")
    reshard: bool = Field(False, description="buckets may move between engines at run time (the run's reshard "
                                             "segment; the routing must be by bucket)")

    @field_validator("ring_queue_size")
    @classmethod
    def _pow2(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"ring_queue_size must be a power of two, got {v}")
        return v

    @field_validator("rx_ring_bytes")
    @classmethod
    def _blocks(cls, v: int) -> int:
        if v % RX_RING_BLOCK:
            raise ValueError(f"rx_ring_bytes must be a multiple of {RX_RING_BLOCK} (4 MiB), got {v}")
        return v

    @model_validator(mode="after")
    def _check(self) -> FeedHandlerParams:
        if self.default_engine >= self.routing.engines:
            raise ValueError(f"default_engine {self.default_engine} of {self.routing.engines} engines")
        seen: set[int] = set()
        for ln in self.lines:
            if ln.line in seen:
                raise ValueError(f"line {ln.line} appears twice")
            seen.add(ln.line)
            if self.input == "multicast" and ln.a is None and ln.b is None:
                raise ValueError(f"line {ln.line}: multicast input needs its A or B endpoint")
        if self.receive == "xdp":
            parse_xdp_queue(self.xdp)
        return self


def _multicast_socket(ep: Endpoint, interface: str, rcvbuf: int) -> socket.socket:
    """A non-blocking UDP socket bound to ``ep`` and joined to its group on ``interface``."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.bind((ep.group, ep.port))
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(ep.group) + socket.inet_aton(interface))
        s.setblocking(False)
    except OSError as e:
        s.close()
        raise OSError(e.errno, f"multicast {ep.group}:{ep.port} on {interface}: {e.strerror}") from None
    return s


def _iface_addr(interface: str) -> int:
    """``interface`` as the C side's uint32 in network byte order (its bytes as they are)."""
    try:
        return int.from_bytes(socket.inet_aton(interface), "little")
    except OSError:
        raise ValueError(f"interface {interface!r} is not an IPv4 address") from None


def gap_timeout_ns(us: float) -> int:
    """``gap_timeout_us`` as the C side's obi_gap_timeout_ns: -1 for none (its 0 is the default)."""
    return -1 if us == 0 else max(1, round(us * 1000))


def _xdp_params(p: FeedHandlerParams) -> dict[str, Any]:
    """The C side's xdp_ifname and xdp_queue (none unless receive = 'xdp')."""
    if p.receive != "xdp":
        return {}
    name, queue = parse_xdp_queue(p.xdp)
    return {"xdp_ifname": name.encode(), "xdp_queue": queue}


@dataclass(frozen=True)
class FeedHandlerOperator(NativeOperator):
    """The native operator and what its C side borrows: sockets, the ring, the stats
    segment and the C arrays of lines and routes. ``close`` releases them."""

    sockets: list[socket.socket] = field(default_factory=list)
    ring: VegaReceiver | None = None
    stats: StatsWriter | None = None
    reshard: ReshardSegment | None = None
    keep: list[Any] = field(default_factory=list)

    def close(self) -> None:
        """After the C operator closed: leave the ring, close the sockets, detach stats and
        the reshard segment."""
        for s in self.sockets:
            s.close()
        if self.reshard is not None:
            self.reshard.close()
        if self.ring is not None:
            self.ring.close()
        if self.stats is not None:
            self.stats.close()


def _attach_stats(run_dir: Path | None) -> StatsWriter | None:
    if run_dir is None:
        return None
    try:
        return StatsWriter.attach(Path(run_dir).name)
    except (StatsSegmentError, ValueError):
        return None


def _routes(routing: RoutingTable) -> Any:
    n = len(routing.roots)
    arr = ffi.new("omdp_fh_route_t[]", max(n, 1))
    for i, (root, uid, eng) in enumerate(zip(routing.roots, routing.underlying_ids, routing.root_engines)):
        raw = root.encode()
        ffi.memmove(arr[i].root, raw, len(raw))
        arr[i].underlying_id = uid
        arr[i].engine = eng
    return arr


def make_feed_handler(p: FeedHandlerParams, ctx: OperatorContext) -> FeedHandlerOperator:
    """Factory of ``feed_handler``: the lines whose ``handler`` is this replica."""
    mine = [ln for ln in p.lines if ln.handler == ctx.replica]
    if not mine:
        raise ValueError(f"{ctx.name}: no line is assigned to feed handler {ctx.replica} "
                         f"(lines: {len(p.lines)}; the pipeline assembly fills them from the capture)")
    run_id = Path(ctx.run_dir).name if ctx.run_dir is not None else None
    sockets: list[socket.socket] = []
    ring: VegaReceiver | None = None
    stats: StatsWriter | None = None
    reshard: ReshardSegment | None = None
    try:
        if p.reshard:
            reshard = ReshardSegment.for_operator(ctx.name, ctx.run_dir)
        lines = ffi.new("omdp_fh_line_params_t[]", len(mine))
        for i, ln in enumerate(mine):
            lines[i].line = ln.line
            lines[i].fd = [-1, -1]
            if p.input == "multicast":
                for c, ep in enumerate((ln.a, ln.b)):
                    if ep is not None and "AB"[c] in p.copies:
                        s = _multicast_socket(ep, p.interface, p.rcvbuf_bytes)
                        sockets.append(s)
                        lines[i].fd[c] = s.fileno()
            # the replayer's table, multicast or ring: intended times (multicast; a ring frame
            # carries its own) and each line's intended end, to count a missing tail as missed
            if p.intended_table and run_id:
                name = p.intended_table.format(run_id=run_id, sender=ln.sender).encode()
                if len(name) >= int(lib.OMDP_FH_TABLE_NAME):
                    raise ValueError(f"{ctx.name}: intended table name {name!r} is too long")
                ffi.memmove(lines[i].intended, name, len(name))
        if p.input == "ring":
            name = p.ring or (feed_ring_name(run_id, ctx.replica) if run_id else "")
            if not name:
                raise ValueError(f"{ctx.name}: ring input needs a ring name (param 'ring') outside a run")
            spec = ChannelSpec(transport="vega-shm", queue_size=p.ring_queue_size, max_message=p.ring_max_message,
                               mutex=False, wait="spin", on_full="block")
            ring = VegaReceiver.create(spec, name)
        stats = _attach_stats(ctx.run_dir)
        routes = _routes(p.routing)
        params = ffi.new("omdp_fh_params_t *", {
            "input": _INPUT_CODES[p.input], "n_lines": len(mine), "lines": lines, "routes": routes,
            "n_routes": len(p.routing.roots), "n_engines": p.routing.engines, "default_engine": p.default_engine,
            "batch_packets": p.batch_packets, "ring": ring.c_handle if ring else ffi.NULL,
            "stats": stats.c_handle if stats else ffi.NULL, "stats_interval_ns": int(p.stats_interval_ms * 1e6),
            "coalesce_packets": p.coalesce_packets, "reshard": reshard.c_handle if reshard else ffi.NULL,
            "receive": _RECEIVE_CODES[p.receive], "rx_iface_addr": _iface_addr(p.interface),
            "rx_ring_bytes": p.rx_ring_bytes, "format": FEED_FORMATS[p.format], **_xdp_params(p),
            "obi_gap_timeout_ns": gap_timeout_ns(p.gap_timeout_us),
        })
    except BaseException:
        for s in sockets:
            s.close()
        if ring is not None:
            ring.close()
        if stats is not None:
            stats.close()
        if reshard is not None:
            reshard.close()
        raise
    return FeedHandlerOperator(lib.omdp_feed_handler_vtable(), params, sockets=sockets, ring=ring, stats=stats,
                               reshard=reshard, keep=[lines, routes])
