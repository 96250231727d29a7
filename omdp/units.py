"""Durations as a person reads them: the one formatter of every latency omdp prints.

A p99 of 4,311,744 us reads ``4.31 s``, one of 812 ns ``812 ns``: the unit follows the
magnitude and the figure keeps three significant digits, so a table of hops from 200 ns to
seconds stays narrow and comparable at a glance. Machine-readable outputs (JSON, CSV,
Parquet) keep the raw numbers; only text for people goes through here."""
from __future__ import annotations

import math

_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "us"))


def fmt_ns(v: float | None) -> str:
    """A duration in nanoseconds: ``812 ns``, ``12.3 us``, ``1.25 ms``, ``4.31 s``;
    ``n/a`` when unknown. Negative durations (a pacing error ahead of schedule) keep their sign."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if abs(v) < 1e12:
        v = float(f"{v:.3g}")  # rounded first, so 999,999 ns reads 1.00 ms, not 1000 us
    size = abs(v)
    for scale, unit in _UNITS:
        if size >= scale:
            x = v / scale
            if abs(x) >= 1000:
                return f"{x:,.0f} {unit}"
            return f"{x:.{_decimals(abs(x))}f} {unit}"
    return f"{v:.0f} ns"


def fmt_us(v: float | None) -> str:
    """A duration in microseconds (the unit of run summaries), formatted as ``fmt_ns``."""
    return fmt_ns(None if v is None else v * 1e3)


def _decimals(x: float) -> int:
    """Three significant digits: 4.31, 43.1, 431."""
    return 2 if x < 10 else 1 if x < 100 else 0
