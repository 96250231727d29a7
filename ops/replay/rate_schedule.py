"""``--rate-schedule 2x:20s,10x:20s,2x:20s``: a run whose offered rate steps through stages.

Why: an elastic engine partition is judged by how its thread level follows the load, so a
run must be able to change the load at known times. Each stage is a rate in the ``Nx`` unit
of docs/architecture.md "Rates" (N x 24,000 packets/s) and a duration in seconds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ops.replay.rates import PAPER_1X_PPS, RateError

_STAGE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*[xX]\s*:\s*([0-9]*\.?[0-9]+)\s*s\s*$")
MAX_STAGE_X = 1e9 / PAPER_1X_PPS


@dataclass(frozen=True)
class Stage:
    """One stage: ``rate_x`` (N in Nx) for ``seconds``."""

    rate_x: float
    seconds: float


@dataclass(frozen=True)
class RateSchedule:
    """Stages in order; ``rate_x_at(t)`` is the rate t seconds after the start (the last
    stage's after the end)."""

    stages: tuple[Stage, ...]

    @property
    def seconds(self) -> float:
        """Length of the whole schedule."""
        return sum(s.seconds for s in self.stages)

    def rate_x_at(self, t: float) -> float:
        """The stage rate in force at ``t`` seconds."""
        for s in self.stages:
            if t < s.seconds:
                return s.rate_x
            t -= s.seconds
        return self.stages[-1].rate_x

    def boundaries(self) -> list[float]:
        """Start times of the stages after the first (the rate steps)."""
        out, t = [], 0.0
        for s in self.stages[:-1]:
            t += s.seconds
            out.append(t)
        return out

    def describe(self) -> str:
        """As the user would type it."""
        return ",".join(f"{s.rate_x:g}x:{s.seconds:g}s" for s in self.stages)


def parse_rate_schedule(text: str, option: str = "--rate-schedule") -> RateSchedule:
    """Parse 'Nx:Ss,...'; a RateError naming ``option`` and the bad stage otherwise."""
    stages = []
    for part in text.split(","):
        m = _STAGE_RE.match(part)
        if not m:
            raise RateError(f"{option} stage {part.strip()!r} is not RATE:SECONDS, e.g. 10x:20s "
                            f"(the whole schedule like 2x:20s,10x:20s,2x:20s)")
        rate, secs = float(m.group(1)), float(m.group(2))
        if not 0 < rate <= MAX_STAGE_X:
            raise RateError(f"{option} stage {part.strip()!r}: the rate must be above 0x and at most {MAX_STAGE_X:g}x")
        if secs <= 0:
            raise RateError(f"{option} stage {part.strip()!r}: the duration must be positive")
        stages.append(Stage(rate, secs))
    return RateSchedule(tuple(stages))
