"""The elastic thread-level controller of the "elastic scaling" paper (docs/architecture.md
"Sources"), as a pure state machine: one ``step`` per control period, fed the period's
measured throughput, returns the active thread level for the next period.

Why a pure module: the control law is what decides how many cores an engine partition
burns, so it must be testable on scripted rate traces without threads or timing. The
partition (``decision_engines.elastic``) measures, calls ``step`` once per period and applies
the level; threads above the level are suspended, never destroyed.

The algorithm follows the paper's Figure 2:

- per level it keeps the ``peak`` rate (a new peak replaces it; a rate below it decays it by
  ``decay``; a rate significantly above it invalidates the peaks of every higher level, so
  they are probed again) and the ``last`` rate;
- a rate significantly below the level's peak, or a peak significantly below the next lower
  level's, means the system got busier (external load, or the workload changed): it steps
  one level down and "peaks": it keeps the lower level only if that level's rate beats the
  higher level's last rate, strictly, otherwise it steps back up;
- otherwise it probes one level up while the peak keeps rising (or is unexplored above),
  settling when the level below did no worse (stability from below) or the level above was
  worse (stability from above).

One addition the paper does not need: its operators were always saturated, while an engine
partition is fed at the market's rate, and most of the day its throughput is the input
rate, whatever the level. ``saturated`` says whether the workers had work queued for
(nearly) the whole period; ``capacity`` keeps, per level, the last rate measured while
saturated (what that level can do). An unsaturated period above level 1 whose rate is
significantly below the next lower level's capacity (or whose lower level was never
saturated) means the level is more than the load needs: it steps down and keeps the lower
level unless that level is saturated with a rate significantly below the higher level's;
then it steps back up, having just measured the lower level's capacity, so it does not probe
the same step again until that changes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Decision(str, Enum):
    """What one control period decided; counted per kind in the stats segment."""

    UP = "up"                      # probe one level higher (rate still rising)
    DOWN = "down"                  # rate fell below the level's peak: back off, then check
    DOWN_IDLE = "down_idle"        # workers not saturated: fewer threads should do
    RESTORE = "restore"            # the lower level was worse: back up
    SETTLE_LOWER = "settle_lower"  # the lower level was at least as good: stay there
    STABLE_BELOW = "stable_below"  # no significant gain from the level below
    STABLE_ABOVE = "stable_above"  # the level above was worse
    AT_MAX = "at_max"              # wants more threads than the pool has


@dataclass
class ElasticController:
    """The control state of one elastic operator.

    ``max_level`` is the pool size (1..); levels are 1-based as reported. ``tolerance`` is the
    relative difference that counts as significant (the paper's TOLERANCE), ``decay`` the
    fraction a peak loses per period in which it was not reached.
    """

    max_level: int
    tolerance: float = 0.05
    decay: float = 0.05
    level: int = 1
    peak: list[float | None] = field(default_factory=list)
    last: list[float | None] = field(default_factory=list)
    capacity: list[float | None] = field(default_factory=list)
    peaking: bool = False
    peaking_idle: bool = False

    def __post_init__(self) -> None:
        if self.max_level < 1:
            raise ValueError(f"max_level must be at least 1 (got {self.max_level})")
        if not 0 < self.tolerance < 1:
            raise ValueError(f"tolerance must be in (0, 1) (got {self.tolerance})")
        if not 0 <= self.decay < 1:
            raise ValueError(f"decay must be in [0, 1) (got {self.decay})")
        if not 1 <= self.level <= self.max_level:
            raise ValueError(f"level must be in 1..{self.max_level} (got {self.level})")
        self.peak = [None] * self.max_level
        self.last = [None] * self.max_level
        self.capacity = [None] * self.max_level

    def _less(self, a: float, b: float) -> bool:
        """a is significantly less than b (the paper's ``less``)."""
        if b <= 0:
            return False
        if a <= 0:
            return True
        return (b - a) / a >= self.tolerance

    def _set_peak(self, n: int, curr: float) -> None:
        """Record ``curr`` at index ``n``: new peak (invalidating higher levels when it is a
        significant jump), or decay of the old one."""
        p = self.peak[n]
        if p is None or curr > p:
            if p is None or self._less(p, curr):
                for i in range(n + 1, self.max_level):
                    self.peak[i] = None
            self.peak[n] = curr
        else:
            self.peak[n] = p - p * self.decay

    def step(self, rate: float, saturated: bool = True) -> Decision:
        """Feed one period's throughput (messages/s at the current level) and whether the
        workers were saturated; updates ``level`` and returns what was decided."""
        if not rate >= 0 or rate == float("inf"):
            raise ValueError(f"rate must be a finite non-negative number (got {rate})")
        n = self.level - 1
        self._set_peak(n, rate)
        self.last[n] = rate
        if saturated:
            self.capacity[n] = rate
        if self.peaking:
            return self._after_step_down(n, rate, saturated)
        if not saturated:
            below_cap = self.capacity[n - 1] if n else None
            if n and (below_cap is None or self._less(rate, below_cap)):
                return self._step_down(idle=True)
            return Decision.STABLE_BELOW
        peak_n = self.peak[n]
        below = self.peak[n - 1] if n else None
        if self._less(rate, peak_n) or (below is not None and self._less(peak_n, below)):
            if n == 0:
                return Decision.STABLE_BELOW  # never suspend the last thread
            return self._step_down(idle=False)
        if n == 0 or below is None or self._less(below, peak_n):
            if n + 1 == self.max_level:
                return Decision.AT_MAX
            above = self.peak[n + 1]
            if above is None or peak_n < above:
                self.level += 1
                return Decision.UP
            return Decision.STABLE_ABOVE
        return Decision.STABLE_BELOW

    def _step_down(self, idle: bool) -> Decision:
        self.level -= 1
        self.peaking = True
        self.peaking_idle = idle
        return Decision.DOWN_IDLE if idle else Decision.DOWN

    def _after_step_down(self, n: int, rate: float, saturated: bool) -> Decision:
        """The period after a step down: keep the lower level only if it did as well."""
        self.peaking = False
        higher = self.last[n + 1]
        if higher is None:
            return Decision.SETTLE_LOWER
        if self.peaking_idle:
            # input-bound: the lower level is as good if it kept up (not saturated), or if its
            # rate is within the tolerance of the higher level's; a lower rate it kept up
            # with is the input's doing
            worse = saturated and self._less(rate, higher)
        else:
            worse = rate < higher  # the paper's strict test, so the rate cannot creep down
        if worse:
            self.level += 1
            return Decision.RESTORE
        return Decision.SETTLE_LOWER
