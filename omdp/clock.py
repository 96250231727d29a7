"""The omdp clock from Python: the same int64 nanoseconds as the C stamps (clock.h)."""
from __future__ import annotations

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
