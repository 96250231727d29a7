"""``omdp bench clock``: what a hop stamp costs on each clock, and how well the TSC clock
tracks CLOCK_REALTIME.

Stamp cost: the mean ns of ``omdp_stamp_ns`` (stamp_clock.h) over a tight loop, with the TSC
clock chosen and then with CLOCK_REALTIME, alternated ``runs`` times (medians reported), so
both are measured side by side under the same load, and a bare TSC read in the same loop:
the floor under a TSC stamp on this CPU (the read itself, before scaling it to ns). Calibration: the TSC clock's stated
error (pairing and rate uncertainty) and the drift against CLOCK_REALTIME measured by the
run's own drift check at intervals over ``seconds``.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

from omdp.clock import (STAMP_CALIBRATION_NS, check_stamp_clock, stamp_clock_bench, stamp_clock_info, tsc_invariant,
                        tsc_read_bench, use_stamp_clock)
from omdp.runtime.machine import machine_info


def run_clock_bench(calls: int = 2_000_000, runs: int = 5, seconds: float = 5.0, checks: int = 20) -> dict[str, Any]:
    """Run the benchmark (the process's stamp clock is left on CLOCK_REALTIME)."""
    ok, why = tsc_invariant()
    out: dict[str, Any] = {"benchmark": "clock", "machine": machine_info(), "calls_per_run": calls, "runs": runs,
                           "tsc_invariant": ok, "why_not": why}
    realtime: list[float] = []
    tsc: list[float] = []
    floor: list[float] = []
    try:
        for _ in range(runs):
            if ok:
                use_stamp_clock("tsc", STAMP_CALIBRATION_NS)
                tsc.append(stamp_clock_bench(calls))
                floor.append(tsc_read_bench(calls))
            use_stamp_clock("realtime")
            realtime.append(stamp_clock_bench(calls))
        out["realtime_ns_per_stamp"] = {"median": statistics.median(realtime), "runs": realtime}
        if ok:
            out["tsc_ns_per_stamp"] = {"median": statistics.median(tsc), "runs": tsc}
            out["tsc_read_ns"] = {"median": statistics.median(floor), "runs": floor}
            use_stamp_clock("tsc", STAMP_CALIBRATION_NS)
            drifts = []
            for _ in range(checks):
                time.sleep(seconds / checks)
                drifts.append(check_stamp_clock())
            info = stamp_clock_info()
            out["calibration"] = {k: info[k] for k in ("ticks_per_ns", "pair_error_ns", "rate_error_ppm")}
            out["drift"] = {"seconds": seconds, "checks": checks, "drift_ns": drifts,
                            "max_abs_drift_ns": info["max_abs_drift_ns"], "stated_error_ns": info["stated_error_ns"],
                            "over_error": info["drift_over_error"], "checked_bound_ns": info["checked_bound_ns"]}
    finally:
        use_stamp_clock("realtime")
    return out
