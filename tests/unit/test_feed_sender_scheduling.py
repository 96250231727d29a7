"""A pipeline's feed senders are real-time unless a topology says otherwise, spin a shorter
window when they are (their wake-ups are prompt, and spinning takes the CPU the collectors
and the sent log's writer share with them), and the run summary says how they ran."""
from __future__ import annotations

from ops.pipeline.feed_sender import ORDINARY_SPIN_US, REALTIME_SPIN_US, FeedSenderParams, sender_spin_us
from ops.pipeline.run_report import ReplayTotals, sender_scheduling


def test_senders_are_realtime_by_default_with_the_shorter_spin() -> None:
    p = FeedSenderParams()
    assert p.realtime is True and p.spin_us is None
    assert sender_spin_us(p) == REALTIME_SPIN_US < ORDINARY_SPIN_US
    assert sender_spin_us(FeedSenderParams(realtime=False)) == ORDINARY_SPIN_US
    assert sender_spin_us(FeedSenderParams(realtime=True, spin_us=75.0)) == 75.0
    assert sender_spin_us(FeedSenderParams(realtime=False, spin_us=0.0)) == 0.0


def test_the_feed_line_says_how_the_senders_ran() -> None:
    assert sender_scheduling(ReplayTotals()) == ""
    assert sender_scheduling(ReplayTotals(senders=2, senders_realtime=2)) == "; sender(s) SCHED_FIFO (2)"
    text = sender_scheduling(ReplayTotals(senders=2, senders_realtime=1))
    assert "1 of 2 sender(s) ordinary tasks" in text and "latency from intended" in text
