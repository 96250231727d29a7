"""Dates and times of the synthetic trading day: the session, equity option expirations, and
the conversions between capture-relative nanoseconds, epoch nanoseconds and OPRA's
HHMMSSmmm time field (Eastern time).

Equity options of 2008 expired on the Saturday after the third Friday of their month; a
class listed the two nearest months, two more months of its quarterly cycle, and LEAPS in
January of the next two years (feb2008-market.md "Expirations").
"""
from __future__ import annotations

import datetime as dt
from functools import lru_cache
from zoneinfo import ZoneInfo

import numpy as np

EASTERN = ZoneInfo("America/New_York")
SESSION_OPEN = dt.time(9, 30)
SESSION_CLOSE = dt.time(16, 0)
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000

CYCLES: dict[int, tuple[int, ...]] = {
    1: (1, 4, 7, 10),   # January / April / July / October
    2: (2, 5, 8, 11),   # February / May / August / November
    3: (3, 6, 9, 12),   # March / June / September / December
}
"""The three quarterly expiration cycles, by cycle number."""


@lru_cache(maxsize=None)
def expiration_saturday(year: int, month: int) -> dt.date:
    """The expiration date of a month: the Saturday after its third Friday."""
    first = dt.date(year, month, 1)
    first_friday = first + dt.timedelta(days=(4 - first.weekday()) % 7)
    return first_friday + dt.timedelta(days=15)


def _add_months(year: int, month: int, k: int) -> tuple[int, int]:
    m = month - 1 + k
    return year + m // 12, m % 12 + 1


def _upcoming_months(trade_date: dt.date, count: int) -> list[tuple[int, int]]:
    """The next ``count`` months whose expiration is on or after ``trade_date``."""
    y, m = trade_date.year, trade_date.month
    if expiration_saturday(y, m) < trade_date:
        y, m = _add_months(y, m, 1)
    return [_add_months(y, m, k) for k in range(count)]


@lru_cache(maxsize=None)
def regular_expirations(trade_date: dt.date, cycle: int) -> tuple[dt.date, ...]:
    """Two nearest months plus the next two months of ``cycle`` after them."""
    near = _upcoming_months(trade_date, 2)
    out = [expiration_saturday(y, m) for y, m in near]
    y, m = near[-1]
    while len(out) < 4:
        y, m = _add_months(y, m, 1)
        if m in CYCLES[cycle]:
            out.append(expiration_saturday(y, m))
    return tuple(out)


@lru_cache(maxsize=None)
def broad_expirations(trade_date: dt.date) -> tuple[dt.date, ...]:
    """The wider listing of index and index-ETF classes: three nearest months, then the
    March/June/September/December quarters up to a year out."""
    out = [expiration_saturday(y, m) for y, m in _upcoming_months(trade_date, 3)]
    y, m = _upcoming_months(trade_date, 3)[-1]
    horizon = trade_date + dt.timedelta(days=366)
    while True:
        y, m = _add_months(y, m, 1)
        exp = expiration_saturday(y, m)
        if exp > horizon:
            return tuple(out)
        if m in CYCLES[3]:
            out.append(exp)


@lru_cache(maxsize=None)
def leaps_expirations(trade_date: dt.date) -> tuple[dt.date, ...]:
    """January of the next two years: the LEAPS of ``trade_date``."""
    return tuple(expiration_saturday(trade_date.year + k, 1) for k in (1, 2))


def session_bounds_ns(date: dt.date) -> tuple[int, int]:
    """Epoch nanoseconds of the regular session's open and close on ``date``."""
    def at(t: dt.time) -> int:
        return int(dt.datetime.combine(date, t, tzinfo=EASTERN).timestamp()) * NS_PER_S
    return at(SESSION_OPEN), at(SESSION_CLOSE)


def epoch_ns(date: dt.date, t: dt.time) -> int:
    """Epoch nanoseconds of the Eastern wall-clock time ``t`` on ``date``."""
    whole = dt.datetime.combine(date, t.replace(microsecond=0), tzinfo=EASTERN)
    return int(whole.timestamp()) * NS_PER_S + t.microsecond * 1000


def midnight_ns(date: dt.date) -> int:
    """Epoch nanoseconds of Eastern midnight starting ``date``."""
    return epoch_ns(date, dt.time(0, 0))


def opra_time(epoch: np.ndarray, midnight: int) -> np.ndarray:
    """OPRA's time field, the integer HHMMSSmmm (Eastern), of epoch nanoseconds."""
    ms = (np.asarray(epoch, dtype=np.int64) - midnight) // NS_PER_MS
    h, rem = np.divmod(ms, 3_600_000)
    mi, rem = np.divmod(rem, 60_000)
    s, milli = np.divmod(rem, 1000)
    return (((h * 100 + mi) * 100 + s) * 1000 + milli).astype(np.uint32)


def parse_clock(text: str) -> dt.time:
    """``HH:MM[:SS[.ffffff]]`` as a time of day."""
    try:
        return dt.time.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"not a time of day HH:MM[:SS[.ffffff]]: {text!r}") from exc


class CaptureClock:
    """The capture's timeline: capture-relative nanoseconds (0 = first instant of the
    capture) against epoch time, the Eastern session, and OPRA's time field."""

    def __init__(self, date: dt.date, start: dt.time, seconds: float) -> None:
        self.date = date
        self.start_epoch = epoch_ns(date, start)
        self.midnight = midnight_ns(date)
        open_ns, close_ns = session_bounds_ns(date)
        self.open_rel = open_ns - self.start_epoch
        self.close_rel = close_ns - self.start_epoch
        self.end_rel = int(round(seconds * NS_PER_S))

    @property
    def session_start(self) -> int:
        """Where quoting starts in the capture (ns, capture-relative)."""
        return max(0, self.open_rel)

    @property
    def session_end(self) -> int:
        """Where quoting stops in the capture (ns, capture-relative)."""
        return min(self.end_rel, self.close_rel)

    @property
    def session_seconds(self) -> float:
        """Seconds of regular session inside the capture."""
        return max(0, self.session_end - self.session_start) / NS_PER_S

    def opra(self, rel: np.ndarray) -> np.ndarray:
        """OPRA time fields (HHMMSSmmm, Eastern) of capture-relative times."""
        return opra_time(np.asarray(rel, dtype=np.int64) + self.start_epoch, self.midnight)

    def epoch(self, rel: np.ndarray) -> np.ndarray:
        """Epoch nanoseconds of capture-relative times."""
        return np.asarray(rel, dtype=np.int64) + self.start_epoch
