"""The elastic controller on scripted rate traces: a model system whose throughput at level L
is min(offered load, per-thread rate x min(L, free cores)); the controller sees only the
throughput and whether the workers were saturated, as the engine partition reports them."""
from __future__ import annotations

import pytest

from omdp.runtime.elastic_control import Decision, ElasticController


def run(ctrl: ElasticController, periods: int, offered: float, per_thread: float = 3.0,
        cores: int = 8) -> list[int]:
    """Levels chosen over ``periods`` periods at a steady offered load."""
    levels = []
    for _ in range(periods):
        capacity = per_thread * min(ctrl.level, cores)
        ctrl.step(min(offered, capacity), saturated=offered > capacity)
        levels.append(ctrl.level)
    return levels


def test_rises_while_throughput_rises_and_settles_where_the_load_is_met() -> None:
    ctrl = ElasticController(max_level=8)
    levels = run(ctrl, 12, offered=10.0)
    assert levels[:3] == [2, 3, 4]  # one level per period while saturated
    assert levels[-6:] == [4] * 6  # 4 x 3 >= 10: settled, not probing 5..8


def test_stays_at_one_thread_under_light_load() -> None:
    ctrl = ElasticController(max_level=8)
    assert run(ctrl, 10, offered=2.0) == [1] * 10


def test_falls_back_when_the_load_falls_and_rises_again_within_three_periods() -> None:
    ctrl = ElasticController(max_level=8)
    run(ctrl, 10, offered=10.0)
    assert ctrl.level == 4
    low = run(ctrl, 10, offered=2.0)
    assert low[-1] == 1
    assert low.index(1) <= 6  # one step down and one confirming period per level
    high = run(ctrl, 10, offered=10.0)
    assert high.index(4) <= 2  # level 1 saturated again: a significant new peak re-probes
    assert high[-1] == 4


def test_stability_from_below_when_more_threads_stop_helping() -> None:
    ctrl = ElasticController(max_level=8)
    levels = run(ctrl, 12, offered=100.0, cores=3)  # saturated throughout, 3 cores
    # probes 4 (no gain), then settles on 3 or 4 without climbing to 8
    assert max(levels) <= 5
    assert levels[-1] in (3, 4)


def test_backs_off_under_external_load_and_returns_when_it_goes() -> None:
    ctrl = ElasticController(max_level=8)
    run(ctrl, 12, offered=100.0, cores=6)
    assert ctrl.level in (6, 7)
    busy = run(ctrl, 30, offered=100.0, cores=2)  # external load pegs 4 of the 6 cores
    assert busy[-1] <= 3
    freed = run(ctrl, 12, offered=100.0, cores=6)
    assert freed[-1] >= 6  # the jump at the low level invalidated the higher peaks


def test_never_suspends_the_last_thread_and_never_exceeds_the_pool() -> None:
    ctrl = ElasticController(max_level=2)
    levels = run(ctrl, 6, offered=100.0)
    assert max(levels) == 2
    assert ctrl.step(100.0 * 2 * 3) == Decision.AT_MAX or ctrl.level == 2
    ctrl1 = ElasticController(max_level=4)
    ctrl1.step(10.0)
    ctrl1.level = 1
    assert ctrl1.step(0.5) == Decision.STABLE_BELOW
    assert ctrl1.level == 1


def test_a_restored_level_is_not_probed_down_again_while_the_lower_one_cannot_cope() -> None:
    ctrl = ElasticController(max_level=8)
    run(ctrl, 10, offered=10.0)
    decisions = []
    for _ in range(10):
        capacity = 3.0 * ctrl.level
        decisions.append(ctrl.step(min(10.0, capacity), saturated=10.0 > capacity))
    assert Decision.DOWN_IDLE not in decisions


@pytest.mark.parametrize("kw", [{"max_level": 0}, {"max_level": 2, "tolerance": 0.0},
                                {"max_level": 2, "decay": 1.0}, {"max_level": 2, "level": 3}])
def test_bad_settings_are_refused_by_name(kw: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(k for k in kw if k != "max_level"), "max_level")):
        ElasticController(**kw)


def test_bad_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="rate"):
        ElasticController(max_level=2).step(float("nan"))


def test_a_load_drop_during_the_confirming_period_settles_lower() -> None:
    ctrl = ElasticController(max_level=4)
    run(ctrl, 10, offered=10.0)
    assert ctrl.level == 4
    assert ctrl.step(5.0, saturated=False) == Decision.DOWN_IDLE  # below level 3's capacity (9)
    # the input fell further while level 3 was tried: it kept up, so it is kept
    assert ctrl.step(2.0, saturated=False) == Decision.SETTLE_LOWER and ctrl.level == 3
    # but a saturated lower level that falls short of the higher level's rate is restored
    ctrl = ElasticController(max_level=4)
    run(ctrl, 10, offered=10.0)
    ctrl.step(5.0, saturated=False)
    assert ctrl.step(3.0, saturated=True) == Decision.RESTORE and ctrl.level == 4
