"""The dashboard's query parsing and rate arithmetic: windows in seconds with clear
refusals, and rates from successive snapshots of cumulative counters."""
from __future__ import annotations

import pytest

from ops.dashboard.rates import CounterRates
from ops.dashboard.source import is_gauge
from ops.dashboard.window import WindowError, parse_window

S = 1_000_000_000


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10), ("10", 10), (" 64 s ", 64), ("1m", 60), ("1min", 60),
                                               ("ALL", None), ("all", None)])
def test_windows(text: str, seconds: int | None) -> None:
    assert parse_window(text, 64) == seconds


@pytest.mark.parametrize(("text", "reason"), [("0s", "is 0 s"), ("65s", "1 to 64 s"), ("2m", "is 120 s"),
                                              ("10ms", "not a duration"), ("-5", "not a duration"), ("", "not a duration"),
                                              ("1.5s", "not a duration")])
def test_bad_windows_say_why(text: str, reason: str) -> None:
    with pytest.raises(WindowError, match=reason):
        parse_window(text, 64)


def test_rates_use_the_writers_times_over_about_a_second() -> None:
    r = CounterRates(span_s=1.0, keep_s=10.0, stale_s=3.0)
    assert r.rates("line1", 0) is None
    for i in range(30):  # published every 100 ms, 500 packets/s
        r.add("line1", 100 * S + i * S // 10, {"packets": 50 * i})
    assert r.rates("line1", 103 * S) == {"packets": pytest.approx(500.0)}
    r.add("line1", 100 * S + 29 * S // 10, {"packets": 10_000})  # a repeat of the newest time is ignored
    assert r.rates("line1", 103 * S) == {"packets": pytest.approx(500.0)}
    r.add("line1", 103 * S, {"packets": 50 * 29 + 100})  # 100 more in 100 ms
    assert r.rates("line1", 103 * S)["packets"] == pytest.approx((50 * 29 + 100 - 50 * 20) / 1.0)


def test_a_silent_writer_runs_at_zero_and_keys_can_be_dropped() -> None:
    r = CounterRates(stale_s=3.0)
    r.add("op", 10 * S, {"n": 0})
    r.add("op", 11 * S, {"n": 100})
    assert r.rates("op", 11 * S) == {"n": 100.0}
    assert r.rates("op", 14 * S + 1) == {"n": 0.0}
    r.forget_except({"other"})
    assert r.rates("op", 11 * S) is None


def test_gauges_are_levels() -> None:
    assert is_gauge("occupancy") and is_gauge("peer_state") and is_gauge("last_error_offset")
    assert not is_gauge("spins") and not is_gauge("full_events") and not is_gauge("messages")


def test_an_entry_never_published_is_no_snapshot() -> None:
    r = CounterRates(span_s=1.0)
    r.add("line1", 0, {"packets": 0})          # registered, not yet published
    r.add("line1", 1_700_000_000 * S, {"packets": 1_000})
    assert r.rates("line1", 1_700_000_000 * S) is None
    r.add("line1", 1_700_000_001 * S, {"packets": 25_000})
    assert r.rates("line1", 1_700_000_001 * S) == {"packets": pytest.approx(24_000.0)}
