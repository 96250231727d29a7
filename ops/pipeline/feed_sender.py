"""The feed sender: the replay service as a source operator of a partition (``feed_sender``).

The partition that hosts it is the replayer of the topology. Its operator starts a
``ReplayService`` for its lines (those whose ``sender`` is this replica) on the first poll,
once every partition runs - the feed handlers have made their rings and joined their
groups by then - and reports done when the replay has ended (``seconds`` passed, the
capture ran out, or a stop). The pacing itself is the replay's C loop in its sender
process, pinned to ``cpus``; this operator only starts it, waits and collects its status.

Target ``ring``: each handler's lines go into that handler's ring (so a sender's lines must
all belong to one handler). Target ``multicast``: the A and B groups of the manifest.

Written to the run directory: ``replay-fs<k>/intended.parquet`` (the replay's own file,
merged into the run's ``intended.parquet`` by the pipeline runner) and
``replay-fs<k>/status.json`` (the replay's final status: rates, counts, pacing).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from feedhandlers.feed_handler import FeedLine, feed_ring_name
from omdp.atomic_files import write_text_atomic
from omdp.operator import OperatorContext, PollResult, SourceOperator
from ops.replay.config import ReplayConfig
from ops.replay.rate_schedule import RateSchedule, parse_rate_schedule
from ops.replay.rates import RateSpec
from ops.replay.service import ReplayService, ReplayStateError

WAIT_S = 0.05
"""How long one poll waits for the replay to end: the partition has nothing else to do."""


class FeedSenderParams(BaseModel):
    """``feed_sender`` parameters; ``capture_dir`` and ``lines`` come from the capture."""

    model_config = ConfigDict(extra="forbid")

    capture_dir: str = Field("", description="captures/<date> directory (filled by the pipeline assembly)")
    lines: list[FeedLine] = Field(default_factory=list, description="the feed's lines with their sender")
    rate: str = Field("1x", description="Nx (N x 24,000 packets/s over all lines)")
    rate_shares: list[float] = Field(default_factory=list, description=(
        "sender replica i sends share i of the rate (its lines' share of the packets; the pipeline assembly "
        "fills it when there are several senders); empty: each sender sends the whole rate"))
    seconds: float | None = Field(None, gt=0, description="replay this long; None: until stopped")
    loop: bool = Field(True, description="replay the capture again and again (sequence resets between laps)")
    target: Literal["ring", "multicast"] = Field("ring", description="into the handlers' rings, or multicast")
    copies: Literal["A", "B", "A,B"] | None = Field(None, description="None: A into a ring, A and B to multicast")
    drops: str = Field("", description="per copy drop probability, e.g. A:0.001 (injected losses)")
    seed: int = Field(0, ge=0, description="seed of the drop decisions")
    interface: str = Field("127.0.0.1", description="multicast interface address")
    ttl: int = Field(0, ge=0, le=255, description="multicast TTL; 0 keeps packets on this host ('xdp' needs >= 1)")
    multicast_sender: Literal["udp", "packet", "packet_ring", "xdp"] = Field(
        "udp", description="multicast through a UDP socket, 'packet' (a packet socket past the qdisc, CAP_NET_RAW), "
                           "'packet_ring' (the packet socket's mapped TX ring) or 'xdp' (an AF_XDP socket's TX ring "
                           "on the queue named by 'xdp', docs/xdp.md; root, ttl >= 1)")
    xdp: str = Field("", description="multicast_sender 'xdp': the interface and its transmit queue, IFACE:QUEUE")
    netns: str = Field("", description="the replay's sender process runs in this network namespace ('': this one)")
    cpus: list[int] = Field(default_factory=list, description="CPUs of the replay's sender process")
    spin_us: float | None = Field(None, ge=0, description=(
        "spin rather than sleep this close to a deadline; None: 20 us for a real-time sender (a SCHED_FIFO wake-up "
        "is prompt, and each microsecond spun is one the collectors, pricing and the sent log's writer on its CPU "
        "lose), 100 us for an ordinary one"))
    realtime: bool = Field(True, description=(
        "the sender locks its memory and runs SCHED_FIFO (where allowed; a warning where not): it stands in for the "
        "exchange, which sends on time whatever this machine does. False: an ordinary task, whose lag behind its "
        "schedule on a shared CPU the latency from intended charges to the pipeline"))
    write_intended: bool = Field(True, description="write intended.parquet")
    connect_timeout_s: float = Field(30.0, gt=0, description="wait this long for a handler's ring")
    rate_schedule: str = Field("", description="Nx:seconds,... : the rate steps through these stages ('': --rate)")


REALTIME_SPIN_US = 20.0
"""A real-time sender's default spin window (``spin_us``)."""
ORDINARY_SPIN_US = 100.0
"""An ordinary sender's default spin window: its wake-ups wait behind other tasks."""


def sender_spin_us(params: FeedSenderParams) -> float:
    """The spin window the sender uses: the parameter, or the default for its scheduling."""
    if params.spin_us is not None:
        return params.spin_us
    return REALTIME_SPIN_US if params.realtime else ORDINARY_SPIN_US


def replay_run_id(run_id: str, replica: int) -> str:
    """The replay service's run id of feed sender ``replica`` (names its shared memory)."""
    return f"{run_id}-fs{replica}"


def replay_dir(run_dir: Path, replica: int) -> Path:
    """Where feed sender ``replica`` writes its status and intended times."""
    return Path(run_dir) / f"replay-fs{replica}"


class FeedSender(SourceOperator):
    """Runs one ReplayService over this replica's lines for the length of the run."""

    def __init__(self, params: FeedSenderParams, ctx: OperatorContext) -> None:
        super().__init__(params, ctx)
        self.p = params
        mine = [ln for ln in params.lines if ln.sender == ctx.replica]
        if not mine:
            raise ValueError(f"{ctx.name}: no line is assigned to feed sender {ctx.replica} "
                             f"(lines: {len(params.lines)}; the pipeline assembly fills them from the capture)")
        if not params.capture_dir:
            raise ValueError(f"{ctx.name}: capture_dir is empty (the pipeline assembly fills it)")
        self.run_id = Path(ctx.run_dir).name if ctx.run_dir is not None else f"local{ctx.replica}"
        self.out_dir = replay_dir(ctx.run_dir, ctx.replica) if ctx.run_dir is not None else None
        target = "multicast"
        if params.target == "ring":
            handlers = sorted({ln.handler for ln in mine})
            if len(handlers) != 1:
                raise ValueError(f"{ctx.name}: a ring target serves one feed handler, but lines "
                                 f"{[ln.line for ln in mine]} belong to handlers {handlers}")
            target = f"ring:{feed_ring_name(self.run_id, handlers[0])}"
        self.share = params.rate_shares[ctx.replica] if ctx.replica < len(params.rate_shares) else 1.0
        self.config = ReplayConfig(
            capture_dir=Path(params.capture_dir), rate=self._my_part(RateSpec.parse(rate=params.rate)),
            lines=tuple(sorted(ln.line for ln in mine)), copies=params.copies, loop=params.loop,
            seconds=params.seconds, target=target, interface=params.interface, ttl=params.ttl,
            multicast_sender=params.multicast_sender, xdp=params.xdp, netns=params.netns,
            cpus=tuple(params.cpus),
            drops=params.drops, seed=params.seed, spin_us=sender_spin_us(params), realtime=params.realtime,
            write_intended=params.write_intended,
        )
        self.schedule: RateSchedule | None = (parse_rate_schedule(params.rate_schedule, "rate_schedule")
                                              if params.rate_schedule else None)
        if self.schedule is not None:
            first = RateSpec.parse(rate=f"{self.schedule.stages[0].rate_x:g}x")
            self.config = self.config.model_copy(update={"rate": self._my_part(first)})
        self.stage_rate = self.schedule.stages[0].rate_x if self.schedule is not None else 0.0
        self.started_at = 0.0
        self.service = ReplayService(self.config)
        self.started = False
        self.finished = False
        self.polls = 0

    def _my_part(self, rate: RateSpec) -> RateSpec:
        """This sender's part of the pipeline's rate: ``Nx`` and packets/s times its share;
        a speed is every line's already."""
        if rate.kind == "speed" or self.share == 1.0:
            return rate
        return RateSpec(kind=rate.kind, value=rate.value * self.share)

    def poll(self) -> PollResult:
        """Start the replay on the first call; then wait for its end (at most WAIT_S)."""
        self.polls += 1
        if self.finished:
            return PollResult.DONE
        if not self.started:
            self.started = True
            self.service.start(run_id=replay_run_id(self.run_id, self.ctx.replica), run_dir=self.out_dir)
            self.started_at = time.monotonic()
            return PollResult.PRODUCED
        self._follow_schedule()
        if not self.service.wait(WAIT_S):
            return PollResult.IDLE
        self._finish()
        return PollResult.DONE

    def _follow_schedule(self) -> None:
        """With a rate schedule: switch the replay to the stage in force (within one poll, WAIT_S)."""
        if self.schedule is None:
            return
        x = self.schedule.rate_x_at(time.monotonic() - self.started_at)
        if x != self.stage_rate:
            self.stage_rate = x
            try:
                self.service.set_rate(self._my_part(RateSpec.parse(rate=f"{x:g}x")))
            except ReplayStateError:
                pass  # the replay is ending; the run stops with it

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        status = self.service.stop() if self.started else self.service.status()
        if self.out_dir is not None and self.started:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.out_dir / "status.json", status.model_dump_json(indent=1))
        if status.state == "failed":
            raise RuntimeError(f"{self.ctx.name}: the replay failed: {status.error}")

    def end_of_stream(self) -> None:
        """The run stops: stop the replay (if still sending) and keep its status."""
        self._finish()

    def counters(self) -> dict[str, int]:
        """Packets and messages the replay handed out, and its laps."""
        st = self.service.status()
        return {"packets_sent": st.packets_sent, "messages_sent": st.messages_sent, "laps": st.laps,
                "polls": self.polls}

    def close(self) -> None:
        """Release the replay's processes and shared memory."""
        self.service.close()


def read_replay_status(run_dir: Path, replica: int) -> dict | None:
    """Feed sender ``replica``'s final status, as written to the run directory (None if absent)."""
    path = replay_dir(run_dir, replica) / "status.json"
    return json.loads(path.read_text()) if path.is_file() else None
