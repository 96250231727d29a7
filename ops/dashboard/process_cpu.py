"""CPU time of the run's processes, from ``/proc/<pid>/stat`` (Linux).

Operators report the process they run in (the stats segment's ``pid``); the dashboard
turns that process's user + system time into a share of one CPU. Elsewhere, or for a
process that is gone, the figure is None.
"""
from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """User + system CPU seconds used so far by ``pid``; None when unreadable."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) sits in parentheses and may hold spaces: split after it.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (IndexError, ValueError):
        return None
