"""The speed targets a single benchmark can judge, as data, and how a benchmark reports them:
the bound, this run's figure, met or not (docs/benchmarks.md, "Issue targets"). The targets
judged on pipeline runs are ``ops.pipeline.sweep_targets`` (``omdp bench sweep``).

A benchmark prints ``Target.line(value)`` under its table and puts ``Target.verdict(value)``
in its JSON under ``targets``, so a reader sees at once which targets this machine meets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """A bound on one figure of one benchmark."""

    what: str
    bound: float
    at_least: bool      # True: the figure must be >= bound; False: <= bound
    unit: str           # of the figure as printed (after dividing by scale)
    scale: float = 1.0

    def met(self, value: float) -> bool:
        return value >= self.bound if self.at_least else value <= self.bound

    def verdict(self, value: float | None) -> dict[str, Any]:
        """The target and this run's figure as plain data (met: None when not measured)."""
        return {"target": self.what, "bound": self.bound, "at_least": self.at_least, "measured": value,
                "met": None if value is None else self.met(value)}

    def line(self, value: float | None, note: str = "") -> str:
        """``target: WHAT >= BOUND UNIT: met (measured X)``, ``not met`` or ``not measured``."""
        def shown(v: float) -> str:
            return f"{v / self.scale:,.2f}".rstrip("0").rstrip(".")
        head = f"target: {self.what} {'>=' if self.at_least else '<='} {shown(self.bound)} {self.unit}"
        if value is None:
            return f"{head}: not measured{f' ({note})' if note else ''}"
        return f"{head}: {'met' if self.met(value) else 'NOT MET'} (this run {shown(value)}{f'; {note}' if note else ''})"


DECODE = Target("decode per packet from C, as the feed handler", 30e6, True, "M messages/s per core", 1e6)
"""On a 30 s synthetic line (``omdp synth --seconds 30 --num-lines 1``); the median of the runs."""
OBI_DECODE = Target("OBI decode per block from C, as a feed handler", 100e6, True, "M messages/s per core", 1e6)
"""Issue 38: today's feed at 120 M messages/s on one server needs a decoder this fast per core."""
OBI_OVER_FAST = Target("OBI decode over FAST V2 decode, same messages, same run", 2.0, True, "x")
ENGINE = Target("engine at the pipeline's batch sizes (the slower of 56 and 28 messages)", 60.0, False,
                "ns per message")
"""The fused pipeline's engine calls carry 40-43 messages (the run summary's "messages per engine call")."""
TSC_STAMP = Target("a hop stamp on the TSC clock", 10.0, False, "ns")
FEEDS = Target("feeds job, tick table written", 8e6, True, "M messages per task CPU-second", 1e6)
FEEDS_SPEEDUP = Target("feeds job decode stage, local[2] over local[1]", 1.7, True, "x")
REPLAY = Target("replay job (decode, route, engines)", 4e6, True, "M messages per task CPU-second", 1e6)
REPLAY_WALL = Target("replay job wall time over the capture's length", 1.0, False, "x")
"""On local[2]: a day replays in less wall time than it lasted."""
