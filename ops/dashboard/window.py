"""Latency windows as the API takes them: ``10s``, ``10``, ``1m`` or ``all``.

Windows are whole seconds because the stats segment keeps one histogram per second; a
window of N seconds ending at time t holds the samples whose final stamp falls in the N
epoch seconds up to and including t's second, for live and finished runs alike.
"""
from __future__ import annotations

import re

_WINDOW = re.compile(r"^\s*(\d{1,7})\s*(s|sec|m|min)?\s*$", re.IGNORECASE)


class WindowError(ValueError):
    """A window the API cannot serve, with the reason in words."""


def parse_window(text: str, max_window_s: int) -> int | None:
    """Seconds of ``text`` (None for ``all``: since the run started, or the finished run's
    report), checked against 1..max_window_s."""
    if text.strip().lower() == "all":
        return None
    m = _WINDOW.match(text)
    if not m:
        raise WindowError(f"window {text!r} is not a duration: use e.g. '10s', '10', '2m' or 'all'")
    seconds = int(m.group(1)) * (60 if (m.group(2) or "s").lower().startswith("m") else 1)
    if not 1 <= seconds <= max_window_s:
        raise WindowError(f"window {text!r} is {seconds} s; this run keeps windows of 1 to {max_window_s} s "
                          "(or 'all')")
    return seconds
