"""The omdp clock from Python: the same int64 nanoseconds as the C stamps (clock.h)."""
from __future__ import annotations

from omdp.native import lib


def now_ns() -> int:
    """Current time in int64 nanoseconds since the epoch, read by the C clock."""
    return int(lib.omdp_now_ns())
