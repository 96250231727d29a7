"""Calendar of the synthetic day: the February 2008 expiration table, listing cycles, LEAPS,
and OPRA's HHMMSSmmm time field in Eastern time."""
from __future__ import annotations

import datetime as dt

import numpy as np

from ops.synth.calendar import (CaptureClock, broad_expirations, epoch_ns, expiration_saturday, leaps_expirations,
                                opra_time, parse_clock, regular_expirations)

FEB_2008_TABLE = {
    (2008, 2): "2008-02-16", (2008, 3): "2008-03-22", (2008, 4): "2008-04-19", (2008, 5): "2008-05-17",
    (2008, 6): "2008-06-21", (2008, 7): "2008-07-19", (2008, 8): "2008-08-16", (2008, 9): "2008-09-20",
    (2008, 10): "2008-10-18", (2008, 11): "2008-11-22", (2008, 12): "2008-12-20", (2009, 1): "2009-01-17",
    (2010, 1): "2010-01-16",
}
DAY = dt.date(2008, 2, 4)


def test_expirations_match_the_february_2008_table() -> None:
    for (y, m), want in FEB_2008_TABLE.items():
        assert expiration_saturday(y, m).isoformat() == want
        assert expiration_saturday(y, m).weekday() == 5


def test_cycles_list_two_near_months_and_two_of_the_cycle() -> None:
    months = {c: [(d.year, d.month) for d in regular_expirations(DAY, c)] for c in (1, 2, 3)}
    assert months[1] == [(2008, 2), (2008, 3), (2008, 4), (2008, 7)]
    assert months[2] == [(2008, 2), (2008, 3), (2008, 5), (2008, 8)]
    assert months[3] == [(2008, 2), (2008, 3), (2008, 6), (2008, 9)]


def test_leaps_and_broad_listings() -> None:
    assert [d.isoformat() for d in leaps_expirations(DAY)] == ["2009-01-17", "2010-01-16"]
    assert [(d.year, d.month) for d in broad_expirations(DAY)] == [(2008, 2), (2008, 3), (2008, 4), (2008, 6),
                                                                  (2008, 9), (2008, 12)]


def test_a_month_whose_expiration_passed_is_not_near() -> None:
    after = dt.date(2008, 2, 19)
    assert regular_expirations(after, 1)[0] == dt.date(2008, 3, 22)


def test_opra_time_is_eastern_hhmmssmmm() -> None:
    t = epoch_ns(DAY, dt.time(9, 30))
    assert t == 1_202_135_400 * 10**9  # 14:30 UTC: EST in February
    midnight = epoch_ns(DAY, dt.time(0, 0))
    got = opra_time(np.array([t, t + 1_234_567_890, t + 23_400 * 10**9 - 1]), midnight)
    assert got.tolist() == [93000000, 93001234, 155959999]


def test_capture_clock_session_inside_the_window() -> None:
    c = CaptureClock(DAY, parse_clock("09:29:00"), 120.0)
    assert c.open_rel == 60 * 10**9 and c.session_start == c.open_rel
    assert c.session_seconds == 60.0
    late = CaptureClock(DAY, parse_clock("15:59:30"), 60.0)
    assert late.session_seconds == 30.0 and late.session_end == late.close_rel
    assert int(late.opra(np.array([0]))[0]) == 155930000
