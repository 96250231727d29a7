"""The omdp clock from Python: the same int64 nanoseconds as the C stamps (clock.h)."""
from __future__ import annotations

import math

from omdp.native import lib


def now_ns() -> int:
    """Current time in int64 nanoseconds since the epoch, read by the C clock."""
    return int(lib.omdp_now_ns())


class TscClockError(RuntimeError):
    """The TSC clock was refused (not invariant) or could not be calibrated."""


class TscClock:
    """The calibrated TSC clock (tsc_clock.h): rdtsc scaled to CLOCK_REALTIME ns, only
    where /proc/cpuinfo says the TSC is invariant (constant_tsc and nonstop_tsc)."""

    def __init__(self, interval_ns: int = 50_000_000, cpuinfo: str | None = None) -> None:
        from omdp.native import ffi

        self._ffi = ffi
        self.c = ffi.new("omdp_tsc_clock_t *")
        err = ffi.new("char[256]")
        path = ffi.NULL if cpuinfo is None else cpuinfo.encode()
        if lib.omdp_tsc_calibrate(self.c, path, int(interval_ns), err, 256) != 0:
            raise TscClockError(ffi.string(err).decode())

    def now_ns(self) -> int:
        """CLOCK_REALTIME nanoseconds read from the TSC."""
        return int(lib.omdp_tsc_clock_now_ns(self.c))

    def error_ns(self, at_ns: int) -> int:
        """Stated error against CLOCK_REALTIME at ``at_ns``."""
        return int(lib.omdp_tsc_error_ns(self.c, int(at_ns)))

    @property
    def ticks_per_ns(self) -> float:
        return float(self.c.ticks_per_ns)

    def bench(self, calls: int = 2_000_000) -> tuple[float, float]:
        """(ns per TSC clock read, ns per clock_gettime(CLOCK_REALTIME)), mean over ``calls``."""
        a, b = self._ffi.new("double *"), self._ffi.new("double *")
        lib.omdp_tsc_bench(self.c, calls, a, b)
        return float(a[0]), float(b[0])


STAMP_CLOCKS = ("auto", "tsc", "realtime")
"""The stamp clock choices (``[run] clock``, ``omdp run --clock``): ``tsc`` is refused where
the TSC is not invariant, ``auto`` takes it where it is and CLOCK_REALTIME elsewhere."""

STAMP_CALIBRATION_NS = 50_000_000
"""How long the stamp clock's TSC calibration waits between its two pairs."""


def tsc_invariant(cpuinfo: str | None = None) -> tuple[bool, str]:
    """(whether the TSC is invariant here, why not): checked before a run is created so that
    ``--clock tsc`` is refused with a message rather than failing in a partition."""
    from omdp.native import ffi

    why = ffi.new("char[256]")
    ok = lib.omdp_tsc_invariant(ffi.NULL if cpuinfo is None else cpuinfo.encode(), why, 256) == 1
    return ok, "" if ok else ffi.string(why).decode()


def use_stamp_clock(choice: str, interval_ns: int = STAMP_CALIBRATION_NS, cpuinfo: str | None = None) -> str:
    """Choose this process's stamp clock (stamp_clock.h) before its partition loop runs;
    returns the clock taken (``tsc`` or ``realtime``). ``tsc`` where the TSC is not invariant
    raises TscClockError with the reason; ``auto`` then falls back to ``realtime``."""
    from omdp.native import ffi

    if choice not in STAMP_CLOCKS:
        raise ValueError(f"clock {choice!r}: one of {', '.join(STAMP_CLOCKS)}")
    err = ffi.new("char[256]")
    if choice == "realtime":
        lib.omdp_stamp_clock_use(lib.OMDP_STAMP_REALTIME, 0, ffi.NULL, err, 256)
        return "realtime"
    path = ffi.NULL if cpuinfo is None else cpuinfo.encode()
    if lib.omdp_stamp_clock_use(lib.OMDP_STAMP_TSC, int(interval_ns), path, err, 256) == 0:
        return "tsc"
    if choice == "tsc":
        raise TscClockError(f"--clock tsc: {ffi.string(err).decode()}")
    lib.omdp_stamp_clock_use(lib.OMDP_STAMP_REALTIME, 0, ffi.NULL, err, 256)
    return "realtime"


def stamp_now_ns() -> int:
    """The stamp clock now (what the C hops stamp with)."""
    return int(lib.omdp_stamp_clock_now_ns())


def check_stamp_clock() -> int:
    """Compare the stamp clock with CLOCK_REALTIME now (kept in its info); the drift in ns."""
    return int(lib.omdp_stamp_clock_check())


def stamp_clock_info() -> dict[str, object]:
    """The stamp clock, its calibration and the drift checks so far, as run reports carry it."""
    from omdp.native import ffi

    i = ffi.new("omdp_stamp_clock_info_t *")
    lib.omdp_stamp_clock_info(i)
    tsc = i.mode == lib.OMDP_STAMP_TSC
    out: dict[str, object] = {"clock": "tsc" if tsc else "realtime"}
    if tsc:
        out.update(ticks_per_ns=float(i.ticks_per_ns), pair_error_ns=int(i.pair_error_ns),
                   rate_error_ppm=float(i.rate_error) * 1e6, drift_checks=int(i.checks),
                   last_drift_ns=int(i.last_drift_ns), max_abs_drift_ns=int(i.max_abs_drift_ns),
                   stated_error_ns=int(i.stated_error_ns), drift_over_error=int(i.over_error),
                   max_check_gap_ns=int(i.max_check_gap_ns), checked_error_ns=int(i.checked_error_ns),
                   # the error bound from the checks (stamp_clock.h): what they saw, plus what the
                   # rate's uncertainty allows over the longest stretch without a check
                   checked_bound_ns=int(i.checked_error_ns) + math.ceil(float(i.rate_error) * int(i.max_check_gap_ns)))
    return out


def stamp_clock_bench(calls: int = 2_000_000) -> float:
    """Mean ns per stamp (omdp_stamp_ns) over ``calls``, with the clock chosen now."""
    return float(lib.omdp_stamp_clock_bench(int(calls)))


def tsc_read_bench(calls: int = 2_000_000) -> float:
    """Mean ns per bare TSC read over ``calls`` in the same loop: the least a TSC stamp can cost."""
    return float(lib.omdp_tsc_read_bench(int(calls)))
