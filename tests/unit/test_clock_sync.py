"""Clock offsets across hosts (omdp.runtime.clock_sync and the omdp clock's shift): the NTP
estimate keeps the exchange with the smallest delay and its error bounds the truth
whatever the split of the delay; offsets are taken against the reference host; PTP hosts
are used as they are; OMDP_CLOCK_OFFSET_NS shifts a process's clock, read once at start,
and a correction moves its stamps into the reference host's time."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from omdp.runtime.clock_sync import (
    ClockEstimate,
    Exchange,
    best_estimate,
    max_error_ns,
    relative_clocks,
    run_clock_error_ns,
    write_clocks,
)


def exchange(true_offset: int, t0: int, out_delay: int, hold: int, back_delay: int) -> Exchange:
    """A ping-pong with a host whose clock reads ``true_offset`` ahead of ours."""
    t1 = t0 + out_delay + true_offset
    t2 = t1 + hold
    t3 = t2 - true_offset + back_delay
    return Exchange(t0, t1, t2, t3)


def test_the_estimate_bounds_the_truth_whatever_the_split_of_the_delay() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        truth = rng.randint(-10**9, 10**9)
        samples = [exchange(truth, rng.randint(0, 10**12), rng.randint(1, 90_000), rng.randint(0, 50_000),
                            rng.randint(1, 90_000)) for _ in range(rng.randint(1, 20))]
        est = best_estimate(samples)
        assert abs(est.offset_ns - truth) <= est.error_ns
        assert est.error_ns == -(-min(s.delay for s in samples) // 2)


def test_the_smallest_delay_wins() -> None:
    slow = exchange(5000, 0, 40_000, 100, 1_000)        # lopsided: off by 19.5 us
    fast = exchange(5000, 10**6, 1_000, 100_000, 1_200)  # a long hold costs nothing
    est = best_estimate([slow, fast])
    assert est.delay_ns == 2_200 and est.error_ns == 1_100 and abs(est.offset_ns - 5000) <= 100
    assert est.samples == 2


def test_impossible_exchanges_are_refused() -> None:
    with pytest.raises(ValueError, match="no clock exchanges"):
        best_estimate([])
    with pytest.raises(ValueError, match="negative round trip"):
        best_estimate([Exchange(0, 100, 200, 50)])


def test_offsets_against_the_reference_add_their_errors() -> None:
    est = {"a": ClockEstimate(1_000, 30, 60, 64), "b": ClockEstimate(-500_000, 20, 40, 64),
           "c": ClockEstimate(7, 10, 20, 64)}
    clocks = relative_clocks(est, "a", set(), 1000)
    assert clocks["a"].method == "reference" and clocks["a"].offset_ns == 0 and clocks["a"].error_ns == 0
    assert clocks["b"].offset_ns == -501_000 and clocks["b"].error_ns == 50
    assert clocks["c"].offset_ns == -993 and clocks["c"].error_ns == 40
    assert max_error_ns(clocks) == 50


def test_ptp_hosts_are_taken_as_they_are_only_beside_a_ptp_reference() -> None:
    est = {"a": ClockEstimate(0, 30, 60, 8), "b": ClockEstimate(900, 20, 40, 8), "c": ClockEstimate(5, 5, 10, 8)}
    clocks = relative_clocks(est, "a", {"a", "b"}, 1000)
    assert clocks["b"].method == "ptp" and clocks["b"].offset_ns == 0 and clocks["b"].error_ns == 2000
    assert clocks["c"].method == "ping-pong"
    clocks = relative_clocks(est, "c", {"a", "b"}, 1000)
    assert clocks["b"].method == "ping-pong" and clocks["b"].offset_ns == 895


def test_clocks_json_gives_the_run_its_error(tmp_path) -> None:
    assert run_clock_error_ns(tmp_path) == 0
    clocks = relative_clocks({"a": ClockEstimate(0, 5, 10, 4), "b": ClockEstimate(10, 7, 14, 4)}, "a", set(), 0)
    write_clocks(tmp_path, "a", clocks)
    data = json.loads((tmp_path / "clocks.json").read_text())
    assert data["reference"] == "a" and data["hosts"]["b"]["offset_ns"] == 10
    assert run_clock_error_ns(tmp_path) == 12


PROBE = """
from omdp.native import lib
print(lib.omdp_clock_injected_ns(), lib.omdp_clock_env_invalid())
h0, n0 = lib.omdp_host_now_ns(), lib.omdp_now_ns()
lib.omdp_clock_set_correction(-250_000_000)
h1, n1, r1 = lib.omdp_host_now_ns(), lib.omdp_now_ns(), lib.omdp_realtime_ns()
print(n0 - h0, n1 - h1, h1 - r1, lib.omdp_clock_correction_ns())
"""


def probe(env_value: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "OMDP_CLOCK_OFFSET_NS"}
    if env_value is not None:
        env["OMDP_CLOCK_OFFSET_NS"] = env_value
    out = subprocess.run([sys.executable, "-P", "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def near(value: str, expected: int, slack: int = 5_000_000) -> bool:
    return abs(int(value) - expected) < slack


def test_the_injected_offset_and_the_correction_shift_the_stamps() -> None:
    injected, invalid, before, after, host_vs_real, correction = probe("-3000000000")
    assert (injected, invalid, correction) == ("-3000000000", "0", "-250000000")
    assert near(before, 0) and near(after, 250_000_000) and near(host_vs_real, -3_000_000_000)
    injected, invalid, *_ = probe(None)
    assert (injected, invalid) == ("0", "0")
    injected, invalid, *_ = probe("12ms")
    assert (injected, invalid) == ("0", "1")
