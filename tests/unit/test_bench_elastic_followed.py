"""``omdp bench elastic``'s verdict on a rate step (ops.bench.elastic._followed): how many
control periods after the step up the level rose, and after the step down it was back at 1,
read from the per-period records the benchmark JSON keeps."""
from __future__ import annotations

from ops.bench.elastic import _followed


def periods(levels: list[tuple[int, int]]) -> list[dict]:
    """One record per 1 s period ending at t = 1, 2, ...: (level during it, level chosen for the next)."""
    return [{"t_s": float(i + 1), "level": lv, "next_level": nxt} for i, (lv, nxt) in enumerate(levels)]


def test_rise_two_periods_after_the_step_and_fall_one_after() -> None:
    # step up at 3 s, down at 6 s
    p = periods([(1, 1), (1, 1), (1, 1), (1, 1), (1, 2), (2, 2), (2, 1), (1, 1)])
    assert _followed(p, [3.0, 6.0], 1.0) == {"rose_after_periods": 2, "fell_after_periods": 1, "max_level": 2}


def test_a_level_that_never_moves_is_reported_as_never() -> None:
    p = periods([(1, 1)] * 8)
    assert _followed(p, [3.0, 6.0], 1.0) == {"rose_after_periods": None, "fell_after_periods": 1, "max_level": 1}


def test_a_level_still_up_at_the_end_has_not_fallen() -> None:
    p = periods([(1, 1), (1, 2), (2, 2), (2, 2), (2, 2)])
    assert _followed(p, [1.0, 3.0], 1.0) == {"rose_after_periods": 1, "fell_after_periods": None, "max_level": 2}


def test_a_rise_before_the_step_does_not_count() -> None:
    p = periods([(1, 2), (2, 1), (1, 1), (1, 1), (1, 1), (1, 1)])
    assert _followed(p, [3.0, 5.0], 1.0)["rose_after_periods"] is None
