"""A run's sustainability verdict (docs/architecture.md "Rates, latency, sustainability"): a test
that could not be judged makes it unknown, never yes."""
from __future__ import annotations

from omdp.metrics.definitions import Growth, SustainabilityRule, Verdict, judge
from ops.pipeline.run_report import Accounting, ReplayTotals

ON_TIME = ReplayTotals(target_pps=24_000, achieved_pps=24_000, achieved_fraction=1.0)
NONE_MISSED = Accounting(messages_received=1_000_000, messages_missed=0)
FLAT = Growth(first_us=40.0, last_us=41.0, samples=6_000)


def verdict(replay: ReplayTotals, acc: Accounting, growth: Growth, run_ok: bool, p99_from_intended_us: float | None,
            max_p99_from_intended_us: float | None) -> Verdict:
    """The one rule (omdp.metrics.definitions) applied to a live run's figures, as run_pipeline does."""
    return judge(achieved_fraction=replay.achieved_fraction, messages_missed=acc.messages_missed,
                 messages_seen=acc.messages_received + acc.messages_missed, growth=growth,
                 p99_from_intended_us=p99_from_intended_us, failed=not run_ok, unreported=tuple(acc.unreported),
                 rule=SustainabilityRule(max_p99_from_intended_us=max_p99_from_intended_us))


def test_every_test_judged_and_passed_is_yes() -> None:
    v = verdict(ON_TIME, NONE_MISSED, FLAT, True, p99_from_intended_us=120.0, max_p99_from_intended_us=1000.0)
    assert (v.sustainable, v.judged, v.text()) == (True, True, "yes")


def test_p99_na_against_a_bound_is_unknown_not_yes() -> None:
    v = verdict(ON_TIME, NONE_MISSED, FLAT, True, p99_from_intended_us=None, max_p99_from_intended_us=1000.0)
    assert v.sustainable is False and v.judged is None and v.reasons == ()
    assert v.text().startswith("unknown (p99 latency from intended is n/a (fewer than 1,000 samples)")


def test_p99_na_without_a_bound_is_judged() -> None:
    v = verdict(ON_TIME, NONE_MISSED, FLAT, True, p99_from_intended_us=None, max_p99_from_intended_us=None)
    assert v.text() == "yes"


def test_too_few_samples_for_growth_is_unknown() -> None:
    v = verdict(ON_TIME, NONE_MISSED, Growth(samples=12), True, 120.0, 1000.0)
    assert v.judged is None and v.text() == "unknown (too few samples (12) to judge latency growth)"


def test_a_failed_test_is_no_even_with_unknowns() -> None:
    late = ReplayTotals(target_pps=24_000, achieved_pps=12_000, achieved_fraction=0.5)
    v = verdict(late, NONE_MISSED, Growth(samples=12), True, None, 1000.0)
    assert v.judged is False and v.text().startswith("no (replayer kept 50.0000% of its schedule")
    assert len(v.unknown) == 2


def test_a_partition_that_died_without_its_figures_makes_missed_unknown() -> None:
    lost = Accounting(messages_received=245_072, messages_missed=0, unreported=["engines"])
    assert lost.missed_ratio is None
    v = verdict(ON_TIME, lost, FLAT, False, 120.0, 1000.0)
    assert v.judged is False and "missed messages unknown: partition engines died without its figures" in v.reasons


def test_a_sweep_prints_an_unjudged_run_as_unknown() -> None:
    from ops.pipeline.sweep import SweepPoint, verdict_word

    judged_no = SweepPoint("c", "1x", 24_000.0, run={"sustainable": False})
    unjudged = SweepPoint("c", "1x", 24_000.0, run={"sustainable": None})
    failed = SweepPoint("c", "1x", 24_000.0, run={"sustainable": None}, error="run x failed: ...")
    yes = SweepPoint("c", "1x", 24_000.0, run={"sustainable": True}, sustainable=True)
    assert [verdict_word(p, "yes", "no") for p in (yes, judged_no, unjudged, failed)] == ["yes", "no", "unknown", "no"]
