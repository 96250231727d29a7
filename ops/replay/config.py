"""The replay's configuration, validated: what to replay, how fast, where to, and how.

The text forms of the command line (``--lines 1-4,7``, ``--copies A,B``, ``--drop A:0.001``,
``--target ring:NAME``) are parsed here, so the CLI, the HTTP API and the runtime share one
set of rules and one set of error messages.
"""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from feedhandlers.xdp import parse_xdp_queue
from omdp.errors import InputError
from ops.replay.rates import RateSpec

Copy = Literal["A", "B"]
COPY_INDEX: dict[str, int] = {"A": 0, "B": 1}
MAX_LINE = 99
"""Highest OPRA line number the replay handles (OMDP_REPLAY_MAX_LINE)."""


class ReplayConfigError(InputError):
    """An option that does not parse or does not fit the others."""


def parse_lines(text: str) -> tuple[int, ...]:
    """'1-24', '3', '1,3,5-7' -> sorted distinct line numbers."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise ReplayConfigError(f"--lines {text!r}: {part!r} is not a line number or a range like 1-24")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if lo < 1 or hi > MAX_LINE or lo > hi:
            raise ReplayConfigError(f"--lines {text!r}: {part!r} must lie within 1-{MAX_LINE}, low end first")
        out.update(range(lo, hi + 1))
    return tuple(sorted(out))


def line_ranges(nums: list[int]) -> str:
    """[1, 2, 3, 5] -> '1-3, 5': the inverse of parse_lines, for messages."""
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(f"{nums[i]}-{nums[j]}" if j > i else str(nums[i]))
        i = j + 1
    return ", ".join(parts) or "no lines"


def parse_copies(text: str) -> tuple[Copy, ...]:
    """'A', 'B', 'A,B' -> the copies in A, B order."""
    names = {p.strip().upper() for p in str(text).split(",") if p.strip()}
    if not names or not names <= {"A", "B"}:
        raise ReplayConfigError(f"--copies {text!r}: give A, B or A,B")
    return tuple(c for c in ("A", "B") if c in names)  # type: ignore[misc]


def parse_drops(text: str) -> dict[str, float]:
    """'A:0.001,B:0.0005' -> {'A': 0.001, 'B': 0.0005}: the probability of dropping each
    packet on that copy."""
    out: dict[str, float] = {}
    for part in str(text).split(","):
        if not part.strip():
            continue
        copy, sep, prob = part.partition(":")
        copy = copy.strip().upper()
        if not sep or copy not in COPY_INDEX:
            raise ReplayConfigError(f"--drop {text!r}: write COPY:PROBABILITY, e.g. A:0.001,B:0.0005")
        try:
            p = float(prob)
        except ValueError:
            raise ReplayConfigError(f"--drop {text!r}: {prob!r} is not a probability") from None
        if not 0.0 <= p < 1.0:
            raise ReplayConfigError(f"--drop {text!r}: the probability of {copy} must be in [0, 1)")
        out[copy] = p
    return out


class ReplayConfig(BaseModel):
    """Everything a replay needs. Text forms are accepted for lines, copies and drops."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    capture_dir: Path
    rate: RateSpec
    lines: tuple[int, ...] | None = Field(None, description="lines to replay; None: every line of the manifest")
    copies: tuple[Copy, ...] | None = Field(None, description="None: A and B to multicast, A into a ring")
    loop: bool = Field(False, description="replay the capture again and again, a sequence reset per line per lap")
    seconds: float | None = Field(None, gt=0, description="stop after this many seconds")
    target: str = Field("multicast", description="'multicast' or 'ring:NAME'")
    interface: str = Field("127.0.0.1", description="multicast interface address")
    ttl: int = Field(0, ge=0, le=255, description="multicast TTL; 0 keeps packets on this host")
    multicast_sender: Literal["udp", "packet", "packet_ring", "xdp"] = Field(
        "udp", description="multicast through a UDP socket (sendmmsg), or 'packet': headers built by the sender and "
                           "frames handed to the interface past the qdisc (a packet socket, needs CAP_NET_RAW), or "
                           "'packet_ring': the same socket with the frames built in its mapped TX ring (one send() "
                           "per batch, no per-datagram copy), or 'xdp': an AF_XDP socket's TX ring on the queue "
                           "named by 'xdp' (docs/xdp.md; root, TTL >= 1)")
    xdp: str = Field("", description="multicast_sender 'xdp': the interface and its transmit queue, IFACE:QUEUE")
    netns: str = Field("", description=(
        "run the sender processes in this network namespace (`ip netns` name; root): a replay from one side of a "
        "veth pair to the other (docs/xdp.md); '': this process's namespace"))
    senders: int = Field(1, ge=1, le=MAX_LINE, description="sender processes; lines are split among them")
    cpus: tuple[int, ...] = Field((), description="CPU of sender i is cpus[i % len(cpus)]; empty: not pinned")
    drops: dict[Copy, float] = Field(default_factory=dict, description="per copy, probability of dropping a packet")
    seed: int = Field(0, ge=0, lt=1 << 64, description="seed of the drop decisions")
    spin_us: float = Field(100.0, ge=0, le=100_000, description="spin rather than sleep this close to a deadline")
    realtime: bool = Field(False, description="senders lock their memory and run SCHED_FIFO (where allowed)")
    intended_capacity: int = Field(1 << 17, ge=16, le=1 << 24, description="intended table entries per line, a power of two")
    log_capacity: int = Field(1 << 20, ge=1024, le=1 << 26, description="sent-log entries per sender, a power of two")
    write_intended: bool = Field(True, description="write intended.parquet in the run directory")
    data_dir: Path | None = Field(None, description="omdp data directory; None: the one holding capture_dir")
    run_dir: Path | None = Field(None, description="run directory; None: <data>/runs/<date>/<run_id>")

    @field_validator("lines", mode="before")
    @classmethod
    def _lines(cls, v: object) -> object:
        return parse_lines(v) if isinstance(v, str) else v

    @field_validator("copies", mode="before")
    @classmethod
    def _copies(cls, v: object) -> object:
        return parse_copies(v) if isinstance(v, str) else v

    @field_validator("drops", mode="before")
    @classmethod
    def _drops(cls, v: object) -> object:
        return parse_drops(v) if isinstance(v, str) else v

    @field_validator("drops")
    @classmethod
    def _drop_range(cls, v: dict[str, float]) -> dict[str, float]:
        for copy, p in v.items():
            if not 0.0 <= p < 1.0:
                raise ValueError(f"drop probability of {copy} must be in [0, 1), got {p}")
        return v

    @field_validator("target")
    @classmethod
    def _target(cls, v: str) -> str:
        if v == "multicast":
            return v
        if v.startswith("ring:") and re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", v[5:]):
            return v
        raise ValueError(f"target {v!r}: give 'multicast' or 'ring:NAME' (NAME of letters, digits, _ . -)")

    @field_validator("netns")
    @classmethod
    def _netns(cls, v: str) -> str:
        if v and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", v):
            raise ValueError(f"netns {v!r}: a namespace name is letters, digits, _ . - (at most 64)")
        return v

    @field_validator("interface")
    @classmethod
    def _interface(cls, v: str) -> str:
        try:
            ipaddress.IPv4Address(v)
        except ValueError:
            raise ValueError(f"interface {v!r} is not an IPv4 address") from None
        return v

    @field_validator("intended_capacity", "log_capacity")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"{v} is not a power of two")
        return v

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(c < 0 for c in v):
            raise ValueError("CPU numbers are >= 0")
        return v

    @model_validator(mode="after")
    def _drops_on_sent_copies(self) -> "ReplayConfig":
        missing = [c for c in self.drops if c not in self.copies_sent]
        if missing:
            raise ValueError(f"--drop names copy {', '.join(missing)} which is not sent (--copies {','.join(self.copies_sent)})")
        return self

    @model_validator(mode="after")
    def _one_sender_per_ring(self) -> "ReplayConfig":
        if self.ring_name and self.senders != 1:
            raise ValueError("a Vega ring has one sender: use --senders 1 with a ring target")
        return self

    @model_validator(mode="after")
    def _xdp_queue(self) -> "ReplayConfig":
        if self.multicast_sender == "xdp":
            parse_xdp_queue(self.xdp)
            if self.senders != 1:
                raise ValueError("an AF_XDP queue takes one sender: use --senders 1 with --xdp")
        return self

    @property
    def ring_name(self) -> str | None:
        """NAME of a ``ring:NAME`` target, None for multicast."""
        return self.target[5:] if self.target.startswith("ring:") else None

    @property
    def copies_sent(self) -> tuple[Copy, ...]:
        """The copies this replay sends (the default depends on the target)."""
        if self.copies is not None:
            return self.copies
        return ("A",) if self.ring_name else ("A", "B")

    @property
    def copies_mask(self) -> int:
        """Bit 0: A, bit 1: B."""
        return sum(1 << COPY_INDEX[c] for c in self.copies_sent)

    def drop_thresholds(self) -> tuple[int, int]:
        """Per copy, the hash threshold below which a packet is dropped: floor(p * 2^64)."""
        out = [0, 0]
        for copy, p in self.drops.items():
            out[COPY_INDEX[copy]] = min(int(p * 2.0**64), (1 << 64) - 1)
        return out[0], out[1]

    def data_root(self) -> Path:
        """The omdp data directory: given, or the one whose captures/<date> is capture_dir."""
        if self.data_dir is not None:
            return self.data_dir
        cap = self.capture_dir.resolve()
        if cap.parent.name == "captures":
            return cap.parent.parent
        return Path("omdp-data")
