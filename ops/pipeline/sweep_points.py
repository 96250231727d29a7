"""The points of a rate sweep and the sweep itself, as data: what ``ops.pipeline.sweep`` runs
and writes and ``ops.pipeline.sweep_targets`` judges. Its own module so that the targets need
nothing of the runner (which imports them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SweepPoint:
    """One run of the sweep (or a skipped one)."""

    config: str
    rate: str
    target_pps: float
    input: str = "ring"
    fused_partition: str | None = None
    """The partition holding both the feed handler and the engines, if the plan has one (the
    fused layouts): the one whose cost per packet the hot path's targets speak of."""
    copies: str | None = None
    """The multicast copies the feed handler joins ("A", "A,B")."""
    skipped: bool = False
    run: dict[str, Any] | None = None
    sustainable: bool = False
    error: str | None = None
    load: tuple[float, float] | None = None
    """The machine's 1-minute load average before and after the run (other work on a shared
    machine shows there)."""


@dataclass
class Sweep:
    """All points of a sweep and each configuration's sustainable rate."""

    sweep_id: str
    seconds: float
    capture_date: str
    points: list[SweepPoint] = field(default_factory=list)

    def sustainable_rate(self, config: str) -> str | None:
        """The highest sustainable rate of ``config``, or None."""
        ok = [p for p in self.points if p.config == config and p.sustainable]
        return max(ok, key=lambda p: p.target_pps).rate if ok else None
