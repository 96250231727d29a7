"""The stamp clock (stamp_clock.h): on the TSC its stamps stay comparable with intended
times taken by omdp_now_ns in another part of the run (within the calibration's stated
error, shift included), a non-invariant TSC is refused by name, and drift is reported."""
from __future__ import annotations

import math

import time
from pathlib import Path
from typing import Iterator

import pytest

from omdp.clock import (TscClockError, check_stamp_clock, now_ns, stamp_clock_info, stamp_now_ns, tsc_invariant,
                        use_stamp_clock)
from omdp.native import lib

NOT_INVARIANT = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rdtscp\n\n"
needs_tsc = pytest.mark.skipif(not tsc_invariant()[0], reason="this machine's TSC is not invariant")


@pytest.fixture(autouse=True)
def back_to_realtime() -> Iterator[None]:
    """Each test leaves the process stamping as it found it (realtime, no correction)."""
    yield
    use_stamp_clock("realtime")
    lib.omdp_clock_set_correction(0)


def _between_realtime_reads(n: int) -> int:
    """Largest distance of a stamp outside [now before, now after], over n reads."""
    worst = 0
    for _ in range(n):
        before = now_ns()
        t = stamp_now_ns()
        after = now_ns()
        worst = max(worst, before - t, t - after)
    return worst


@needs_tsc
def test_tsc_stamps_agree_with_intended_times_within_the_stated_error() -> None:
    assert use_stamp_clock("tsc", interval_ns=20_000_000) == "tsc"
    check_stamp_clock()
    err = int(stamp_clock_info()["stated_error_ns"])
    assert err > 0  # its size is the host's scheduling of the calibration: `omdp bench clock` reports it
    assert _between_realtime_reads(2000) <= err


@needs_tsc
def test_tsc_stamps_follow_the_clock_correction() -> None:
    """A corrected host's intended times carry the correction: so do its TSC stamps."""
    use_stamp_clock("tsc", interval_ns=20_000_000)
    lib.omdp_clock_set_correction(-5_000_000_000)  # 5 s ahead
    check_stamp_clock()
    err = int(stamp_clock_info()["stated_error_ns"])
    assert _between_realtime_reads(500) <= err
    assert stamp_now_ns() - time.clock_gettime_ns(time.CLOCK_REALTIME) > 4_000_000_000


@needs_tsc
def test_drift_checks_are_counted_and_small() -> None:
    use_stamp_clock("auto", interval_ns=20_000_000)
    for _ in range(5):
        check_stamp_clock()
    info = stamp_clock_info()
    assert info["clock"] == "tsc" and info["drift_checks"] == 5
    assert abs(int(info["last_drift_ns"])) <= int(info["max_abs_drift_ns"]) <= int(info["stated_error_ns"]) + 1000
    assert info["drift_over_error"] == 0


@needs_tsc
def test_the_checks_bound_the_error_from_what_they_saw() -> None:
    # each check (and the calibration, the first point) happens between two reads of the
    # monotonic clock, so the longest gap the clock reports lies between the longest of the
    # gaps' lower and upper brackets, however late a loaded host ran each step
    before, after = [time.monotonic_ns()], []
    use_stamp_clock("auto", interval_ns=20_000_000)
    after.append(time.monotonic_ns())
    info = stamp_clock_info()
    assert info["checked_error_ns"] == info["pair_error_ns"] and info["max_check_gap_ns"] == 0  # no check yet
    for gap in (0.002, 0.03, 0.01):
        time.sleep(gap)
        before.append(time.monotonic_ns())
        check_stamp_clock()
        after.append(time.monotonic_ns())
    info = stamp_clock_info()
    assert int(info["checked_error_ns"]) >= int(info["max_abs_drift_ns"])
    lowest = max(before[i] - after[i - 1] for i in range(1, len(before)))
    highest = max(after[i] - before[i - 1] for i in range(1, len(before)))
    assert lowest >= 0.03e9 and lowest <= int(info["max_check_gap_ns"]) <= highest  # the longest of the gaps
    allowance = float(info["rate_error_ppm"]) * 1e-6 * int(info["max_check_gap_ns"])
    assert int(info["checked_bound_ns"]) == int(info["checked_error_ns"]) + math.ceil(allowance)
    # a stamp and CLOCK_REALTIME read together agree within the bound the checks give
    assert _between_realtime_reads(500) <= int(info["checked_bound_ns"]) + 1_000


def test_tsc_refused_where_not_invariant_and_auto_falls_back(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(NOT_INVARIANT)
    with pytest.raises(TscClockError, match="--clock tsc: the TSC is not invariant .*lacks nonstop_tsc"):
        use_stamp_clock("tsc", cpuinfo=str(cpuinfo))
    assert use_stamp_clock("auto", cpuinfo=str(cpuinfo)) == "realtime"
    assert stamp_clock_info() == {"clock": "realtime"}
    assert check_stamp_clock() == 0
    assert _between_realtime_reads(100) == 0
    with pytest.raises(ValueError, match="clock 'rdtsc': one of auto, tsc, realtime"):
        use_stamp_clock("rdtsc")


@needs_tsc
def test_clock_bench_reports_the_bare_tsc_read_beside_the_stamps() -> None:
    """`omdp bench clock` times a bare rdtsc in the stamp's own loop: the floor a TSC stamp
    is judged against; a stamp (the read, its scaling and the clock's shift) costs more than
    nothing beyond it."""
    from ops.bench.clock import run_clock_bench

    r = run_clock_bench(calls=200_000, runs=3, seconds=0.2, checks=2)
    floor, stamp = r["tsc_read_ns"], r["tsc_ns_per_stamp"]
    assert len(floor["runs"]) == 3 and len(stamp["runs"]) == 3
    assert 0.0 < floor["median"] < 1_000.0
    assert stamp["median"] > 0.5 * floor["median"]
    assert stamp_clock_info()["clock"] == "realtime"  # the bench leaves the process as it found it
