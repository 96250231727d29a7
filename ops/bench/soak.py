"""A soak: one long pipeline run (``omdp run ... --json``) with the resident memory of every
process of the run followed from /proc, so that "bounded memory all day" is a measured
figure: each process's RSS after the first minute, at the middle, at its highest and at the
end, and its growth per minute over the second half, beside the run's exact accounting.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from omdp.runtime.machine import machine_info

PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def process_tree(root: int) -> list[int]:
    """root and every process descended from it (each thread's /proc children list: a
    process started from a thread is that thread's child)."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                continue
    return seen


def _rss_and_name(pid: int) -> tuple[int, str] | None:
    """(resident KiB, a name saying which part of the run the process is), None if gone."""
    try:
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    args = [a.decode(errors="replace") for a in argv if a]
    if not args or rss_pages == 0:  # exiting, or a kernel thread
        return None
    if "--partition" in args:
        name = "partition " + args[args.index("--partition") + 1]
    elif any("sender_program" in a for a in args):
        name = "replay sender"
    elif any(a.endswith("main()") or a.endswith("omdp") for a in args):
        name = "omdp run (supervisor)"
    else:
        name = " ".join(args[:3])[:60]
    return rss_pages * PAGE_KIB, name


def _summary(series: list[tuple[float, int]]) -> dict[str, Any]:
    """MiB after the first minute, in the middle, highest and at the end; MiB/min over the
    second half (a fitted slope)."""
    t_end = series[-1][0]

    def at(t: float) -> int:
        return next((kib for ts, kib in series if ts >= t), series[-1][1])

    half = [(ts, kib) for ts, kib in series if ts >= t_end / 2]
    growth = 0.0
    if len(half) >= 2 and half[-1][0] > half[0][0]:
        # Least-squares slope: RSS moves up and down as chunks come and go; endpoints alone would
        # read that wobble as growth.
        t = np.array([ts for ts, _ in half]) / 60
        growth = float(np.polyfit(t, np.array([kib for _, kib in half], dtype=float) / 1024, 1)[0])
    return {"first_min_mib": at(60) / 1024, "middle_mib": at(t_end / 2) / 1024,
            "highest_mib": max(k for _, k in series) / 1024, "end_mib": series[-1][1] / 1024,
            "second_half_mib_per_min": growth}


def run_soak(topology: str, data: Path, rate: str, seconds: float, every_s: float = 10.0,
             extra: tuple[str, ...] = (), progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Run the pipeline for ``seconds`` at ``rate`` and follow its processes' memory."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "run.json"
        cmd = [sys.executable, "-P", "-c", "from ops.cli.main import main; main()", "run", topology, "--data",
               str(data), "--rate", rate, "--seconds", str(seconds), "--json", str(report), *extra]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        series: dict[str, list[tuple[float, int]]] = {}
        while proc.poll() is None:
            now = time.monotonic() - t0
            for pid in process_tree(proc.pid):
                got = _rss_and_name(pid)
                if got is not None:
                    series.setdefault(got[1], []).append((now, got[0]))
            if progress is not None:
                progress(min(now, seconds))
            try:
                proc.wait(every_s)
            except subprocess.TimeoutExpired:
                pass
        err = proc.stderr.read() if proc.stderr else ""
        if proc.returncode != 0 or not report.is_file():
            raise RuntimeError(f"the soak's run failed (exit {proc.returncode}): {err[-2000:]}")
        run = json.loads(report.read_text())
    return {
        "machine": machine_info(),
        "run_command": " ".join(["omdp run", topology, "--data", str(data), "--rate", rate, "--seconds", f"{seconds:g}",
                             *extra]),
        "sample_every_s": every_s,
        "memory": {name: _summary(s) for name, s in sorted(series.items()) if s},
        "memory_series_kib": {name: s for name, s in series.items()},
        "run": run,
    }
