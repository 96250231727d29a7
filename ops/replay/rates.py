"""How fast to replay: ``--rate Nx``, ``--speed K`` or ``--pps N``.

docs/architecture.md "Rates": Nx is N x 24,000 packets/s summed over the lines being replayed (the
paper's "1x the February 2008 OPRA rate"); the recorded inter-packet timing is scaled to
reach it. ``--speed K`` plays K times the recorded speed. ``--pps N`` sends N packets/s
evenly spaced in recorded order (no bursts), for uniform load.
"""
from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from omdp.errors import InputError

PAPER_1X_PPS = 24_000
"""Packets/s of "1x" over all lines (docs/architecture.md "Rates")."""

MAX_PPS = 1e9
"""Fastest rate the pacing can represent: one packet per nanosecond, the resolution of the
senders' clock and intended times (docs/replay.md "Rates")."""
MIN_PPS = 1e-3
"""Slowest rate: one packet per 1,000 s, so a lap's intended times stay far inside int64
nanoseconds (docs/replay.md "Rates")."""
MAX_SPEED = MAX_PPS
MIN_SPEED = 1e-9
"""Bounds of ``--speed K`` before the capture's recorded rate is known (then the packets/s
it asks for must lie in [MIN_PPS, MAX_PPS] too)."""

RateKind = Literal["rate", "speed", "pps"]

_RATE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*[xX]\s*$")


class RateError(InputError):
    """A rate that is not a rate: the message says what was given and what is accepted."""


class RateSpec(BaseModel):
    """One way of saying how fast: ``kind`` and its positive ``value``."""

    model_config = ConfigDict(frozen=True)

    kind: RateKind
    value: float

    @property
    def recorded_timing(self) -> bool:
        """True when the recorded inter-packet gaps shape the schedule (rate and speed)."""
        return self.kind != "pps"

    def describe(self) -> str:
        """The rate as a user would type it: '10x', 'speed 2', '240000 pps'."""
        if self.kind == "rate":
            return f"{self.value:g}x"
        if self.kind == "speed":
            return f"speed {self.value:g}"
        return f"{self.value:g} pps"

    def target_pps(self, recorded_pps: float) -> float:
        """Packets/s this rate asks for, given the capture's recorded packets/s."""
        if self.kind == "rate":
            return self.value * PAPER_1X_PPS
        if self.kind == "speed":
            return self.value * recorded_pps
        return self.value

    @classmethod
    def parse(cls, *, rate: str | None = None, speed: float | str | None = None, pps: float | str | None = None) -> "RateSpec":
        """Exactly one of ``rate`` ('10x', '0.5x'), ``speed`` (K > 0) or ``pps`` (N > 0)."""
        given = [name for name, v in (("--rate", rate), ("--speed", speed), ("--pps", pps)) if v is not None]
        if len(given) != 1:
            raise RateError(f"give exactly one of --rate Nx, --speed K, --pps N (got {', '.join(given) or 'none'})")
        if rate is not None:
            m = _RATE_RE.match(str(rate))
            if not m:
                raise RateError(f"--rate {rate!r} is not a rate: write N x, e.g. 10x or 0.5x (N x 24,000 packets/s)")
            shown = str(rate).strip()
            v = _positive("--rate", m.group(1), shown=shown)
            _bounded("--rate", shown, v, MIN_PPS / PAPER_1X_PPS, MAX_PPS / PAPER_1X_PPS, "x", "N x 24,000 packets/s")
            return cls(kind="rate", value=v)
        if speed is not None:
            v = _positive("--speed", speed)
            _bounded("--speed", str(speed), v, MIN_SPEED, MAX_SPEED, "", "times the recorded speed")
            return cls(kind="speed", value=v)
        v = _positive("--pps", pps)
        _bounded("--pps", str(pps), v, MIN_PPS, MAX_PPS, "", "packets/s")
        return cls(kind="pps", value=v)

    def check_target(self, recorded_pps: float) -> float:
        """The packets/s this rate asks for, checked against what the pacing can represent
        ([MIN_PPS, MAX_PPS]); raises RateError naming the option and the bound."""
        pps = self.target_pps(recorded_pps)
        option = {"rate": "--rate", "speed": "--speed", "pps": "--pps"}[self.kind]
        if not math.isfinite(pps) or pps > MAX_PPS:
            raise RateError(f"{option} {self.describe()} asks for {pps:g} packets/s on this capture: at most {MAX_PPS:g} "
                            "packets/s (one packet per nanosecond, the pacing clock's resolution)")
        if pps < MIN_PPS:
            raise RateError(f"{option} {self.describe()} asks for {pps:g} packets/s on this capture: at least "
                            f"{MIN_PPS:g} packets/s (one packet per {1 / MIN_PPS:g} s)")
        return pps


def _bounded(option: str, shown: str, v: float, lo: float, hi: float, suffix: str, unit: str) -> None:
    if v > hi:
        raise RateError(f"{option} {shown!r} is too fast: at most {hi:.6g}{suffix} ({unit}; the pacing runs in whole "
                        f"nanoseconds, at most {MAX_PPS:g} packets/s)")
    if v < lo:
        raise RateError(f"{option} {shown!r} is too slow: at least {lo:.6g}{suffix} ({unit}; at least {MIN_PPS:g} "
                        "packets/s)")


def _positive(option: str, text: object, shown: str | None = None) -> float:
    shown = shown if shown is not None else str(text)
    try:
        v = float(str(text).strip())
    except ValueError:
        raise RateError(f"{option} {shown!r} is not a number") from None
    if not math.isfinite(v) or v <= 0:
        raise RateError(f"{option} {shown!r} must be a finite number above 0")
    return v
