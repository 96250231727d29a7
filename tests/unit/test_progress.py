"""``ops.progress``: the countdown of ``omdp run``/``demo`` draws on a terminal only, says
the run's seconds cleanly, is silent with ``--quiet``, and keeps the run's own messages."""
from __future__ import annotations

import io

from ops.progress import RunCountdown


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a user's stderr does."""

    def isatty(self) -> bool:
        return True


class Clock:
    """The countdown's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_countdown_on_a_terminal_shows_the_seconds_run_of_the_total() -> None:
    out, clock = Terminal(), Clock()
    with RunCountdown(30.0, quiet=False, file=out, clock=clock) as bar:
        assert bar.shown
        bar.tick()  # not started yet: nothing moves
        bar.start()
        clock.now += 12.34
        bar.tick()
        assert "run:  41%|" in out.getvalue() and "12.3/30.0 s" in out.getvalue()
        bar.write("run r1: running")
        clock.now += 60.0  # the run's teardown outlasts its length: the bar stops at the total
        bar.tick()
        assert "30.0/30.0 s" in out.getvalue()
    assert "run r1: running\n" in out.getvalue()


def test_a_run_of_unknown_length_counts_its_seconds() -> None:
    out, clock = Terminal(), Clock()
    with RunCountdown(None, file=out, clock=clock) as bar:
        bar.start()
        clock.now += 7.25
        bar.tick()
    assert "run: 7.2 s" in out.getvalue()


def test_no_terminal_no_bar_but_the_messages() -> None:
    out, clock = io.StringIO(), Clock()
    with RunCountdown(30.0, file=out, clock=clock) as bar:
        assert not bar.shown
        bar.start()
        clock.now += 5
        bar.tick()
        bar.write("run r1: running")
    assert out.getvalue() == "run r1: running\n"


def test_quiet_draws_and_says_nothing_even_on_a_terminal() -> None:
    out, clock = Terminal(), Clock()
    with RunCountdown(30.0, quiet=True, file=out, clock=clock) as bar:
        bar.start()
        clock.now += 5
        bar.tick()
        bar.write("run r1: running")
    assert out.getvalue() == ""
